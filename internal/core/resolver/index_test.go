package resolver

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

func TestIndexLookup(t *testing.T) {
	cat := newCatalog().market("m").add(t, "a@m", "b", "ghost").add(t, "b@m").add(t, "far@m")
	x := NewIndex(cat, ids("a@m"))
	// a, b and ghost (unlisted, reached from a) are numbered; far is not.
	if x.Len() != 3 {
		t.Errorf("Len = %d, want 3 (a, its dependency b, the unlisted ghost)", x.Len())
	}
	if n, ok := x.Lookup(plugin.MustParseID("a@m")); !ok || len(n.Dependencies) != 2 {
		t.Errorf("Lookup(a@m) = %v, %v", n, ok)
	}
	if _, ok := x.Lookup(plugin.MustParseID("ghost@m")); ok {
		t.Error("Lookup(ghost@m) = true for a plugin nobody lists")
	}
	// A plugin the Index did not number is asked of the catalog.
	if _, ok := x.Lookup(plugin.MustParseID("far@m")); !ok {
		t.Error("Lookup(far@m) = false; the catalog lists it")
	}
	if !x.KnownMarketplace("m") || x.KnownMarketplace("other") {
		t.Error("KnownMarketplace must be the catalog's")
	}
}

// A Resolver over an Index still answers for a plugin the Index does not
// number, and falls back to IDs when the Index misses an installed plugin.
func TestIndexNotCovering(t *testing.T) {
	cat := newCatalog().market("m").add(t, "a@m", "b").add(t, "b@m").add(t, "far@m", "b")
	x := NewIndex(cat, ids("a@m"))
	r := New(x, manual("b@m"), nil)
	if r.idx == nil {
		t.Fatal("the Index numbers b@m; the Resolver must use its numbers")
	}
	plan, err := r.Closure(plugin.MustParseID("far@m"))
	if err != nil || fmt.Sprint(plan.Steps) != fmt.Sprint([]Step{
		{ID: plugin.MustParseID("b@m"), Role: RoleInstalled, RequiredBy: plugin.MustParseID("far@m")},
		{ID: plugin.MustParseID("far@m"), Role: RoleRoot},
	}) {
		t.Errorf("Closure(far@m) = %v, %v", plan, err)
	}
	r = New(x, manual("b@m", "far@m"), nil)
	if r.idx != nil {
		t.Fatal("far@m is installed and not numbered: the Resolver must work on IDs")
	}
	if got := r.ReverseDependents(plugin.MustParseID("b@m")); fmt.Sprint(idStrings(got.Direct)) != "[far@m]" {
		t.Errorf("ReverseDependents(b@m) = %v, want [far@m]", idStrings(got.Direct))
	}
}

// An ID installed twice keeps its first position and its last Auto and
// Enabled, over an Index as over a catalog.
func TestIndexInstalledTwice(t *testing.T) {
	cat := newCatalog().market("m").add(t, "a@m", "b").add(t, "b@m").add(t, "c@m")
	installed := []Installed{
		{ID: plugin.MustParseID("b@m"), Auto: true, Enabled: true},
		{ID: plugin.MustParseID("c@m"), Auto: true},
		{ID: plugin.MustParseID("b@m")},
		{ID: plugin.MustParseID("c@m"), Auto: true},
		{ID: plugin.MustParseID("c@m")},
		{ID: plugin.MustParseID("c@m"), Auto: true, Enabled: true},
	}
	overBoth(t, cat, installed, func(t *testing.T, _ Catalog, newResolver func(CrossPolicy) *Resolver) {
		r := newResolver(nil)
		var list []string
		for k := range r.flags {
			list = append(list, fmt.Sprintf("%s auto=%v enabled=%v", r.installedID(k), r.auto(k), r.flags[k]&instEnabled != 0))
		}
		if got := strings.Join(list, ", "); got != "b@m auto=false enabled=false, c@m auto=true enabled=true" {
			t.Errorf("installed = %s, want b@m manual and disabled, then c@m auto and enabled", got)
		}
		if got := idStrings(r.Prunable()); fmt.Sprint(got) != "[c@m]" {
			t.Errorf("Prunable = %v, want [c@m]", got)
		}
		a := r.DemoteInstalled()
		if a.Status(plugin.MustParseID("b@m")) != StatusDisabled || a.Status(plugin.MustParseID("c@m")) != StatusActive {
			t.Errorf("DemoteInstalled: b@m %s, c@m %s; want disabled and active (the last entry's Enabled)",
				a.Status(plugin.MustParseID("b@m")), a.Status(plugin.MustParseID("c@m")))
		}
	})
}

