package resolver

import (
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// countingCatalog counts how often the resolver asks its catalog.
type countingCatalog struct {
	*memCatalog
	lookups, known, cross int
}

func (c *countingCatalog) Lookup(id plugin.ID) (Node, bool) {
	c.lookups++
	return c.memCatalog.Lookup(id)
}
func (c *countingCatalog) KnownMarketplace(name string) bool {
	c.known++
	return c.memCatalog.KnownMarketplace(name)
}
func (c *countingCatalog) AllowsCross(from, to string) bool {
	c.cross++
	return c.memCatalog.AllowsCross(from, to)
}

// The work the resolver asks of a catalog is linear: one lookup per plugin
// (never per edge), and the marketplace rule once per pair of marketplaces.
// This checks the shape of the work without timing anything.
func TestCatalogCallsAreLinear(t *testing.T) {
	const n = 5000
	mem, all := genDAG(n) // ~3n edges over 4 marketplaces
	cat := &countingCatalog{memCatalog: mem}
	plan, err := New(cat, nil, nil).Closure(all[0])
	if err != nil || len(plan.Steps) != n {
		t.Fatalf("plan of %d steps, %v", len(plan.Steps), err)
	}
	if cat.lookups != n {
		t.Errorf("Closure: %d catalog lookups for %d plugins", cat.lookups, n)
	}
	if cat.cross > 12 || cat.known > 12 { // 4 marketplaces: 12 ordered pairs
		t.Errorf("Closure: AllowsCross %d times, KnownMarketplace %d times; want at most once per pair", cat.cross, cat.known)
	}

	*cat = countingCatalog{memCatalog: mem}
	installed := make([]Installed, n)
	enabled := map[plugin.ID]bool{}
	for i, id := range all {
		installed[i] = Installed{ID: id}
		enabled[id] = i != n/2
	}
	r := New(cat, installed, nil)
	a := r.Demote(enabled)
	r.Demote(enabled)
	r.Prunable()
	r.ReverseDependents(all[n-1])
	if cat.lookups != n {
		t.Errorf("Demote twice, Prunable, ReverseDependents: %d catalog lookups for %d installed plugins; the graph must be built once", cat.lookups, n)
	}
	// The i → i+1 chain: disabling the middle plugin demotes every plugin
	// before it. The reason is a shortest chain (the worklist is breadth
	// first), so it uses the long random edges and not the 2500-link chain.
	if got := len(a.Demoted()); got != n/2 {
		t.Errorf("%d demoted, want %d", got, n/2)
	}
	why, _ := a.Why(all[0])
	if end := why.Chain[len(why.Chain)-1]; end != all[n/2] || why.End != StatusDisabled || len(why.Chain) > 100 {
		t.Errorf("reason of p0 = %d links ending at %s (%s), want a short chain to %s", len(why.Chain), end, why.End, all[n/2])
	}
}
