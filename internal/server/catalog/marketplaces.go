package catalog

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/plugin"
)

// Marketplaces serves Catalog from a marketplace.Manager. It keeps one
// parsed snapshot of every marketplace.json and re-reads it after a change
// made through it, or when the snapshot is older than TTL (so that changes
// made by another replica or by the CLI over the same store show up). Safe
// for concurrent use: reads share the snapshot; changes are serialized,
// since a Manager is for one goroutine at a time.
//
// A snapshot never changes, so the answers computed from it (searches,
// plugin details) are kept with it, bounded, and dropped with it: the key
// of a cached answer is the snapshot it was computed from and the query.
type Marketplaces struct {
	// TTL bounds how stale a snapshot may be; zero means 2 seconds.
	TTL time.Duration

	mgrMu sync.Mutex
	mgr   *marketplace.Manager

	mu   sync.RWMutex
	snap *snapshot
}

// snapshot is one parse of every marketplace, with the answers computed
// from it.
type snapshot struct {
	cat    *marketplace.Catalog
	mkts   []Marketplace
	loaded time.Time

	mu       sync.Mutex
	details  map[plugin.ID]PluginDetail
	searches map[SearchQuery][]PluginSummary
}

// MaxCachedSearches bounds the per-snapshot search cache: past it the
// cache starts again empty.
const MaxCachedSearches = 1024

// New returns a Catalog over m.
func New(m *marketplace.Manager) *Marketplaces {
	return &Marketplaces{mgr: m}
}

func (mc *Marketplaces) ttl() time.Duration {
	if mc.TTL <= 0 {
		return 2 * time.Second
	}
	return mc.TTL
}

// load parses every marketplace into a new snapshot.
func load(mgr *marketplace.Manager) (*snapshot, error) {
	cat, err := mgr.Catalog()
	if err != nil {
		return nil, err
	}
	ns := &snapshot{cat: cat, loaded: time.Now(), details: map[plugin.ID]PluginDetail{}, searches: map[SearchQuery][]PluginSummary{}}
	for _, l := range cat.Marketplaces() {
		ns.mkts = append(ns.mkts, toMarketplace(l))
	}
	return ns, nil
}

func (mc *Marketplaces) snapshot() (*snapshot, error) {
	mc.mu.RLock()
	s := mc.snap
	mc.mu.RUnlock()
	if s != nil && time.Since(s.loaded) < mc.ttl() {
		return s, nil
	}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.snap != nil && mc.snap != s && time.Since(mc.snap.loaded) < mc.ttl() {
		return mc.snap, nil // another goroutine reloaded meanwhile
	}
	mc.mgrMu.Lock()
	ns, err := load(mc.mgr)
	mc.mgrMu.Unlock()
	if err != nil {
		return nil, err
	}
	mc.snap = ns
	return ns, nil
}

// Invalidate drops the snapshot (and the answers kept with it): the next
// read parses every marketplace again. The server calls it when the
// store's watch says another replica changed a marketplace.
func (mc *Marketplaces) Invalidate() {
	mc.mu.Lock()
	mc.snap = nil
	mc.mu.Unlock()
}

// Loaded returns the current snapshot of every marketplace, parsed (what
// channels are built from).
func (mc *Marketplaces) Loaded() (*marketplace.Catalog, error) {
	s, err := mc.snapshot()
	if err != nil {
		return nil, err
	}
	return s.cat, nil
}

func toMarketplace(l marketplace.Loaded) Marketplace {
	src, _ := json.Marshal(l.Known.Source)
	m := Marketplace{Name: l.Known.Name, Source: src, InstallLocation: l.Known.InstallLocation, LastUpdated: l.Known.LastUpdated}
	if l.Marketplace != nil {
		m.Plugins = len(l.Marketplace.Plugins)
		m.AllowCrossMarketplaceDependenciesOn = l.Marketplace.AllowCrossMarketplaceDependenciesOn
	}
	if l.Err != nil {
		m.Error = l.Err.Error()
	}
	return m
}

// Marketplaces implements Catalog.
func (mc *Marketplaces) Marketplaces(context.Context) ([]Marketplace, error) {
	s, err := mc.snapshot()
	if err != nil {
		return nil, err
	}
	return append([]Marketplace(nil), s.mkts...), nil
}

// AddMarketplace implements Catalog. A source that does not parse is a
// *FieldError on "source".
func (mc *Marketplaces) AddMarketplace(ctx context.Context, name string, source json.RawMessage) (Marketplace, error) {
	var src plugin.MarketplaceSource
	if err := json.Unmarshal(source, &src); err != nil {
		return Marketplace{}, &FieldError{Field: "source", Err: err}
	}
	mc.mgrMu.Lock()
	if _, err := mc.mgr.Get(name); err == nil {
		mc.mgrMu.Unlock()
		return Marketplace{}, plugin.Errorf(plugin.LayerIntent, plugin.TypeConflict, name,
			"update it with POST /v1/marketplaces/"+name+"/update, or remove it first", "marketplace %q is already known", name)
	}
	_, err := mc.mgr.Add(ctx, src, name)
	mc.mgrMu.Unlock()
	mc.Invalidate()
	if err != nil {
		return Marketplace{}, err
	}
	return mc.one(name)
}