// Over an Index, the catalog is asked once per plugin when the Index is
// built and never again by Closure or Demote.
func TestIndexCatalogCalls(t *testing.T) {
	const n = 3000
	mem, all := genDAG(n)
	cat := &countingCatalog{memCatalog: mem}
	installed := make([]Installed, n)
	enabled := map[plugin.ID]bool{}
	for i, id := range all {
		installed[i] = Installed{ID: id}
		enabled[id] = i != n/2
	}
	x := NewIndex(cat, all[:1])
	if cat.lookups != n || x.Len() != n {
		t.Fatalf("NewIndex from p0: %d lookups, %d numbered; want %d and %d", cat.lookups, x.Len(), n, n)
	}
	cat.lookups = 0
	r := New(x, installed, nil)
	if _, err := r.Closure(all[0]); err != nil {
		t.Fatal(err)
	}
	if got := len(r.Demote(enabled).Demoted()); got != n/2 {
		t.Errorf("%d demoted, want %d", got, n/2)
	}
	if cat.lookups != 0 {
		t.Errorf("Closure and Demote over an Index asked the catalog %d times", cat.lookups)
	}
}

// Closures over one Index run concurrently (they share its scratch pool)
// and each gets the plan it would get alone.
func TestIndexConcurrentClosures(t *testing.T) {
	mem, all := genDAG(1500)
	x := NewIndex(mem, all)
	r := New(x, manual("p7@m3", "p10@m2"), nil)
	want := map[plugin.ID]string{}
	for _, id := range all[:40] {
		plan, err := New(mem, manual("p7@m3", "p10@m2"), nil).Closure(id)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = fmt.Sprint(plan.Steps)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 40 {
				id := all[(k*7+g)%40]
				plan, err := r.Closure(id)
				if err != nil || fmt.Sprint(plan.Steps) != want[id] {
					t.Errorf("concurrent Closure(%s) differs from the plan over the catalog (%v)", id, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// An Index of exactly the installed set, in installed order, lends the
// Resolver its own rows (no renumbering); every answer is the same as over
// the plain catalog, and the same again once the installed order no longer
// matches the numbering.
func TestIndexOfTheInstalledSet(t *testing.T) {
	cat, all := genDAG(300)
	installed := make([]Installed, len(all))
	for i, id := range all {
		installed[i] = Installed{ID: id, Auto: i%3 == 0, Enabled: i%17 != 5}
	}
	x := NewIndex(cat, all)
	reversed := slices.Clone(installed)
	slices.Reverse(reversed)
	describe := func(r *Resolver) string {
		var b strings.Builder
		a := r.DemoteInstalled()
		for _, id := range all {
			why, _ := a.Why(id)
			rd := r.ReverseDependents(id)
			fmt.Fprintf(&b, "%s %s %q %v %v\n", id, a.Status(id), why, idStrings(rd.Direct), len(rd.Transitive))
		}
		fmt.Fprintln(&b, idStrings(r.Prunable()))
		return b.String()
	}
	want := describe(New(cat, installed, nil))
	r := New(x, installed, nil)
	if !r.ident {
		t.Fatal("the Index numbers exactly the installed set in order; the Resolver must share its rows")
	}
	if got := describe(r); got != want {
		t.Errorf("over the Index of the installed set:\n%s\nover the catalog:\n%s", got, want)
	}
	r = New(x, reversed, nil)
	if r.ident || r.idx == nil {
		t.Fatalf("installed in another order: ident %v, over the Index %v; want renumbered Index numbers", r.ident, r.idx != nil)
	}
	// Answers in installed order (Prunable) follow the installed order.
	wantRev := describe(New(cat, reversed, nil))
	if got := describe(r); got != wantRev {
		t.Errorf("over the Index, installed in reverse:\n%s\nover the catalog:\n%s", got, wantRev)
	}
}
