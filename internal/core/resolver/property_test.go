package resolver

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/wharfhq/wharf/plugin"
)

// world is a random catalog plus installed and enabled sets, small enough
// for the naive reference implementations below.
type world struct {
	cat       *memCatalog
	policy    *refuse // may refuse edges into marketplace "o"
	ids       []plugin.ID
	installed []Installed
	enabled   map[plugin.ID]bool
}

var markets = []string{"m", "n", "o"}

// genWorld draws a world. With acyclic, a plugin only depends on plugins
// drawn after it (or on plugins nobody lists).
func genWorld(t *rapid.T, acyclic bool) *world {
	w := &world{cat: newCatalog(), enabled: map[plugin.ID]bool{}}
	w.cat.known["m"], w.cat.known["n"] = true, true
	w.cat.known["o"] = rapid.Bool().Draw(t, "o known")
	for _, a := range markets {
		for _, b := range markets {
			if a != b && rapid.IntRange(0, 3).Draw(t, "allow "+a+"→"+b) > 0 {
				w.cat.cross[[2]string{a, b}] = true
			}
		}
	}
	if rapid.Bool().Draw(t, "policy") {
		w.policy = &refuse{market: "o"}
	}
	n := rapid.IntRange(1, 12).Draw(t, "plugins")
	for i := 0; i < n; i++ {
		w.ids = append(w.ids, plugin.ID{Name: fmt.Sprintf("p%d", i), Source: rapid.SampledFrom(markets).Draw(t, "market")})
	}
	for i, id := range w.ids {
		lo := 0
		if acyclic {
			lo = i + 1
		}
		var node Node
		for k := rapid.IntRange(0, 3).Draw(t, "deps"); k > 0; k-- {
			j := rapid.IntRange(lo, n).Draw(t, "dep") // n: a plugin nobody lists
			var to plugin.ID
			if j == n {
				to = plugin.ID{Name: "ghost", Source: rapid.SampledFrom(markets).Draw(t, "ghost market")}
			} else {
				to = w.ids[j]
			}
			d := plugin.Dependency{Name: to.Name, Marketplace: to.Source}
			if to.Source == id.Source && rapid.Bool().Draw(t, "bare") {
				d.Marketplace = ""
			}
			if rapid.IntRange(0, 4).Draw(t, "ranged") == 0 {
				d.Version = "^1.0"
			}
			node.Dependencies = append(node.Dependencies, d)
		}
		if rapid.IntRange(0, 9).Draw(t, "listed") > 0 {
			w.cat.nodes[id] = node
		}
		if rapid.Bool().Draw(t, "installed") {
			w.installed = append(w.installed, Installed{ID: id, Auto: rapid.Bool().Draw(t, "auto")})
		}
		if rapid.IntRange(0, 3).Draw(t, "enabled") > 0 {
			w.enabled[id] = true
		}
	}
	return w
}

func (w *world) resolver() *Resolver {
	if w.policy == nil {
		return New(w.cat, w.installed, nil)
	}
	return New(w.cat, w.installed, w.policy)
}

func (w *world) isInstalled(id plugin.ID) bool {
	return slices.ContainsFunc(w.installed, func(in Installed) bool { return in.ID == id })
}

// deps are the resolved dependency targets of id; none if nobody lists it.
func (w *world) deps(id plugin.ID) []plugin.ID {
	var out []plugin.ID
	for _, d := range w.cat.nodes[id].Dependencies {
		out = append(out, d.Resolve(id.Source))
	}
	return out
}

// crossReason is the cross-marketplace rule written out plainly; 0 = allowed.
func (w *world) crossReason(from, to plugin.ID) CrossReason {
	switch {
	case from.Source == to.Source:
		return 0
	case !w.cat.cross[[2]string{from.Source, to.Source}]:
		return CrossNotAllowed
	case !w.cat.known[to.Source]:
		return CrossUnknownMarketplace
	case w.policy != nil && to.Source == w.policy.market:
		return CrossPolicyRefused
	}
	return 0
}