func (mc *Marketplaces) one(name string) (Marketplace, error) {
	s, err := mc.snapshot()
	if err != nil {
		return Marketplace{}, err
	}
	for _, m := range s.mkts {
		if m.Name == name {
			return m, nil
		}
	}
	return Marketplace{}, plugin.Errorf(plugin.LayerIntent, plugin.TypeNotFound, name, "", "marketplace %q is not known", name)
}

// UpdateMarketplace implements Catalog.
func (mc *Marketplaces) UpdateMarketplace(ctx context.Context, name string) (Marketplace, error) {
	mc.mgrMu.Lock()
	_, err := mc.mgr.Update(ctx, name)
	mc.mgrMu.Unlock()
	mc.Invalidate()
	if err != nil {
		return Marketplace{}, err
	}
	return mc.one(name)
}

// RemoveMarketplace implements Catalog.
func (mc *Marketplaces) RemoveMarketplace(ctx context.Context, name string) error {
	mc.mgrMu.Lock()
	_, err := mc.mgr.Remove(ctx, name)
	mc.mgrMu.Unlock()
	mc.Invalidate()
	return err
}

func summary(h marketplace.Hit) PluginSummary {
	e := h.Entry
	return PluginSummary{ID: h.ID.String(), Name: e.Name, Marketplace: h.ID.Source, Version: e.Version,
		Description: e.Description, Category: e.Category, Tags: e.Tags}
}

// Search implements Catalog: the answer of the current snapshot, from its
// cache when the same query was asked of it.
func (mc *Marketplaces) Search(_ context.Context, q SearchQuery) ([]PluginSummary, error) {
	s, err := mc.snapshot()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	hits, ok := s.searches[q]
	s.mu.Unlock()
	if ok {
		return hits, nil
	}
	out := search(s.cat, q)
	s.mu.Lock()
	if len(s.searches) >= MaxCachedSearches {
		clear(s.searches)
	}
	s.searches[q] = out
	s.mu.Unlock()
	return out, nil
}

// search answers q over cat, uncached.
func search(cat *marketplace.Catalog, q SearchQuery) []PluginSummary {
	out := []PluginSummary{}
	for _, h := range cat.Search(q.Text) {
		if q.Marketplace != "" && h.ID.Source != q.Marketplace {
			continue
		}
		if q.Category != "" && h.Entry.Category != q.Category {
			continue
		}
		out = append(out, summary(h))
		if q.Limit > 0 && len(out) == q.Limit {
			break
		}
	}
	return out
}

// Plugin implements Catalog. Components are read from the plugin's
// directory when the marketplace has it locally; an entry whose files live
// elsewhere (git, npm, archive) reports no components until installed.
func (mc *Marketplaces) Plugin(_ context.Context, id plugin.ID) (PluginDetail, error) {
	s, err := mc.snapshot()
	if err != nil {
		return PluginDetail{}, err
	}
	s.mu.Lock()
	d, ok := s.details[id]
	s.mu.Unlock()
	if ok {
		return d, nil
	}
	d, err = detail(s.cat, id)
	if err != nil {
		return PluginDetail{}, err
	}
	s.mu.Lock()
	s.details[id] = d
	s.mu.Unlock()
	return d, nil
}

// detail reads what cat knows of plugin id, uncached.
func detail(cat *marketplace.Catalog, id plugin.ID) (PluginDetail, error) {
	h, err := cat.Lookup(id)
	if err != nil {
		return PluginDetail{}, err
	}
	e := h.Entry
	entry, _ := json.Marshal(e)
	src, _ := json.Marshal(h.Known.Source)
	d := PluginDetail{PluginSummary: summary(h), Entry: entry, Digest: e.Integrity, Dependencies: e.Dependencies,
		Components: []Component{}, Signatures: []Signature{}, MarketplaceSource: src}
	for _, sg := range e.Signatures {
		d.Signatures = append(d.Signatures, Signature{KeyID: sg.KeyID, Sig: sg.Sig})
	}
	if h.Root != "" && e.Source.Kind == plugin.SourceRelative {
		dir, err := e.LocalDir(h.Root)
		if err != nil {
			return PluginDetail{}, err
		}
		p, _, err := plugin.Load(dir, e)
		if err != nil {
			return PluginDetail{}, err
		}
		d.Namespace = p.Namespace()
		cost := p.AlwaysOnTokens()
		d.AlwaysOnTokens = &cost
		for _, c := range p.Components {
			d.Components = append(d.Components, Component{Kind: string(c.Kind), Name: c.Name, Path: c.Path})
		}
		if p.Manifest.Version != "" {
			d.Version = p.Manifest.Version
		}
		if len(p.Manifest.Dependencies) > 0 {
			d.Dependencies = p.Manifest.Dependencies
		}
	}
	return d, nil
}

// Capabilities is the report of a plugin the
// marketplace holds in its own tree (a relative source), read from the
// same checkout as its components; nil for one whose files live
// elsewhere. It is computed at each call (one walk of the plugin's
// files), never kept.
func (mc *Marketplaces) Capabilities(_ context.Context, id plugin.ID) (*capability.Report, error) {
	s, err := mc.snapshot()
	if err != nil {
		return nil, err
	}
	h, err := s.cat.Lookup(id)
	if err != nil {
		return nil, err
	}
	if h.Root == "" || h.Entry.Source.Kind != plugin.SourceRelative {
		return nil, nil
	}
	dir, err := h.Entry.LocalDir(h.Root)
	if err != nil {
		return nil, err
	}
	return capability.Read(dir, h.Entry)
}
