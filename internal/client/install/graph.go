package install

import (
	"path/filepath"
	"sync"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/resolver"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/plugin"
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

	// loads is dir → plugin.Load of it, once per graph. Materializations
	// run in parallel and read and fill it too, hence the lock; it is not
	// held while loading (two goroutines may then load one dir twice, with
	// the same result).
	mu    sync.Mutex
	loads map[string]loaded
	// manifests is dir → plugin.LoadManifest of it, once per graph: the
	// closure asks a marketplace's tree for dependencies only.
	manifests map[string]loadedManifest
	// roots is a marketplace root → that root resolved, once per graph
	// (marketplaceAt): every relative entry of a marketplace is looked up
	// below the same root, and this install reads one catalog of it.
	roots map[string]*resolvedRoot
}

// resolvedRoot is one marketplace root resolved: its real path and
// checkout (source.ResolveMarketplace), or why it cannot be.
type resolvedRoot struct {
	once sync.Once
	m    *source.Marketplace
	err  error
}

type loadedManifest struct {
	m   *plugin.Manifest
	err error
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
		loads: map[string]loaded{}, manifests: map[string]loadedManifest{}, roots: map[string]*resolvedRoot{}}
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

// marketplaceAt is source.ResolveMarketplace(root), done once per graph.
func (g *graph) marketplaceAt(root string) (*source.Marketplace, error) {
	g.mu.Lock()
	r, ok := g.roots[root]
	if !ok {
		r = &resolvedRoot{}
		g.roots[root] = r
	}
	g.mu.Unlock()
	r.once.Do(func() { r.m, r.err = source.ResolveMarketplace(root) })
	return r.m, r.err
}

// localDir is entry.LocalDir(root), with the root resolved once per graph:
// LocalDirIn gives what LocalDir gives for the root's real path.
func (g *graph) localDir(entry *plugin.Entry, root string) (string, error) {
	m, err := g.marketplaceAt(root)
	if err != nil {
		return entry.LocalDir(root) // its own error
	}
	return entry.LocalDirIn(root, m.Real)
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
	g.mu.Lock()
	l, ok := g.loads[dir]
	g.mu.Unlock()
	if ok {
		return l.p, l.err
	}
	p, _, err := plugin.Load(dir, entry)
	g.remember(dir, loaded{p, err})
	return p, err
}

// manifest is plugin.LoadManifest of dir with entry, done once per graph.
// A full load of dir already made answers for it: LoadManifest gives its
// manifest (TestLoadManifestEqualsLoad).
func (g *graph) manifest(dir string, entry *plugin.Entry) (*plugin.Manifest, error) {
	g.mu.Lock()
	l, full := g.loads[dir]
	m, ok := g.manifests[dir]
	g.mu.Unlock()
	if full && l.err == nil {
		return &l.p.Manifest, nil
	}
	if ok {
		return m.m, m.err
	}
	pm, err := plugin.LoadManifest(dir, entry)
	g.mu.Lock()
	g.manifests[dir] = loadedManifest{pm, err}
	g.mu.Unlock()
	return pm, err
}

func (g *graph) remember(dir string, l loaded) {
	g.mu.Lock()
	g.loads[dir] = l
	g.mu.Unlock()
}

// moved records that the tree plugin.Load read as p now lives at dir (a
// staged tree renamed into the cache, or a cached version with the same
// digest), so that the plan made after the fetch does not read it again. A
// plugin whose name Load took from the directory's base name is not
// recorded: under its new name it could read differently.
func (g *graph) moved(p *plugin.Plugin, dir string) {
	if p.Manifest.Name == filepath.Base(p.Root) {
		return
	}
	q := *p
	q.Root = dir
	g.remember(dir, loaded{p: &q})
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
		// The closure needs the dependencies only: the components are
		// loaded, and checked, from the copy that is installed.
		if dir, err := g.localDir(entry, root); err == nil {
			if m, err := g.manifest(dir, entry); err == nil {
				return nodeInfo{resolver.Node{Dependencies: m.Dependencies}, true}
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
		if resolver.CrossAllowed(m.Marketplace.AllowCrossMarketplaceDependenciesOn, from, to) {
			return true
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
