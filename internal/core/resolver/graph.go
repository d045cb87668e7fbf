package resolver

import (
	"math/bits"
	"strings"

	"github.com/wharfhq/wharf/plugin"
)

// graph is the dependency graph of the installed plugins with IDs interned to
// int32: nodes [0, nInstalled) are the installed plugins in the order given to
// New; nodes after that are dependency targets that are not installed (they
// have no edges of their own). Edges are kept in compressed rows (CSR), both
// forward (dependent → dependency) and reverse. It is built once per Resolver
// and read-only after that. Nodes are named by two ID tables.
type graph struct {
	r          *Resolver // node i < nInstalled is the Resolver's installed plugin i
	nInstalled int
	fwdStart   []int32 // edges of i: fwd[fwdStart[i]:fwdStart[i+1]]
	fwd        []int32
	revStart   []int32
	rev        []int32

	installed *idTable // the Resolver's, shared and read-only: nodes [0, nInstalled)
	extra     *idTable // targets that are not installed: nodes nInstalled + i
}

// graph returns the installed graph, building it on first use.
func (r *Resolver) graph() *graph {
	r.once.Do(func() { r.g = r.buildGraph() })
	return r.g
}

func (r *Resolver) buildGraph() *graph {
	n := len(r.flags)
	// The Resolver's table already numbers the installed plugins 0..n-1 in
	// list order; it is only read here (Closure may read it concurrently).
	// Dependency targets that are not installed go to a table of their own.
	g := &graph{r: r, installed: r.installed, extra: newIDTable(16), nInstalled: n}
	g.fwdStart = make([]int32, n+1)
	g.fwd = make([]int32, 0, 3*n)
	for i := 0; i < n; i++ {
		from := g.installed.ids[i]
		node, _ := r.cat.Lookup(from) // unknown manifest: no known dependencies
		for _, d := range node.Dependencies {
			to := d.Resolve(from.Source)
			j, ok := g.installed.find(to)
			if !ok {
				j, _ = g.extra.intern(to)
				j += int32(n)
			}
			g.fwd = append(g.fwd, j)
		}
		g.fwdStart[i+1] = int32(len(g.fwd))
	}
	g.buildReverse()
	return g
}

// buildReverse fills the reverse edges of the graph.
func (g *graph) buildReverse() {
	g.revStart, g.rev = reverseRows(g.len(), g.nInstalled, g.fwdStart, g.fwd)
}

// reverseRows returns the reverse of the compressed rows (start, edges) of
// nodes [0, from) over nodes [0, total), by counting sort: the dependents of
// j are rev[revStart[j]:revStart[j+1]], in increasing order. A duplicate
// edge stays duplicate, which is harmless for every traversal.
func reverseRows(total, from int, start, edges []int32) (revStart, rev []int32) {
	revStart = make([]int32, total+1)
	for _, j := range edges[:start[from]] {
		revStart[j+1]++
	}
	for j := 0; j < total; j++ {
		revStart[j+1] += revStart[j]
	}
	rev = make([]int32, start[from])
	// Each row is filled from its end, walking the nodes from the last, so
	// rows come out in increasing order; revStart[j+1], the end of row j,
	// is its cursor, and once done it holds the start of row j.
	for i := from - 1; i >= 0; i-- {
		for _, j := range edges[start[i]:start[i+1]] {
			revStart[j+1]--
			rev[revStart[j+1]] = int32(i)
		}
	}
	copy(revStart, revStart[1:])
	revStart[total] = int32(len(rev))
	return revStart, rev
}

func (g *graph) deps(i int32) []int32 {
	if int(i) >= g.nInstalled {
		return nil
	}
	return g.fwd[g.fwdStart[i]:g.fwdStart[i+1]]
}

func (g *graph) dependents(i int32) []int32 { return g.rev[g.revStart[i]:g.revStart[i+1]] }

func (g *graph) len() int {
	return g.nInstalled + g.extra.len()
}

func (g *graph) id(i int32) plugin.ID {
	if int(i) < g.nInstalled {
		return g.r.installedID(int(i))
	}
	return g.extra.ids[int(i)-g.nInstalled]
}

func (g *graph) lookup(id plugin.ID) (int32, bool) {
	if i, ok := g.installed.find(id); ok {
		return i, true
	}
	j, ok := g.extra.find(id)
	return j + int32(g.nInstalled), ok
}

// Status of an installed plugin after demotion.
type Status int

const (
	// StatusActive: enabled, and every dependency is active.
	StatusActive Status = iota + 1
	// StatusDemoted: enabled, but a dependency is not active. It stays
	// enabled in settings; it just does not run this session.
	StatusDemoted
	// StatusDisabled: not enabled.
	StatusDisabled
	// StatusNotInstalled: not in the installed set.
	StatusNotInstalled
)