// reach returns every plugin reachable from the given ones, following listed
// dependencies, in no particular order.
func (w *world) reach(from ...plugin.ID) map[plugin.ID]bool {
	seen := map[plugin.ID]bool{}
	queue := slices.Clone(from)
	for _, id := range queue {
		seen[id] = true
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, d := range w.deps(id) {
			if !seen[d] {
				seen[d] = true
				queue = append(queue, d)
			}
		}
	}
	return seen
}

// reachInstalled is reach over the installed plugins only: a plugin that
// is not installed is reached but not expanded (it has no dependencies that
// are present).
func (w *world) reachInstalled(from ...plugin.ID) map[plugin.ID]bool {
	seen := map[plugin.ID]bool{}
	queue := slices.Clone(from)
	for _, id := range queue {
		seen[id] = true
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if !w.isInstalled(id) {
			continue
		}
		for _, d := range w.deps(id) {
			if !seen[d] {
				seen[d] = true
				queue = append(queue, d)
			}
		}
	}
	return seen
}

// naiveClosureOK: every reachable edge passes the cross rule and lands on a
// listed or installed plugin, and the reachable subgraph has no cycle
// (Kahn's algorithm).
func (w *world) naiveClosureOK(root plugin.ID) bool {
	if _, ok := w.cat.nodes[root]; !ok {
		return w.isInstalled(root)
	}
	r := w.reach(root)
	indeg := map[plugin.ID]int{}
	for id := range r {
		for _, d := range w.deps(id) {
			if w.crossReason(id, d) != 0 {
				return false
			}
			if _, listed := w.cat.nodes[d]; !listed && !w.isInstalled(d) {
				return false
			}
			indeg[d]++
		}
	}
	var queue []plugin.ID
	for id := range r {
		if indeg[id] == 0 {
			queue = append(queue, id)
		}
	}
	removed := 0
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		removed++
		for _, d := range w.deps(id) {
			if indeg[d]--; indeg[d] == 0 {
				queue = append(queue, d)
			}
		}
	}
	return removed == len(r)
}

func (w *world) isEdge(from, to plugin.ID) bool { return slices.Contains(w.deps(from), to) }

func checkClosure(t *rapid.T, w *world, root plugin.ID) {
	plan, err := w.resolver().Closure(root)
	if ok := w.naiveClosureOK(root); ok != (err == nil) {
		t.Fatalf("Closure(%s) err = %v, naive says ok = %v", root, err, ok)
	}
	if err != nil {
		checkClosureError(t, w, root, err)
		return
	}
	pos := map[plugin.ID]int{}
	for i, s := range plan.Steps {
		if _, dup := pos[s.ID]; dup {
			t.Fatalf("%s planned twice: %v", s.ID, plan.Steps)
		}
		pos[s.ID] = i
		wantRole := RoleDependency
		switch {
		case s.ID == root:
			wantRole = RoleRoot
		case w.isInstalled(s.ID):
			wantRole = RoleInstalled
		}
		if s.Role != wantRole {
			t.Fatalf("%s has role %s, want %s", s.ID, s.Role, wantRole)
		}
	}
	if last := plan.Steps[len(plan.Steps)-1]; last.ID != root {
		t.Fatalf("last step is %s, want the root %s", last.ID, root)
	}
	r := w.reach(root)
	if len(r) != len(plan.Steps) {
		t.Fatalf("plan has %d plugins, %d are reachable", len(plan.Steps), len(r))
	}
	ranged := false
	for _, s := range plan.Steps {
		for _, d := range w.cat.nodes[s.ID].Dependencies {
			to := d.Resolve(s.ID.Source)
			p, in := pos[to]
			if !in {
				t.Fatalf("%s depends on %s, which is not in the plan", s.ID, to)
			}
			if p >= pos[s.ID] {
				t.Fatalf("%s (step %d) comes before its dependent %s (step %d)", to, p, s.ID, pos[s.ID])
			}
			ranged = ranged || d.Version != ""
		}
	}
	if wantW := map[bool]int{true: 1, false: 0}[ranged]; len(plan.Warnings) != wantW {
		t.Fatalf("warnings = %q, want %d", plan.Warnings, wantW)
	}
}

