package resolver

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wharfhq/wharf/plugin"
)

// cpuTimer reports the process CPU time per op as "cpu-ns/op".
type cpuTimer struct {
	start time.Duration
	ok    bool
}

func startCPU(b *testing.B) cpuTimer {
	b.ReportAllocs()
	b.ResetTimer()
	t, ok := processCPU()
	return cpuTimer{t, ok}
}

func (c cpuTimer) stop(b *testing.B) {
	b.StopTimer()
	if end, ok := processCPU(); ok && c.ok && b.N > 0 {
		b.ReportMetric(float64(end-c.start)/float64(b.N), "cpu-ns/op")
	}
}

var benchSizes = []struct {
	name string
	n    int
}{{"295", 295}, {"1k", 1000}, {"10k", 10000}, {"100k", 100000}}

// genDAG builds a catalog of n plugins over 4 marketplaces that all allow and
// know each other. Plugin i depends on plugin i+1 (so p0 reaches everything,
// through a path n deep) and on two random later plugins: ~3 dependencies
// each, a quarter of them in the same marketplace (written bare).
func genDAG(n int) (*memCatalog, []plugin.ID) {
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	cat := newCatalog()
	mkts := []string{"m0", "m1", "m2", "m3"}
	for _, m := range mkts {
		cat.market(m, mkts...)
	}
	idList := make([]plugin.ID, n)
	for i := range idList {
		idList[i] = plugin.ID{Name: fmt.Sprintf("p%d", i), Source: mkts[i%len(mkts)]}
	}
	for i, id := range idList {
		var deps []plugin.Dependency
		add := func(j int) {
			to := idList[j]
			d := plugin.Dependency{Name: to.Name, Marketplace: to.Source}
			if to.Source == id.Source {
				d.Marketplace = ""
			}
			deps = append(deps, d)
		}
		if i+1 < n {
			add(i + 1)
			for k := 0; k < 2; k++ {
				add(i + 1 + rng.IntN(n-i-1))
			}
		}
		cat.nodes[id] = Node{Dependencies: deps}
	}
	return cat, idList
}

// closureFixture: every tenth plugin is already installed.
func closureFixture(n int) (*memCatalog, []plugin.ID, []Installed) {
	cat, all := genDAG(n)
	var installed []Installed
	for i := 1; i < len(all); i += 10 {
		installed = append(installed, Installed{ID: all[i]})
	}
	return cat, all, installed
}

// BenchmarkClosure: install plan of p0, which reaches every plugin, over a
// plain map catalog, as install and
// the API call it today (one Resolver per operation over a catalog adapter):
// every edge is resolved by hashing plugin IDs during the call. Building the
// Resolver is timed too.
func BenchmarkClosure(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			cat, all, installed := closureFixture(size.n)
			cpu := startCPU(b)
			for b.Loop() {
				plan, err := New(cat, installed, nil).Closure(all[0])
				if err != nil || len(plan.Steps) != size.n {
					b.Fatalf("plan of %d steps, err %v", len(plan.Steps), err)
				}
			}
			cpu.stop(b)
		})
	}
}

// demoteFixture: every plugin installed, 1% of them disabled (which, with
// the i → i+1 chain, demotes nearly everything before them).
func demoteFixture(n int) (*memCatalog, []plugin.ID, []Installed, map[plugin.ID]bool) {
	cat, all := genDAG(n)
	installed := make([]Installed, len(all))
	enabled := make(map[plugin.ID]bool, len(all))
	rng := rand.New(rand.NewPCG(2, uint64(n)))
	for i, id := range all {
		on := rng.IntN(100) != 0
		installed[i] = Installed{ID: id, Enabled: on}
		enabled[id] = on
	}
	return cat, all, installed, enabled
}

// benchDemote runs demote (made by prepare, untimed, from the fixture of
// each size) at every size; only what demote does is timed.
func benchDemote(b *testing.B, prepare func(f demoteWorld) func() *Activation) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			var f demoteWorld
			f.cat, f.all, f.installed, f.enabled = demoteFixture(size.n)
			demote := prepare(f)
			cpu := startCPU(b)
			for b.Loop() {
				if demote().Status(f.all[0]) == StatusActive {
					b.Fatal("p0 reaches a disabled plugin and must be demoted")
				}
			}
			cpu.stop(b)
		})
	}
}

type demoteWorld struct {
	cat       *memCatalog
	all       []plugin.ID
	installed []Installed
	enabled   map[plugin.ID]bool
}

// BenchmarkDemote: the same demotion over a plain map catalog, as the agent's
// load and wharf list call it (catalog and Resolver built per session): the
// graph of installed plugins is built from IDs during the call, with the
// Resolver.
func BenchmarkDemote(b *testing.B) {
	benchDemote(b, func(f demoteWorld) func() *Activation {
		return func() *Activation { return New(f.cat, f.installed, nil).DemoteInstalled() }
	})
}

// BenchmarkDemoteNaive is the reference point: the same demotion done by
// rescanning until nothing changes, on the same graph as BenchmarkDemote/1k.
// Larger sizes are left out: on this graph it needs one pass per level.
func BenchmarkDemoteNaive(b *testing.B) {
	b.Run("1k", func(b *testing.B) {
		cat, all, installed, enabled := demoteFixture(1000)
		want := New(cat, installed, nil).Demote(enabled)
		cpu := startCPU(b)
		for b.Loop() {
			active := naiveDemote(cat, installed, enabled)
			if active[all[0]] != (want.Status(all[0]) == StatusActive) {
				b.Fatal("naive and worklist demotion disagree")
			}
		}
		cpu.stop(b)
	})
}

// BenchmarkMapFloor is the yardstick for the two above, measured in the same
// run: the hash-map work any resolver keyed by plugin ID cannot avoid on the
// same graph — one insert per plugin and one lookup per dependency edge in a
// Go map[plugin.ID]int32, with no traversal, no plan and no catalog calls.
// On a loaded machine all three slow down together; compare ratios.
func BenchmarkMapFloor(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			cat, all := genDAG(size.n)
			var edges []plugin.ID
			for _, id := range all {
				for _, d := range cat.nodes[id].Dependencies {
					edges = append(edges, d.Resolve(id.Source))
				}
			}
			cpu := startCPU(b)
			for b.Loop() {
				m := make(map[plugin.ID]int32)
				for i, id := range all {
					m[id] = int32(i)
				}
				sum := 0
				for _, id := range edges {
					sum += int(m[id])
				}
				if sum == 0 && size.n > 1 {
					b.Fatal("no edge found")
				}
			}
			cpu.stop(b)
		})
	}
}
