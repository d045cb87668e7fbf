package api

import "github.com/wharfhq/wharf/internal/server/catalog"

// MarketplaceCatalog is the server's Catalog over a marketplace.Manager
// (catalog.Marketplaces: one parsed snapshot of every marketplace, with
// its searches and plugin details kept beside it).
type MarketplaceCatalog = catalog.Marketplaces

// NewMarketplaceCatalog returns a Catalog over a marketplace.Manager.
var NewMarketplaceCatalog = catalog.New
