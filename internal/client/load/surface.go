package load

import (
	"context"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// SurfaceOf is the policy surface of a component kind (commands, skills,
// agents, hooks, mcp-servers); ok is false for kinds no surface policy
// covers.
func SurfaceOf(k plugin.ComponentKind) (s settings.Surface, ok bool) {
	s, _, ok = surfaceIndex(k)
	return s, ok
}

func surfaceIndex(k plugin.ComponentKind) (settings.Surface, int, bool) {
	switch k {
	case plugin.KindCommand:
		return settings.SurfaceCommands, 0, true
	case plugin.KindSkill:
		return settings.SurfaceSkills, 1, true
	case plugin.KindAgent:
		return settings.SurfaceAgents, 2, true
	case plugin.KindHook:
		return settings.SurfaceHooks, 3, true
	case plugin.KindMCPServer:
		return settings.SurfaceMCPServers, 4, true
	}
	return "", 0, false
}

// Surfaces is the surface filter of one source of components: it asks
// policy, once per surface, whether the components of that surface may
// load (load_component) and, for hooks, run (run_hook). Not safe for
// concurrent use; one per plugin.
type Surfaces struct {
	d     *Decider
	from  string
	id    plugin.ID
	mkt   policy.Marketplace
	asked [5]bool
	errs  [5]error
}

// Surfaces returns the surface filter of the components from (a source
// kind: policy.FromPlugin with the plugin id and its marketplace's source,
// nil when unknown; else FromUser, FromProject, FromManaged with a zero
// id). With the source, policy decides the plugin's forced state (and so
// whether its hooks count as managed) for the marketplace it comes from,
// not for a marketplace that only shares its name.
func (d *Decider) Surfaces(from string, id plugin.ID, src *plugin.MarketplaceSource) *Surfaces {
	s := &Surfaces{d: d, from: from, id: id}
	if src != nil {
		s.mkt = policy.Marketplace{Name: id.Source, Source: src}
	}
	return s
}

// Allow is nil when components of kind may load, else the *plugin.Error
// (policy layer) that refuses them. Kinds no surface policy covers are
// allowed.
func (s *Surfaces) Allow(ctx context.Context, kind plugin.ComponentKind) error {
	surf, i, ok := surfaceIndex(kind)
	if !ok {
		return nil
	}
	if s.asked[i] {
		return s.errs[i]
	}
	err := s.d.Check(ctx, policy.Request{Action: policy.ActionLoadComponent, Surface: surf, From: s.from, Plugin: s.id, Marketplace: s.mkt})
	if err == nil && surf == settings.SurfaceHooks {
		err = s.d.Check(ctx, policy.Request{Action: policy.ActionRunHook, Surface: settings.SurfaceHooks, From: s.from, Plugin: s.id, Marketplace: s.mkt})
	}
	s.asked[i], s.errs[i] = true, err
	return err
}
