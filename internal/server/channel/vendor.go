package channel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// Vendor keeps the server's own copy of plugin trees: each fetched from its
// origin once per marketplace revision, checked against the entry's
// published integrity, and recorded with its w1: digest. A copy is checked
// against its recorded digest again every time it is used.
//
// A copy no build has used for Keep is removed (Prune, which a Builder runs
// after its builds at most once an hour); a later build that needs it
// fetches it again.
type Vendor struct {
	Dir     string          // where the copies live
	Fetcher *source.Fetcher // nil: source.NewFetcher()
	// Keep is how long an unused copy stays (default DefaultKeep).
	Keep time.Duration

	mu        sync.Mutex
	locks     map[string]*sync.Mutex
	lastPrune time.Time
}

// DefaultKeep is how long a vendored copy no build uses stays on disk.
const DefaultKeep = 7 * 24 * time.Hour

// pruneEvery is how often, at most, a Builder prunes after its builds.
const pruneEvery = time.Hour

// Vendored is one plugin's verified copy.
type Vendored struct {
	Dir     string `json:"-"`
	Digest  string `json:"digest"`
	Commit  string `json:"commit,omitempty"`  // git sources: the commit fetched
	Version string `json:"version,omitempty"` // as the installer versions it
	Source  string `json:"source"`            // the origin, described
	// Hops are the sources the fetch that made the copy was redirected
	// to; Gated says a gate decided them. A copy is used under a gate
	// only when it was made under one, and each hop is decided again.
	Hops  []plugin.Source `json:"hops,omitempty"`
	Gated bool            `json:"gated,omitempty"`
	// Entry is the marketplace entry the copy was made from: a channel
	// that serves this copy after the marketplace moved on (its newer
	// version is held) serves it with its own entry, whose inline hooks
	// and servers are the ones approved.
	Entry *plugin.Entry `json:"entry,omitempty"`
}

// hopGate passes a fetch's questions to the gate and records every
// source it allowed other than the entry's own: the redirect targets.
type hopGate struct {
	gate  source.Gate
	entry plugin.Source
	mu    sync.Mutex
	hops  []plugin.Source
}

func (g *hopGate) AllowFetch(ctx context.Context, id string, src plugin.Source) error {
	if err := g.gate.AllowFetch(ctx, id, src); err != nil {
		return err
	}
	if src != g.entry {
		g.mu.Lock()
		g.hops = append(g.hops, src)
		g.mu.Unlock()
	}
	return nil
}

// key names the copy of hit: one per plugin, source and marketplace
// revision, so that a marketplace update fetches again and nothing else does.
func vendorKey(h marketplace.Hit) string {
	src, _ := json.Marshal(h.Entry.Source)
	sum := sha256.New()
	for _, s := range []string{h.ID.String(), string(src), h.Known.Commit, h.Known.LastUpdated.UTC().String(), h.Entry.Integrity} {
		sum.Write([]byte(s))
		sum.Write([]byte{0})
	}
	return hex.EncodeToString(sum.Sum(nil))[:40]
}

