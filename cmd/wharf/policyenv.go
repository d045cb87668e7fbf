package main

import (
	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/plugin"
)

// Policy compiles the managed layers and the --policy layers on first use.
func (a *app) Policy() (*policy.Engine, error) { return a.h.Policy() }

// warnf prints a warning to stderr (also under --json: stdout stays JSON).
func (a *app) warnf(format string, args ...any) { a.io().warnf(format, args...) }

// knownMarketSource returns a known marketplace's source, for policy
// requests; nil when the marketplace is not known.
func knownMarketSource(h *home.Home, name string) *plugin.MarketplaceSource {
	mgr, err := h.Marketplaces()
	if err != nil {
		return nil
	}
	k, err := mgr.Get(name)
	if err != nil {
		return nil
	}
	return &k.Source
}
