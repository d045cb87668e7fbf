package install

import (
	"context"
	"errors"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/resolver"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// Removed is what Uninstall or Prune did.
type Removed struct {
	Removed []plugin.ID `json:"removed"`
	// Dependents lost a dependency: they stay installed and are demoted at
	// the next load until it comes back.
	Dependents []plugin.ID `json:"dependents,omitempty"`
	Warnings   []string    `json:"warnings,omitempty"`
	// Settings is the settings file whose enabledPlugins entries for the
	// removed plugins were deleted, when there were any.
	Settings string `json:"settingsFile,omitempty"`
	// DryRun marks a plan (PlanUninstall, PlanPrune): nothing was removed.
	DryRun bool `json:"dryRun,omitempty"`
}

// Uninstall removes id from the registry. It warns with the plugins that
// depend on it (it does not refuse: an uninstall is reversible). With prune,
// auto-installed dependencies nothing needs any more go too. The removed
// plugins' enabledPlugins entries go from the user settings, as Claude
// Code's uninstall deletes them from the scope it uninstalls from (entries
// in project and local settings, files a team may share, stay). The
// version directory stays until garbage collection, so running sessions
// keep it.
func (in *Installer) Uninstall(ctx context.Context, id plugin.ID, prune bool) (*Removed, error) {
	if in.o.Policy != nil {
		if err := in.o.Policy.AllowUninstall(ctx, id); err != nil {
			return nil, err
		}
	}
	out := &Removed{}
	err := in.o.Cache.WithLock(ctx, func(ctx context.Context) error {
		g, _, err := in.graph()
		if err != nil {
			return err
		}
		if _, ok := g.installed[id]; !ok {
			if _, err := in.o.Cache.Get(id); errors.Is(err, cache.ErrRecordCorrupt) {
				// Its record is damaged: removing it is one way out.
				if err := in.o.Cache.Delete(ctx, id); err != nil {
					return err
				}
				out.Removed = append(out.Removed, id)
				in.forgetEnabled(out)
				return nil
			}
			return plugin.Errorf(plugin.LayerIntent, plugin.TypeNotFound, id.String(), "see what is installed: wharf list",
				"%s is not installed", id)
		}
		deps := in.resolver(g).ReverseDependents(id)
		out.Dependents = deps.Transitive
		for _, d := range deps.Direct {
			out.Warnings = append(out.Warnings, d.String()+" depends on "+id.String()+" and will be demoted until it is installed again")
		}
		if err := in.o.Cache.Delete(ctx, id); err != nil {
			return err
		}
		out.Removed = append(out.Removed, id)
		if prune {
			pr, err := in.prune(ctx)
			if err != nil {
				return err
			}
			out.Removed = append(out.Removed, pr...)
		}
		in.forgetEnabled(out)
		return nil
	})
	if err != nil {
		return nil, err
	}
	in.collect(ctx)
	return out, nil
}

// Prune removes auto-installed plugins that no manually installed plugin
// still reaches.
func (in *Installer) Prune(ctx context.Context) (*Removed, error) {
	out := &Removed{}
	err := in.o.Cache.WithLock(ctx, func(ctx context.Context) error {
		pr, err := in.prune(ctx)
		out.Removed = pr
		in.forgetEnabled(out)
		return err
	})
	if err != nil {
		return nil, err
	}
	in.collect(ctx)
	return out, nil
}

// forgetEnabled deletes the user settings' enabledPlugins entries of the
// plugins out removed; it runs under the lock, after the registry writes,
// so a process killed between the two leaves entries for plugins that are
// gone, which list shows as enabled but not installed, as before. A
// settings file it cannot rewrite is a warning: the plugins are removed.
func (in *Installer) forgetEnabled(out *Removed) {
	if len(out.Removed) == 0 {
		return
	}
	file, err := settings.ForgetEnabled(in.o.Settings, settings.ScopeUser, out.Removed)
	if err != nil {
		out.Warnings = append(out.Warnings, "the removed plugins stay in enabledPlugins: "+err.Error())
		return
	}
	out.Settings = file
}

// prune runs under the lock.
func (in *Installer) prune(ctx context.Context) ([]plugin.ID, error) {
	g, _, err := in.graph()
	if err != nil {
		return nil, err
	}
	var removed []plugin.ID
	for _, id := range in.resolver(g).Prunable() {
		if in.o.Policy != nil {
			if err := in.o.Policy.AllowUninstall(ctx, id); err != nil {
				continue // forced on by policy: it stays
			}
		}
		if err := in.o.Cache.Delete(ctx, id); err != nil {
			return removed, err
		}
		removed = append(removed, id)
	}
	return removed, nil
}

var _ resolver.Catalog = (*graph)(nil)