func (s Status) String() string {
	switch s {
	case StatusActive:
		return "active"
	case StatusDemoted:
		return "demoted"
	case StatusDisabled:
		return "disabled"
	case StatusNotInstalled:
		return "not-installed"
	}
	return "unknown"
}

// Activation is the result of Demote: which installed plugins are active this
// session and, for each demoted one, why. It is immutable and safe for
// concurrent reads.
type Activation struct {
	g        *graph
	enabled  []bool
	inactive []bool
	cause    []int32 // for a demoted plugin: the dependency that made it inactive
}

// Demote computes which installed plugins are active: a plugin is active only
// if it is enabled (enabled[id] is true) and all its dependencies are active;
// a dependency that is not installed is never active. It is the greatest
// fixed point of that rule, reached with a worklist over reverse edges: every
// inactive plugin is queued once and demotes its still-active dependents, so
// the work is linear in plugins + edges. A cycle of enabled installed plugins
// with nothing else wrong stays active (Closure refuses to install cycles).
//
// Demote is per session: it writes nothing, and a demoted plugin stays enabled
// in the user's settings. Entries of enabled that are not installed are
// ignored. Dependency edges are taken from the Catalog as for Closure;
// cross-marketplace rules are enforced at install by Closure, not here.
func (r *Resolver) Demote(enabled map[plugin.ID]bool) *Activation {
	a := r.newActivation()
	for i := range a.g.nInstalled {
		a.enabled[i] = enabled[a.g.r.installedID(i)]
	}
	a.demote()
	return a
}

// DemoteInstalled is Demote with the enabled set taken from the Enabled
// field of each installed entry given to New. A caller that already walks
// its installed plugins to decide which are enabled (settings, policy,
// trust) should set the field and call this: Demote looks every installed
// plugin up in its map, and on a large set those probes, each to a random
// place in memory, cost more than the demotion itself.
func (r *Resolver) DemoteInstalled() *Activation {
	a := r.newActivation()
	for i := range a.g.nInstalled {
		a.enabled[i] = a.g.r.flags[i]&instEnabled != 0
	}
	a.demote()
	return a
}

func (r *Resolver) newActivation() *Activation {
	g := r.graph()
	total := g.len()
	return &Activation{
		g:        g,
		enabled:  make([]bool, g.nInstalled),
		inactive: make([]bool, total),
		cause:    make([]int32, total),
	}
}

// demote runs the worklist from a.enabled. The worklist is a bitset of
// inactive plugins whose dependents are still to be demoted, drained from
// the highest number down: the rows of reverse edges are then read in
// memory order, where a FIFO queue jumps around them (on 100k plugins those
// jumps were most of the time). When the numbering puts a plugin before its
// dependencies, a plugin demoted by a dependency has a lower number and is
// drained in the same sweep; one demoted by a lower-numbered dependency waits for
// the next sweep. After maxSweeps sweeps what is left is drained in FIFO
// order, so the work stays linear in plugins + edges whatever the
// numbering. Each plugin is demoted at most once, by a dependency already
// inactive, so every chain of causes ends in a disabled or not-installed
// plugin.
func (a *Activation) demote() {
	const maxSweeps = 4
	g := a.g
	total := g.len()
	pending := make([]uint64, (total+63)/64)
	for i := 0; i < total; i++ {
		a.cause[i] = -1
		if i < g.nInstalled && a.enabled[i] {
			continue
		}
		a.inactive[i] = true
		pending[i/64] |= 1 << (i % 64)
	}
	for sweep := 0; sweep < maxSweeps; sweep++ {
		again := false
		for w := len(pending) - 1; w >= 0; w-- {
			for pending[w] != 0 {
				b := 63 - bits.LeadingZeros64(pending[w])
				pending[w] &^= 1 << b
				j := int32(w*64 + b)
				for _, i := range g.dependents(j) {
					if !a.inactive[i] {
						a.inactive[i] = true
						a.cause[i] = j
						pending[i/64] |= 1 << (i % 64)
						again = again || i > j
					}
				}
			}
		}
		if !again {
			return
		}
	}
	var queue []int32
	for w, word := range pending {
		for ; word != 0; word &= word - 1 {
			queue = append(queue, int32(w*64+bits.TrailingZeros64(word)))
		}
	}
	for head := 0; head < len(queue); head++ {
		j := queue[head]
		for _, i := range g.dependents(j) {
			if !a.inactive[i] {
				a.inactive[i] = true
				a.cause[i] = j
				queue = append(queue, i)
			}
		}
	}
}

// Status returns the status of id.
func (a *Activation) Status(id plugin.ID) Status {
	i, ok := a.g.lookup(id)
	switch {
	case !ok || int(i) >= a.g.nInstalled:
		return StatusNotInstalled
	case !a.enabled[i]:
		return StatusDisabled
	case a.inactive[i]:
		return StatusDemoted
	}
	return StatusActive
}