func checkClosureError(t *rapid.T, w *world, root plugin.ID, err error) {
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Hint == "" {
		t.Fatalf("error without *plugin.Error or hint: %v", err)
	}
	var (
		cy *CycleError
		me *MissingError
		ce *CrossMarketplaceError
	)
	switch {
	case errors.As(err, &cy):
		c := cy.Chain
		if len(c) < 2 || c[0] != c[len(c)-1] {
			t.Fatalf("cycle chain %v does not close", c)
		}
		for k := 0; k+1 < len(c); k++ {
			if !w.isEdge(c[k], c[k+1]) {
				t.Fatalf("cycle chain %v: %s does not depend on %s", c, c[k], c[k+1])
			}
		}
		if !w.reach(root)[c[0]] {
			t.Fatalf("cycle %v is not reachable from %s", c, root)
		}
	case errors.As(err, &me):
		if _, listed := w.cat.nodes[me.Dep]; listed || w.isInstalled(me.Dep) {
			t.Fatalf("%s reported missing but is listed or installed", me.Dep)
		}
		if me.RequiredBy.IsZero() {
			if me.Dep != root {
				t.Fatalf("missing root %s, asked for %s", me.Dep, root)
			}
			return
		}
		p := append(slices.Clone(me.Path), me.Dep)
		if p[0] != root || me.Path[len(me.Path)-1] != me.RequiredBy {
			t.Fatalf("path %v does not run from %s to %s", me.Path, root, me.RequiredBy)
		}
		for k := 0; k+1 < len(p); k++ {
			if !w.isEdge(p[k], p[k+1]) {
				t.Fatalf("path %v: %s does not depend on %s", p, p[k], p[k+1])
			}
		}
	case errors.As(err, &ce):
		if !w.isEdge(ce.From, ce.To) || !w.reach(root)[ce.From] {
			t.Fatalf("refused edge %s → %s is not reachable from %s", ce.From, ce.To, root)
		}
		if got := w.crossReason(ce.From, ce.To); got != ce.Reason {
			t.Fatalf("edge %s → %s refused for %s, rule says %v", ce.From, ce.To, ce.Reason, got)
		}
	default:
		t.Fatalf("untyped error %v", err)
	}
}

func TestPropertyClosureOnDAGs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := genWorld(t, true)
		checkClosure(t, w, rapid.SampledFrom(w.ids).Draw(t, "root"))
	})
}

func TestPropertyClosureOnAnyGraph(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := genWorld(t, false)
		checkClosure(t, w, rapid.SampledFrom(w.ids).Draw(t, "root"))
	})
}

// naiveDemote is the reference for Demote: start from the enabled plugins
// and rescan every installed plugin until nothing changes. It is quadratic on
// deep graphs; BenchmarkDemoteNaive measures it next to Demote.
func naiveDemote(cat Catalog, installed []Installed, enabled map[plugin.ID]bool) map[plugin.ID]bool {
	active := make(map[plugin.ID]bool, len(installed))
	for _, in := range installed {
		active[in.ID] = enabled[in.ID]
	}
	for changed := true; changed; {
		changed = false
		for _, in := range installed {
			if !active[in.ID] {
				continue
			}
			node, _ := cat.Lookup(in.ID)
			for _, d := range node.Dependencies {
				if !active[d.Resolve(in.ID.Source)] {
					active[in.ID] = false
					changed = true
					break
				}
			}
		}
	}
	return active
}