func (v *Vendor) lock(key string) func() {
	v.mu.Lock()
	if v.locks == nil {
		v.locks = map[string]*sync.Mutex{}
	}
	l := v.locks[key]
	if l == nil {
		l = &sync.Mutex{}
		v.locks[key] = l
	}
	v.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// Get returns the verified copy of hit's plugin, fetching it when this
// marketplace revision has none yet. gate, when not nil, decides every
// source the fetch asks about (the entry's, and every URL it is redirected
// to); the redirect targets are recorded with the copy and decided again
// each time it is used, so a copy is not served once policy refuses a
// source it came through. The gate's refusal is returned as is. The error
// of a source that cannot be fetched or does not match its published
// integrity is a *plugin.Error.
func (v *Vendor) Get(ctx context.Context, h marketplace.Hit, gate source.Gate) (*Vendored, error) {
	key := vendorKey(h)
	defer v.lock(key)()
	dir := filepath.Join(v.Dir, "trees", key)
	meta := filepath.Join(v.Dir, "trees", key+".json")
	if b, err := os.ReadFile(meta); err == nil {
		var vd Vendored
		// A copy made without a gate is fetched again under one: its
		// redirects were never decided.
		if json.Unmarshal(b, &vd) == nil && (gate == nil || vd.Gated) {
			vd.Dir = dir
			tree, err := trust.Digest(dir)
			if err == nil && tree.Digest == vd.Digest {
				if gate != nil {
					for _, hop := range vd.Hops {
						if err := gate.AllowFetch(ctx, h.ID.String(), hop); err != nil {
							return nil, err
						}
					}
				}
				// The metadata's time is the copy's last use (Prune).
				now := time.Now()
				_ = os.Chtimes(meta, now, now)
				return &vd, nil
			}
			// The copy changed on disk since it was verified: fetch again.
		}
	}
	if err := os.MkdirAll(filepath.Join(v.Dir, "trees"), 0o755); err != nil {
		return nil, err
	}
	_ = os.RemoveAll(dir)
	stage, err := os.MkdirTemp(filepath.Join(v.Dir, "trees"), ".stage-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	f := v.Fetcher
	if f == nil {
		cfg, err := fetch.FromEnv(os.Getenv)
		if err != nil {
			return nil, err
		}
		f = source.NewFetcher(cfg)
	}
	var hops *hopGate
	if gate != nil {
		hops = &hopGate{gate: gate, entry: h.Entry.Source}
		gated := *f
		gated.Gate = hops
		f = &gated
	}
	res, err := f.Fetch(ctx, source.Request{Plugin: h.ID.String(), Source: h.Entry.Source, MarketplaceDir: h.Root, Dest: stage})
	if err != nil {
		return nil, err
	}
	p, _, err := plugin.Load(stage, h.Entry)
	if err != nil {
		return nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeManifestInvalid, Object: h.ID.String(), Err: err,
			Hint: "the fetched plugin is invalid; report it to the marketplace's owner (" + source.Describe(h.Entry.Source) + ")"}
	}
	version := plugin.VersionOf(plugin.VersionSources{Manifest: p.Manifest.Version, Entry: h.Entry.Version, Fetched: res.Version,
		SourceCommit: res.Commit, MarketplaceCommit: h.Known.Commit})
	if version == "" {
		version = plugin.UnknownVersion
	}
	tree, err := trust.CheckIntegrity(h.ID, version, h.Entry.Integrity, stage)
	if err != nil {
		return nil, err
	}
	// The copy's files are durable before it takes its place, and its
	// metadata (written after) never names a tree a crash left partial.
	if err := atomicfile.CommitDir(stage, dir); err != nil {
		return nil, fmt.Errorf("vendor %s: %w", h.ID, err)
	}
	vd := Vendored{Dir: dir, Digest: tree.Digest, Commit: res.Commit, Version: version, Source: source.Describe(h.Entry.Source), Entry: h.Entry}
	if vd.Commit == "" && h.Entry.Source.Kind == plugin.SourceRelative {
		vd.Commit = h.Known.Commit
	}
	if hops != nil {
		hops.mu.Lock()
		vd.Gated, vd.Hops = true, hops.hops
		hops.mu.Unlock()
	}
	b, _ := json.Marshal(vd)
	if err := atomicfile.WriteFile(meta, b, 0o644); err != nil {
		return nil, err
	}
	return &vd, nil
}

// Prune removes the copies no build has used since now-Keep, and what a
// fetch killed midway left: staging directories and trees without their
// metadata, of the same age. It returns how many entries it removed. A copy
// is removed under its own lock, metadata first, so that a build using it
// meanwhile either finds it whole or fetches it again.
func (v *Vendor) Prune(now time.Time) (int, error) {
	keep := v.Keep
	if keep <= 0 {
		keep = DefaultKeep
	}
	cutoff := now.Add(-keep)
	trees := filepath.Join(v.Dir, "trees")
	ents, err := os.ReadDir(trees)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("prune vendored copies: %w", err)
	}
	old := func(path string) bool {
		fi, err := os.Lstat(path)
		return err == nil && fi.ModTime().Before(cutoff)
	}
	removed := 0
	var errs []error
	for _, e := range ents {
		name := e.Name()
		path := filepath.Join(trees, name)
		key, isMeta := strings.CutSuffix(name, ".json")
		switch {
		case strings.HasPrefix(name, ".stage-"):
			if old(path) {
				if err := os.RemoveAll(path); err != nil {
					errs = append(errs, err)
					continue
				}
				removed++
			}
		case isMeta || e.IsDir():
			unlock := v.lock(key)
			meta, dir := filepath.Join(trees, key+".json"), filepath.Join(trees, key)
			_, metaErr := os.Lstat(meta)
			// A copy goes when its metadata (touched on each use) is old;
			// a tree without metadata when the tree itself is.
			if (metaErr == nil && old(meta)) || (errors.Is(metaErr, fs.ErrNotExist) && !isMeta && old(dir)) {
				err := os.Remove(meta)
				if err == nil || errors.Is(err, fs.ErrNotExist) {
					err = os.RemoveAll(dir)
				}
				if err != nil {
					errs = append(errs, err)
				} else {
					removed++
				}
			}
			unlock()
		}
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("prune vendored copies in %s: %w", trees, err)
	}
	return removed, nil
}

// pruneSometimes runs Prune when the last run here is pruneEvery old.
func (v *Vendor) pruneSometimes(now time.Time) (int, error) {
	v.mu.Lock()
	due := now.Sub(v.lastPrune) >= pruneEvery
	if due {
		v.lastPrune = now
	}
	v.mu.Unlock()
	if !due {
		return 0, nil
	}
	return v.Prune(now)
}