// Active returns the active plugins in installed order.
func (a *Activation) Active() []plugin.ID {
	var out []plugin.ID
	for i := 0; i < a.g.nInstalled; i++ {
		if !a.inactive[i] {
			out = append(out, a.g.r.installedID(i))
		}
	}
	return out
}

// Demoted returns the demoted plugins (enabled but not active) in installed
// order. Use Why for the reason of each.
func (a *Activation) Demoted() []plugin.ID {
	var out []plugin.ID
	for i := 0; i < a.g.nInstalled; i++ {
		if a.enabled[i] && a.inactive[i] {
			out = append(out, a.g.r.installedID(i))
		}
	}
	return out
}

// Reason explains a demotion: Chain[0] needs Chain[1], which needs Chain[2],
// and so on; the last plugin of the chain is disabled or not installed (End).
type Reason struct {
	Chain []plugin.ID
	End   Status // StatusDisabled or StatusNotInstalled
}

// String renders the reason as "a@m needs b@m; b@m needs c@m; c@m is disabled".
func (r Reason) String() string {
	var b strings.Builder
	for k := 0; k+1 < len(r.Chain); k++ {
		b.WriteString(r.Chain[k].String() + " needs " + r.Chain[k+1].String() + "; ")
	}
	if len(r.Chain) > 0 {
		b.WriteString(r.Chain[len(r.Chain)-1].String())
		if r.End == StatusNotInstalled {
			b.WriteString(" is not installed")
		} else {
			b.WriteString(" is disabled")
		}
	}
	return b.String()
}

// Why returns the reason id is demoted, and false if it is not demoted. The
// worklist runs breadth first from the plugins that are disabled or not
// installed, so the chain is a shortest one to such a plugin. It is computed
// on demand (its length is the depth of the demotion), so
// Demote stays linear even when every plugin's chain is long.
func (a *Activation) Why(id plugin.ID) (Reason, bool) {
	i, ok := a.g.lookup(id)
	if !ok || int(i) >= a.g.nInstalled || !a.enabled[i] || !a.inactive[i] {
		return Reason{}, false
	}
	var r Reason
	// Causes point to plugins queued strictly earlier, so this ends.
	for {
		r.Chain = append(r.Chain, a.g.id(i))
		if a.cause[i] < 0 {
			break
		}
		i = a.cause[i]
	}
	r.End = StatusDisabled
	if int(i) >= a.g.nInstalled {
		r.End = StatusNotInstalled
	}
	return r, true
}

// Dependents lists who depends on a plugin among the installed ones.
type Dependents struct {
	// Direct: installed plugins that declare a dependency on it.
	Direct []plugin.ID
	// Transitive: installed plugins that reach it through a chain of
	// installed plugins (a superset of Direct, without the plugin itself). A
	// plugin that only reaches it through a plugin that is not installed
	// already lacks that dependency and is not listed.
	Transitive []plugin.ID
}

// ReverseDependents returns who would lose a dependency, directly or
// transitively, if id went away (e.g. before an uninstall, to warn). id need
// not be installed. Both lists are in installed order.
func (r *Resolver) ReverseDependents(id plugin.ID) Dependents {
	g := r.graph()
	var out Dependents
	start, ok := g.lookup(id)
	if !ok {
		return out
	}
	seen := make([]bool, g.len())
	seen[start] = true
	direct := make([]bool, g.len())
	for _, i := range g.dependents(start) {
		direct[i] = true
	}
	stack := []int32{start}
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, i := range g.dependents(j) {
			if !seen[i] {
				seen[i] = true
				stack = append(stack, i)
			}
		}
	}
	for i := 0; i < g.nInstalled; i++ {
		if int32(i) == start {
			continue
		}
		if direct[i] {
			out.Direct = append(out.Direct, r.installedID(i))
		}
		if seen[i] {
			out.Transitive = append(out.Transitive, r.installedID(i))
		}
	}
	return out
}

// Prunable returns the installed plugins marked auto that no manually
// installed plugin reaches through a chain of installed plugins, in installed
// order. A
// disabled manual plugin still counts: it needs its dependencies again as
// soon as it is enabled. Removing the result removes no dependency of
// anything that stays.
func (r *Resolver) Prunable() []plugin.ID {
	g := r.graph()
	reached := make([]bool, g.len())
	var stack []int32
	for i := range r.flags {
		if !r.auto(i) {
			reached[i] = true
			stack = append(stack, int32(i))
		}
	}
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, i := range g.deps(j) {
			if !reached[i] {
				reached[i] = true
				stack = append(stack, i)
			}
		}
	}
	var out []plugin.ID
	for i := range r.flags {
		if r.auto(i) && !reached[i] {
			out = append(out, r.installedID(i))
		}
	}
	return out
}
