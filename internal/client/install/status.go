package install

import (
	"context"

	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// StatusOptions tune List.
type StatusOptions struct {
	// Rehash re-hashes every plugin's content (the full path) instead of the
	// cheap stat fingerprint check (the cache-only path).
	Rehash bool
	// Revocations are the revocations in force (those the signed policy
	// bundle carries): a plugin one matches is failed (revoked). Default:
	// none.
	Revocations policy.Revocations
}

// List returns every installed plugin with its status for a session started
// now: active, demoted (with the dependency chain), failed (with the typed
// error) or disabled. The rows come from the load pass the agent runtime
// uses (package load), so `wharf list` and `wharf agent status` agree on
// every plugin's state and say the same thing about it; List adds whether
// the plugin's marketplace still lists it. Nothing is written: a demoted
// plugin stays enabled.
func (in *Installer) List(ctx context.Context, opts StatusOptions) ([]load.Row, error) {
	g, _, err := in.graph()
	if err != nil {
		return nil, err
	}
	snap, err := settings.Load(in.o.Settings, in.o.FlagSettings)
	if err != nil {
		return nil, err
	}
	// A plugin whose registry record is damaged is failed, with the way
	// out; every other plugin is listed as usual.
	recs, broken, err := in.o.Cache.Scan()
	if err != nil {
		return nil, err
	}
	mode := load.Fast
	if opts.Rehash {
		mode = load.Full
	}
	var dec *load.Decider
	if in.o.Policy != nil {
		dec = load.NewDecider(in.o.Policy)
	}
	lo := load.Options{
		Decider:           dec,
		Revocations:       opts.Revocations,
		Mode:              mode,
		MarketplaceSource: func(mkt string) *plugin.MarketplaceSource { return marketSourceOf(g, mkt) },
		Entries:           func(id plugin.ID) *plugin.Entry { e, _ := g.entry(id); return e },
		Contents:          in.contents,
	}
	rows, err := load.List(ctx, lo, load.Input{Records: recs, Broken: broken, Enabled: snap.Merged.EnabledPlugins, Docs: snap.Docs})
	if err != nil {
		return nil, err
	}
	for i := range rows {
		if rows[i].Type(load.TypeNotInstalled) {
			continue // never installed from its marketplace here
		}
		if _, err := g.cat.Lookup(rows[i].ID); err != nil && g.KnownMarketplace(rows[i].ID.Source) {
			rows[i].Delisted = true
		}
	}
	return rows, nil
}

func marketSourceOf(g *graph, mkt string) *plugin.MarketplaceSource {
	if k, ok := g.known(mkt); ok {
		return marketSource(k)
	}
	return nil
}
