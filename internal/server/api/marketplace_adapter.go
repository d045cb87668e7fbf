package api

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/plugin"
)

// MarketplaceCatalog serves Catalog from a marketplace.Manager. It keeps one
// parsed snapshot of every marketplace.json and re-reads it after a change
// made through it, or when the snapshot is older than TTL (so that changes
// made by another replica or by the CLI over the same store show up). Safe
// for concurrent use: reads share the snapshot; changes are serialized,
// since a Manager is for one goroutine at a time.
type MarketplaceCatalog struct {
	// TTL bounds how stale a snapshot may be; zero means 2 seconds.
	TTL time.Duration

	mgrMu sync.Mutex
	mgr   *marketplace.Manager

	mu   sync.RWMutex
	snap *catalogSnapshot
}

type catalogSnapshot struct {
	cat    *marketplace.Catalog
	mkts   []Marketplace
	loaded time.Time

	mu       sync.Mutex
	details  map[plugin.ID]PluginDetail
	searches map[SearchQuery][]PluginSummary // results for this snapshot only
}

// maxCachedSearches bounds the per-snapshot search cache.
const maxCachedSearches = 1024

// NewMarketplaceCatalog returns a Catalog over m.
func NewMarketplaceCatalog(m *marketplace.Manager) *MarketplaceCatalog {
	return &MarketplaceCatalog{mgr: m}
}

func (mc *MarketplaceCatalog) ttl() time.Duration {
	if mc.TTL <= 0 {
		return 2 * time.Second
	}
	return mc.TTL
}

func (mc *MarketplaceCatalog) snapshot() (*catalogSnapshot, error) {
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
	cat, err := mc.mgr.Catalog()
	mc.mgrMu.Unlock()
	if err != nil {
		return nil, err
	}
	ns := &catalogSnapshot{cat: cat, loaded: time.Now(), details: map[plugin.ID]PluginDetail{}, searches: map[SearchQuery][]PluginSummary{}}
	for _, l := range cat.Marketplaces() {
		ns.mkts = append(ns.mkts, toMarketplace(l))
	}
	mc.snap = ns
	return ns, nil
}

func (mc *MarketplaceCatalog) invalidate() {
	mc.mu.Lock()
	mc.snap = nil
	mc.mu.Unlock()
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
func (mc *MarketplaceCatalog) Marketplaces(context.Context) ([]Marketplace, error) {
	s, err := mc.snapshot()
	if err != nil {
		return nil, err
	}
	return append([]Marketplace(nil), s.mkts...), nil
}

// AddMarketplace implements Catalog.
func (mc *MarketplaceCatalog) AddMarketplace(ctx context.Context, name string, source json.RawMessage) (Marketplace, error) {
	var src plugin.MarketplaceSource
	if err := json.Unmarshal(source, &src); err != nil {
		return Marketplace{}, badField("source", "source: %v", err)
	}
	mc.mgrMu.Lock()
	if _, err := mc.mgr.Get(name); err == nil {
		mc.mgrMu.Unlock()
		return Marketplace{}, plugin.Errorf(plugin.LayerIntent, plugin.TypeConflict, name,
			"update it with POST /v1/marketplaces/"+name+"/update, or remove it first", "marketplace %q is already known", name)
	}
	_, err := mc.mgr.Add(ctx, src, name)
	mc.mgrMu.Unlock()
	mc.invalidate()
	if err != nil {
		return Marketplace{}, err
	}
	return mc.one(name)
}

func (mc *MarketplaceCatalog) one(name string) (Marketplace, error) {
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
func (mc *MarketplaceCatalog) UpdateMarketplace(ctx context.Context, name string) (Marketplace, error) {
	mc.mgrMu.Lock()
	_, err := mc.mgr.Update(ctx, name)
	mc.mgrMu.Unlock()
	mc.invalidate()
	if err != nil {
		return Marketplace{}, err
	}
	return mc.one(name)
}

// RemoveMarketplace implements Catalog.
func (mc *MarketplaceCatalog) RemoveMarketplace(ctx context.Context, name string) error {
	mc.mgrMu.Lock()
	_, err := mc.mgr.Remove(ctx, name)
	mc.mgrMu.Unlock()
	mc.invalidate()
	return err
}

func summary(h marketplace.Hit) PluginSummary {
	e := h.Entry
	return PluginSummary{ID: h.ID.String(), Name: e.Name, Marketplace: h.ID.Source, Version: e.Version,
		Description: e.Description, Category: e.Category, Tags: e.Tags}
}

// Search implements Catalog. A snapshot never changes, so its results are
// kept with it (bounded) and dropped with it.
func (mc *MarketplaceCatalog) Search(_ context.Context, q SearchQuery) ([]PluginSummary, error) {
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
	out := []PluginSummary{}
	for _, h := range s.cat.Search(q.Text) {
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
	s.mu.Lock()
	if len(s.searches) >= maxCachedSearches {
		clear(s.searches)
	}
	s.searches[q] = out
	s.mu.Unlock()
	return out, nil
}

// Plugin implements Catalog. Components are read from the plugin's
// directory when the marketplace has it locally; an entry whose files live
// elsewhere (git, npm, archive) reports no components until installed.
func (mc *MarketplaceCatalog) Plugin(_ context.Context, id plugin.ID) (PluginDetail, error) {
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
	h, err := s.cat.Lookup(id)
	if err != nil {
		return PluginDetail{}, err
	}
	e := h.Entry
	entry, _ := json.Marshal(e)
	src, _ := json.Marshal(h.Known.Source)
	d = PluginDetail{PluginSummary: summary(h), Entry: entry, Digest: e.Integrity, Dependencies: e.Dependencies,
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
	s.mu.Lock()
	s.details[id] = d
	s.mu.Unlock()
	return d, nil
}