func TestPropertyDemote(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := genWorld(t, rapid.Bool().Draw(t, "acyclic"))
		a := w.resolver().Demote(w.enabled)
		want := naiveDemote(w.cat, w.installed, w.enabled)
		for _, in := range w.installed {
			if got := a.Status(in.ID) == StatusActive; got != want[in.ID] {
				t.Fatalf("%s active = %v, rescan says %v", in.ID, got, want[in.ID])
			}
		}
		// No active plugin has an inactive dependency.
		for _, id := range a.Active() {
			for _, d := range w.deps(id) {
				if a.Status(d) != StatusActive {
					t.Fatalf("active %s depends on %s, which is %s", id, d, a.Status(d))
				}
			}
		}
		// Every demoted plugin's reason is a real chain ending in a plugin
		// that is disabled or not installed.
		for _, id := range a.Demoted() {
			r, ok := a.Why(id)
			if !ok || r.Chain[0] != id {
				t.Fatalf("Why(%s) = %v, %v", id, r, ok)
			}
			for k := 0; k+1 < len(r.Chain); k++ {
				if !w.isEdge(r.Chain[k], r.Chain[k+1]) {
					t.Fatalf("reason %q: %s does not depend on %s", r, r.Chain[k], r.Chain[k+1])
				}
				if a.Status(r.Chain[k]) != StatusDemoted {
					t.Fatalf("reason %q: %s is %s", r, r.Chain[k], a.Status(r.Chain[k]))
				}
			}
			end := r.Chain[len(r.Chain)-1]
			if len(r.Chain) < 2 || a.Status(end) != r.End {
				t.Fatalf("reason %q ends in %s, which is %s", r, end, a.Status(end))
			}
		}
		// DemoteInstalled, with the enabled set carried by the installed
		// entries, gives the same statuses and reasons.
		flagged := make([]Installed, len(w.installed))
		for i, in := range w.installed {
			in.Enabled = w.enabled[in.ID]
			flagged[i] = in
		}
		b := New(w.cat, flagged, nil).DemoteInstalled()
		for _, in := range w.installed {
			ra, _ := a.Why(in.ID)
			rb, _ := b.Why(in.ID)
			if a.Status(in.ID) != b.Status(in.ID) || ra.String() != rb.String() {
				t.Fatalf("%s: DemoteInstalled says %s (%s), Demote %s (%s)", in.ID, b.Status(in.ID), rb, a.Status(in.ID), ra)
			}
		}
		// Demote on its own output changes nothing.
		again := w.resolver().Demote(toSet(a.Active()))
		if fmt.Sprint(again.Active()) != fmt.Sprint(a.Active()) || len(again.Demoted()) != 0 {
			t.Fatalf("second Demote: active %v demoted %v, first active %v", again.Active(), again.Demoted(), a.Active())
		}
	})
}

func toSet(in []plugin.ID) map[plugin.ID]bool {
	m := map[plugin.ID]bool{}
	for _, id := range in {
		m[id] = true
	}
	return m
}

func TestPropertyPrunable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := genWorld(t, rapid.Bool().Draw(t, "acyclic"))
		var manualIDs []plugin.ID
		for _, in := range w.installed {
			if !in.Auto {
				manualIDs = append(manualIDs, in.ID)
			}
		}
		reached := w.reachInstalled(manualIDs...)
		got := w.resolver().Prunable()
		for _, id := range got {
			if reached[id] {
				t.Fatalf("Prunable returned %s, which a manual plugin reaches", id)
			}
		}
		var want []plugin.ID
		for _, in := range w.installed {
			if in.Auto && !reached[in.ID] {
				want = append(want, in.ID)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Prunable = %v, want %v", got, want)
		}
	})
}

func TestPropertyReverseDependents(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := genWorld(t, rapid.Bool().Draw(t, "acyclic"))
		target := rapid.SampledFrom(append(slices.Clone(w.ids), plugin.ID{Name: "ghost", Source: "m"})).Draw(t, "target")
		got := w.resolver().ReverseDependents(target)
		var direct, trans []plugin.ID
		for _, in := range w.installed {
			if in.ID == target {
				continue
			}
			if w.isEdge(in.ID, target) {
				direct = append(direct, in.ID)
			}
			if w.reachInstalled(w.deps(in.ID)...)[target] {
				trans = append(trans, in.ID)
			}
		}
		if fmt.Sprint(got.Direct) != fmt.Sprint(direct) || fmt.Sprint(got.Transitive) != fmt.Sprint(trans) {
			t.Fatalf("ReverseDependents(%s) = %v / %v, want %v / %v", target, got.Direct, got.Transitive, direct, trans)
		}
	})
}
