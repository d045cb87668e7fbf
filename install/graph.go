package install

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/wharfhq/wharf/cache"
	"github.com/wharfhq/wharf/marketplace"
	"github.com/wharfhq/wharf/plugin"
	"github.com/wharfhq/wharf/resolver"
)

// graph is the resolver's view of the world: installed plugins answer from
// the manifest that is actually on disk, other plugins from their marketplace
// (the plugin dir itself for relative sources, else the entry). Plugins
// fetched during this install answer from their fetched tree.
type graph struct {
	cat       *marketplace.Catalog
	installed map[plugin.ID]cache.Record
	fetched   map[plugin.ID]string // id → staged or materialized dir
	nodes     map[plugin.ID]nodeInfo
	loads     map[string]loaded // dir → plugin.Load of it, once per graph
}

type loaded struct {
	p   *plugin.Plugin
	err error
}

type nodeInfo struct {
	node resolver.Node
	ok   bool
}

func newGraph(cat *marketplace.Catalog, recs []cache.Record) *graph {
	g := &graph{cat: cat, installed: map[plugin.ID]cache.Record{}, fetched: map[plugin.ID]string{}, nodes: map[plugin.ID]nodeInfo{},
		loads: map[string]loaded{}}
	for _, r := range recs {
		g.installed[r.ID] = r
	}
	return g
}

// setFetched makes id answer from dir from now on.
func (g *graph) setFetched(id plugin.ID, dir string) {
	g.fetched[id] = dir
	delete(g.nodes, id)
}

func (g *graph) entry(id plugin.ID) (*plugin.Entry, string) {
	hit, err := g.cat.Lookup(id)
	if err != nil {
		return nil, ""
	}
	return hit.Entry, hit.Root
}

// load is plugin.Load of dir with entry, done once per graph: the resolver's
// lookup and the load-time checks of `list` ask for the same trees.
func (g *graph) load(dir string, entry *plugin.Entry) (*plugin.Plugin, error) {
	if l, ok := g.loads[dir]; ok {
		return l.p, l.err
	}
	p, _, err := plugin.Load(dir, entry)
	g.loads[dir] = loaded{p, err}
	return p, err
}

// preload loads every installed tree of recs into the graph on all CPUs,
// ahead of the lookups and checks that will ask for them one by one (the
// work is mostly system calls, independent per tree).
func (g *graph) preload(recs []cache.Record) {
	type job struct {
		dir   string
		entry *plugin.Entry
	}
	var jobs []job
	for _, r := range recs {
		if _, ok := g.loads[r.InstallPath]; !ok {
			e, _ := g.entry(r.ID)
			jobs = append(jobs, job{r.InstallPath, e})
		}
	}
	res := make([]loaded, len(jobs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(jobs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(jobs); i = int(next.Add(1)) - 1 {
				p, _, err := plugin.Load(jobs[i].dir, jobs[i].entry)
				res[i] = loaded{p, err}
			}
		}()
	}
	wg.Wait()
	for i, j := range jobs {
		g.loads[j.dir] = res[i]
	}
}

// Lookup implements resolver.Catalog.
func (g *graph) Lookup(id plugin.ID) (resolver.Node, bool) {
	if n, ok := g.nodes[id]; ok {
		return n.node, n.ok
	}
	n := g.lookup(id)
	g.nodes[id] = n
	return n.node, n.ok
}

func (g *graph) lookup(id plugin.ID) nodeInfo {
	entry, root := g.entry(id)
	if dir, ok := g.fetched[id]; ok {
		if p, err := g.load(dir, entry); err == nil {
			return nodeInfo{resolver.Node{Dependencies: p.Manifest.Dependencies}, true}
		}
	}
	if rec, ok := g.installed[id]; ok {
		if p, err := g.load(rec.InstallPath, entry); err == nil {
			return nodeInfo{resolver.Node{Dependencies: p.Manifest.Dependencies}, true}
		}
		if entry == nil {
			return nodeInfo{resolver.Node{}, true}
		}
	}
	if entry == nil {
		return nodeInfo{}
	}
	if entry.Source.Kind == plugin.SourceRelative && root != "" {
		if dir, err := entry.LocalDir(root); err == nil {
			if p, _, err := plugin.Load(dir, entry); err == nil {
				return nodeInfo{resolver.Node{Dependencies: p.Manifest.Dependencies}, true}
			}
		}
	}
	return nodeInfo{resolver.Node{Dependencies: entry.Dependencies}, true}
}

// KnownMarketplace implements resolver.Catalog.
func (g *graph) KnownMarketplace(name string) bool {
	for _, m := range g.cat.Marketplaces() {
		if m.Known.Name == name {
			return true
		}
	}
	return false
}

// AllowsCross implements resolver.Catalog.
func (g *graph) AllowsCross(from, to string) bool {
	for _, m := range g.cat.Marketplaces() {
		if m.Known.Name != from || m.Marketplace == nil {
			continue
		}
		for _, n := range m.Marketplace.AllowCrossMarketplaceDependenciesOn {
			if n == to {
				return true
			}
		}
	}
	return false
}

func (g *graph) declaredCross(mkt string) []string {
	for _, m := range g.cat.Marketplaces() {
		if m.Known.Name == mkt && m.Marketplace != nil {
			return m.Marketplace.AllowCrossMarketplaceDependenciesOn
		}
	}
	return nil
}

func (g *graph) known(mkt string) (marketplace.Known, bool) {
	for _, m := range g.cat.Marketplaces() {
		if m.Known.Name == mkt {
			return m.Known, true
		}
	}
	return marketplace.Known{}, false
}
