package web

import "time"

// Page names of the marketplace pages.
const (
	PageMarketplaces      = "marketplaces"
	PageMarketplaceRemove = "marketplaceremove"
)

// MarketplaceRow is one marketplace the server knows.
type MarketplaceRow struct {
	Name string
	// Source is the source as an admin would type it (owner/repo, a URL,
	// a directory).
	Source      string
	Plugins     int
	LastUpdated time.Time
	// Error says why the marketplace's catalog could not be read.
	Error string
}

// MarketplaceForm is the add form, as submitted.
type MarketplaceForm struct {
	Name   string
	Source string
}

// MarketplacesView is the admin's list of marketplaces with the add form.
type MarketplacesView struct {
	Layout
	Marketplaces []MarketplaceRow
	Form         MarketplaceForm
	// FormError is why the add form was refused; FormField names the
	// field at fault ("name" or "source"), if one is.
	FormError string
	FormField string
}

// MarketplaceRemoveView asks to confirm a marketplace's removal.
type MarketplaceRemoveView struct {
	Layout
	Marketplace MarketplaceRow
}
