package main

import (
	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
)

// policySources are the managed directories and the --policy paths.
func (a *app) policySources() policy.Sources { return a.h.PolicySources() }

// Policy compiles the managed layers and the --policy layers on first use.
func (a *app) Policy() (*policy.Engine, error) { return a.h.Policy() }

// warnf prints a warning to stderr (also under --json: stdout stays JSON).
func (a *app) warnf(format string, args ...any) { a.io().warnf(format, args...) }

// knownMarketSource returns the settings form of a known marketplace's
// source, for policy requests; nil when the marketplace is not known.
func (a *app) knownMarketSource(name string) *settings.MarketplaceSource {
	mgr, err := a.Marketplaces()
	if err != nil {
		return nil
	}
	k, err := mgr.Get(name)
	if err != nil {
		return nil
	}
	return home.KnownSource(k.Source)
}

// settingsSource is the settings form of a marketplace source, which
// policy matches against (see marketplace.Source.Settings).
func settingsSource(src marketplace.Source) (*settings.MarketplaceSource, error) {
	s, err := src.Settings()
	if err != nil {
		return nil, err
	}
	return &s, nil
}
