package install

import (
	"context"

	"github.com/wharfhq/wharf/internal/core/resolver"
	"github.com/wharfhq/wharf/plugin"
)

// PlanInstall is what Install(req) would do before fetching anything: the
// dependency closure, refused as Install refuses it when policy denies a
// plugin of it. It changes nothing and fetches nothing.
func (in *Installer) PlanInstall(ctx context.Context, req Request) (*resolver.Plan, error) {
	g, _, err := in.graph()
	if err != nil {
		return nil, err
	}
	plan, err := in.resolver(g).Closure(req.ID)
	if err != nil {
		return nil, err
	}
	if err := in.checkPolicy(ctx, g, plan.Steps, nil, nil); err != nil {
		return nil, err
	}
	return plan, nil
}

// PlanUninstall is what Uninstall(id, prune) would do, refused as Uninstall
// refuses it. It changes nothing.
func (in *Installer) PlanUninstall(ctx context.Context, id plugin.ID, prune bool) (*Removed, error) {
	if in.o.Policy != nil {
		if err := in.o.Policy.AllowUninstall(ctx, id); err != nil {
			return nil, err
		}
	}
	g, _, err := in.graph()
	if err != nil {
		return nil, err
	}
	if _, ok := g.installed[id]; !ok {
		return nil, plugin.Errorf(plugin.LayerIntent, plugin.TypeNotFound, id.String(), "see what is installed: wharf list",
			"%s is not installed", id)
	}
	out := &Removed{Removed: []plugin.ID{id}}
	deps := in.resolver(g).ReverseDependents(id)
	out.Dependents = deps.Transitive
	for _, d := range deps.Direct {
		out.Warnings = append(out.Warnings, d.String()+" depends on "+id.String()+" and will be demoted until it is installed again")
	}
	if prune {
		delete(g.installed, id) // this graph is this plan's own
		out.Removed = append(out.Removed, in.prunable(ctx, g)...)
	}
	return out, nil
}

// PlanPrune is what Prune would do. It changes nothing.
func (in *Installer) PlanPrune(ctx context.Context) (*Removed, error) {
	g, _, err := in.graph()
	if err != nil {
		return nil, err
	}
	return &Removed{Removed: in.prunable(ctx, g)}, nil
}

// prunable are the plugins prune would remove from g: auto-installed ones
// nothing manually installed reaches, but those policy keeps.
func (in *Installer) prunable(ctx context.Context, g *graph) []plugin.ID {
	out := []plugin.ID{}
	for _, id := range in.resolver(g).Prunable() {
		if in.o.Policy != nil && in.o.Policy.AllowUninstall(ctx, id) != nil {
			continue // forced on by policy: it stays
		}
		out = append(out, id)
	}
	return out
}
