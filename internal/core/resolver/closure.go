package resolver

import (
	"fmt"

	"github.com/wharfhq/wharf/plugin"
)

// Role says why a plugin is in a Plan.
type Role int

const (
	// RoleRoot: the plugin asked for. It is always (re)installed, even when
	// already installed, so that a reinstall does something.
	RoleRoot Role = iota + 1
	// RoleDependency: not installed yet and needed by the root; the installer
	// marks it auto.
	RoleDependency
	// RoleInstalled: already installed; the installer leaves it alone. Its own
	// dependencies are still checked (see Closure).
	RoleInstalled
)

func (r Role) String() string {
	switch r {
	case RoleRoot:
		return "root"
	case RoleDependency:
		return "dependency"
	case RoleInstalled:
		return "installed"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// MarshalText makes Role print as its name in JSON.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Step is one plugin of a Plan.
type Step struct {
	ID   plugin.ID `json:"id"`
	Role Role      `json:"role"`
	// RequiredBy is the plugin whose dependency first brought this one into
	// the plan; zero for the root.
	RequiredBy plugin.ID `json:"requiredBy,omitzero"`
}

// Plan is the dependency closure of one plugin.
type Plan struct {
	// Steps in install order: every plugin after all of its dependencies
	// (DFS post-order, in the order dependencies are declared); the root is
	// last.
	Steps []Step `json:"steps"`
	// Warnings for the user, each at most once per plan (e.g. that version
	// ranges were ignored).
	Warnings []string `json:"warnings,omitempty"`
}

// ToInstall returns the steps that the installer must act on (the root and
// the dependencies not installed yet), in install order.
func (p *Plan) ToInstall() []Step {
	out := make([]Step, 0, len(p.Steps))
	for _, s := range p.Steps {
		if s.Role != RoleInstalled {
			out = append(out, s)
		}
	}
	return out
}

// Closure returns the install plan for root: root and everything it depends
// on, transitively, dependencies first.
//
// Rules:
//   - root is always in the plan with RoleRoot, even when installed;
//   - an installed dependency is in the plan with RoleInstalled and is not
//     reinstalled, but its dependencies are still walked and checked: a
//     dependency of it may have been uninstalled since (uninstall warns but
//     does not refuse), and a cycle or a refused cross-marketplace edge
//     through it would leave root demoted at load. An installed plugin the
//     Catalog does not know is taken as present, with no dependencies;
//   - a cycle is detected with the current DFS path (a plugin reached again
//     while it is still on the path), never with a visited set, so a diamond
//     (A→B→D, A→C→D) is fine; the error carries the chain;
//   - a dependency in another marketplace must pass the cross-marketplace
//     rule (see CrossMarketplaceError), checked on every edge, including
//     edges to plugins already in the plan;
//   - version ranges are ignored, with one warning per plan.
//
// The first violation found, in declaration order, is returned as a
// *plugin.Error (Layer dependency, Type dependency-unsatisfied) wrapping a
// *CycleError, *MissingError or *CrossMarketplaceError. If root itself is
// not listed, the error has Layer intent and Type not-found and wraps a
// *MissingError with a zero RequiredBy.
//
// Closure is iterative (no recursion depth limit) and runs in time linear in
// the plugins and edges it visits.
func (r *Resolver) Closure(root plugin.ID) (*Plan, error) {
	rootNode, ok := r.cat.Lookup(root)
	if !ok {
		if !r.IsInstalled(root) {
			me := &MissingError{Dep: root, MarketplaceKnown: r.cat.KnownMarketplace(root.Source)}
			return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound,
				Object: root.String(), Err: me, Hint: me.Hint()}
		}
		// Installed but no longer listed: reinstall it from what is installed,
		// with no dependencies known.
		return &Plan{Steps: []Step{{ID: root, Role: RoleRoot}}}, nil
	}

	type frame struct {
		idx  int32
		mkt  uint32 // marketplace index in tab
		deps []plugin.Dependency
		next int
	}
	var (
		tab      = newIDTable(64) // every plugin met, interned
		state    []uint8          // by index
		pathPos  []int32          // by index: position on path while onPath
		reqBy    []int32          // by index: who brought it in; -1 for root
		path     []frame
		order    []int32 // post-order; Steps are built once at the end
		roles    []Role  // by position in order
		cross    crossCache
		plan     = &Plan{}
		ranges   int
		firstRng string
	)
	rootIdx, _ := tab.intern(root)
	rootMkt, _ := tab.market(root.Source, false)
	state = append(state, onPath)
	pathPos = append(pathPos, 0)
	reqBy = append(reqBy, -1)
	path = append(path, frame{idx: rootIdx, mkt: rootMkt, deps: rootNode.Dependencies})

	emit := func(i int32, role Role) {
		order = append(grow2(order), i)
		roles = append(grow2(roles), role)
	}

	for len(path) > 0 {
		top := &path[len(path)-1]
		if top.next == len(top.deps) {
			state[top.idx] = done
			role := RoleDependency
			switch {
			case len(path) == 1:
				role = RoleRoot
			case r.IsInstalled(tab.ids[top.idx]):
				role = RoleInstalled
			}
			emit(top.idx, role)
			path = path[:len(path)-1]
			continue
		}
		fromIdx, fromMkt := top.idx, top.mkt
		d := &top.deps[top.next]
		top.next++
		from := tab.ids[fromIdx]
		to := d.Resolve(from.Source)
		toMkt := fromMkt
		if d.Marketplace != "" && d.Marketplace != from.Source {
			toMkt, _ = tab.market(d.Marketplace, true)
		}
		if d.Version != "" {
			if ranges == 0 {
				firstRng = fmt.Sprintf("%s → %s %q", from, to, d.Version)
			}
			ranges++
		}
		if toMkt != fromMkt {
			if err := cross.check(r, fromMkt, toMkt, tab.mkts, from, to); err != nil {
				return nil, depError(root, err)
			}
		}
		i, added := tab.internIn(to, toMkt)
		if !added {
			if state[i] == onPath {
				chain := make([]plugin.ID, 0, len(path)-int(pathPos[i])+1)
				for _, f := range path[pathPos[i]:] {
					chain = append(chain, tab.ids[f.idx])
				}
				chain = append(chain, to)
				return nil, depError(root, &CycleError{Chain: chain})
			}
			continue // done: a diamond, or a plugin already planned
		}
		reqBy = append(grow2(reqBy), fromIdx)
		node, ok := r.cat.Lookup(to)
		if !ok {
			if r.IsInstalled(to) {
				state = append(grow2(state), done)
				pathPos = append(grow2(pathPos), -1)
				emit(i, RoleInstalled)
				continue
			}
			p := make([]plugin.ID, len(path))
			for k, f := range path {
				p[k] = tab.ids[f.idx]
			}
			return nil, depError(root, &MissingError{Dep: to, RequiredBy: from, Path: p,
				MarketplaceKnown: r.cat.KnownMarketplace(to.Source)})
		}
		state = append(grow2(state), onPath)
		pathPos = append(grow2(pathPos), int32(len(path)))
		path = append(grow2(path), frame{idx: i, mkt: toMkt, deps: node.Dependencies})
	}

	plan.Steps = make([]Step, len(order))
	for k, i := range order {
		plan.Steps[k] = Step{ID: tab.ids[i], Role: roles[k]}
		if reqBy[i] >= 0 {
			plan.Steps[k].RequiredBy = tab.ids[reqBy[i]]
		}
	}
	plan.Warnings = rangeWarning(ranges, firstRng)
	return plan, nil
}

// rangeWarning is the one warning of a plan about version ranges, if any.
func rangeWarning(ranges int, first string) []string {
	if ranges == 0 {
		return nil
	}
	more := ""
	if ranges > 1 {
		more = fmt.Sprintf(" and %d more", ranges-1)
	}
	return []string{fmt.Sprintf(
		"dependency version ranges are ignored; wharf only checks that a dependency is installed and enabled (%s%s)", first, more)}
}

// DFS state of a plugin that Closure has met.
const (
	onPath uint8 = iota + 1 // on the current DFS path: meeting it again is a cycle
	done                    // planned with all its dependencies
)

// crossCache remembers the marketplace part of the cross-marketplace rule per
// pair of marketplace indexes, so the Catalog is asked once per pair and not
// once per edge. The CrossPolicy is still asked per edge: it judges plugins.
type crossCache struct {
	verdict map[[2]uint32]CrossReason
}

// reason returns the marketplaces' verdict on an edge from marketplace
// fromMkt to toMkt, indexes into names; 0 means they allow it.
func (c *crossCache) reason(r *Resolver, fromMkt, toMkt uint32, names []string) CrossReason {
	if v, ok := c.verdict[[2]uint32{fromMkt, toMkt}]; ok {
		return v
	}
	var v CrossReason
	switch {
	case !r.cat.AllowsCross(names[fromMkt], names[toMkt]):
		v = CrossNotAllowed
	case !r.cat.KnownMarketplace(names[toMkt]):
		v = CrossUnknownMarketplace
	}
	if c.verdict == nil {
		c.verdict = map[[2]uint32]CrossReason{}
	}
	c.verdict[[2]uint32{fromMkt, toMkt}] = v
	return v
}

func (c *crossCache) check(r *Resolver, fromMkt, toMkt uint32, names []string, from, to plugin.ID) *CrossMarketplaceError {
	return r.crossError(c.reason(r, fromMkt, toMkt, names), from, to)
}

// crossError turns the marketplaces' verdict v on from → to into the error,
// asking the CrossPolicy when they allow it; nil if the edge is allowed.
func (r *Resolver) crossError(v CrossReason, from, to plugin.ID) *CrossMarketplaceError {
	if v != 0 {
		return &CrossMarketplaceError{From: from, To: to, Reason: v}
	}
	if r.policy != nil {
		if err := r.policy.AllowCross(from, to); err != nil {
			return &CrossMarketplaceError{From: from, To: to, Reason: CrossPolicyRefused, Err: err}
		}
	}
	return nil
}
