package resolver

import (
	"sync"

	"github.com/wharfhq/wharf/plugin"
)

// Index is a Catalog compiled to numbers: every plugin it covers has a dense
// number, every dependency edge is resolved to the number of its target once,
// and each plugin's marketplace is interned. A Resolver built with New over
// an *Index (and an installed set the Index covers) demotes over int32
// slices only: Demote hashes no plugin ID per edge. Closure asks the Index
// as any Catalog.
//
// Build an Index once per snapshot of a catalog and reuse it for every
// operation on that snapshot (several roots, several sessions, a server's
// requests). An Index is immutable and safe for concurrent use if the Catalog's
// KnownMarketplace, AllowsCross and Lookup are.
//
// Answers are those of the catalog at the time NewIndex ran: for the plugins
// it numbered, Lookup answers from the Nodes it kept then (the catalog must
// not modify their Dependencies slices afterwards); any other plugin, and
// every marketplace question, is passed on to the catalog.
type Index struct {
	cat   Catalog
	tab   *idTable // plugin numbers, in order of first meeting
	mkt   []uint32 // by number: marketplace index in tab
	flags []uint8  // by number: flagListed
	nodes []Node   // by number: what Lookup returned (zero when not listed)
	start []int32  // dependencies of i: edges[start[i]:start[i+1]], in declaration order
	edges []int32
	emkt  []uint32 // by edge: marketplace index of its target

	// Reverse rows over every number, built on first use by a Resolver
	// whose installed set is exactly the Index's numbering (see
	// buildIndexedGraph).
	revOnce       sync.Once
	revStart, rev []int32
}

const (
	flagListed uint8 = 1 << iota // the catalog's Lookup answered true
)

// NewIndex numbers ids and every plugin they reach through dependencies
// (listed or not), asking cat.Lookup exactly once per plugin. The order of
// ids is the numbering order; an installed set given to New in the same
// order is matched without hashing.
func NewIndex(cat Catalog, ids []plugin.ID) *Index {
	x := &Index{cat: cat, tab: newIDTable(len(ids))}
	x.mkt = make([]uint32, 0, len(ids))
	for _, id := range ids {
		m, _ := x.tab.market(id.Source, true)
		if _, added := x.tab.internIn(id, m); added {
			x.mkt = append(x.mkt, m)
		}
	}
	x.flags = make([]uint8, 0, x.tab.len())
	x.nodes = make([]Node, 0, x.tab.len())
	x.start = make([]int32, 1, x.tab.len()+1)
	x.edges = make([]int32, 0, 3*x.tab.len())
	x.emkt = make([]uint32, 0, 3*x.tab.len())
	// Numbers are handed out in order, so walking them in order visits every
	// plugin reached (breadth first) and fills the edge rows in order.
	for i := 0; i < x.tab.len(); i++ {
		from := x.tab.ids[i]
		fromMkt := x.mkt[i]
		node, ok := cat.Lookup(from)
		var fl uint8
		if ok {
			fl = flagListed
		}
		// Edges are resolved whatever ok says: the installed graph of
		// Demote takes a Node's dependencies as the catalog returns them.
		for _, d := range node.Dependencies {
			to := d.Resolve(from.Source)
			toMkt := fromMkt
			if d.Marketplace != "" && d.Marketplace != from.Source {
				toMkt, _ = x.tab.market(d.Marketplace, true)
			}
			j, added := x.tab.internIn(to, toMkt)
			if added {
				x.mkt = append(grow2(x.mkt), toMkt)
			}
			x.edges = append(grow2(x.edges), j)
			x.emkt = append(grow2(x.emkt), toMkt)
		}
		x.flags = append(grow2(x.flags), fl)
		x.nodes = append(grow2(x.nodes), node)
		x.start = append(grow2(x.start), int32(len(x.edges)))
	}
	return x
}

// Len returns how many plugins the Index numbered: the ids given to NewIndex
// and every plugin they reach, listed or not.
func (x *Index) Len() int { return x.tab.len() }

// Lookup implements Catalog: the Node recorded by NewIndex for a plugin it
// numbered, the catalog's answer for any other.
func (x *Index) Lookup(id plugin.ID) (Node, bool) {
	if i, ok := x.tab.find(id); ok {
		return x.nodes[i], x.flags[i]&flagListed != 0
	}
	return x.cat.Lookup(id)
}

// KnownMarketplace implements Catalog by asking the catalog.
func (x *Index) KnownMarketplace(name string) bool { return x.cat.KnownMarketplace(name) }

// AllowsCross implements Catalog by asking the catalog.
func (x *Index) AllowsCross(from, to string) bool { return x.cat.AllowsCross(from, to) }

// reverse returns the dependents of every number as compressed rows.
func (x *Index) reverse() (revStart, rev []int32) {
	x.revOnce.Do(func() { x.revStart, x.rev = reverseRows(x.Len(), x.Len(), x.start, x.edges) })
	return x.revStart, x.rev
}

func (x *Index) deps(i int32) []int32 { return x.edges[x.start[i]:x.start[i+1]] }
