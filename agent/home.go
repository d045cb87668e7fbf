package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
	"time"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

// homeState is a wharf home as Open reads it for an embedding program: the
// installed registry (the home's bbolt file, opened read-only and held
// only while a read runs, so wharf's commands are never locked out by a
// session), its cache (which leases the version dirs a session uses), and
// the sources of the known marketplaces, read again at every load.
type homeState struct {
	paths   layout.Paths
	st      store.Store
	cache   *cache.Cache
	sources atomic.Pointer[map[string]*plugin.MarketplaceSource]
}

// knownBucket is the store bucket of the known marketplaces
// (marketplace.Bucket; the runtime links no marketplace code, which
// fetches). TestKnownMarketplaceRecords keeps the two in step.
const knownBucket = "marketplaces"

// lockWait bounds how long a load waits for a command that holds the
// registry.
const lockWait = 5 * time.Second

func openHome(home string) *homeState {
	p := layout.New(home)
	st := store.OpenBoltOnUse(p.StateDB(), store.Options{ReadOnly: true, LockTimeout: lockWait}, nil)
	// cache.New fails only without a home or a store.
	c, _ := cache.New(cache.Options{Home: home, Store: st})
	return &homeState{paths: p, st: st, cache: c}
}

// installed reports whether the home has a registry yet: a home nothing
// was ever installed in has none, and reads as empty.
func (h *homeState) installed() (bool, error) {
	_, err := os.Stat(h.paths.StateDB())
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// List returns the installed records.
func (h *homeState) List() ([]cache.Record, error) {
	recs, _, err := h.Scan()
	return recs, err
}

// Scan returns the installed records and those that do not decode.
func (h *homeState) Scan() ([]cache.Record, []cache.BrokenRecord, error) {
	if ok, err := h.installed(); !ok {
		return nil, nil, err
	}
	return h.cache.Scan()
}

// Acquire leases the version dirs of the session's set.
func (h *homeState) Acquire(ctx context.Context, paths ...string) (*cache.Lease, error) {
	return h.cache.Acquire(ctx, paths...)
}

// refresh reads the sources of the known marketplaces again, as wharf's
// commands read them (the recorded plugin.MarketplaceSource, which policy
// matches as is): strictKnownMarketplaces and a
// blockedMarketplaces entry naming a source match a plugin by its
// marketplace's source. A source that does not parse is left out, as
// wharf's commands leave it; a record that is not JSON fails the load.
func (h *homeState) refresh() error {
	sources := map[string]*plugin.MarketplaceSource{}
	if ok, err := h.installed(); err != nil {
		return err
	} else if ok {
		err := h.st.View(func(r store.Reader) error {
			kvs, err := r.List(knownBucket, "")
			if err != nil {
				return err
			}
			for _, kv := range kvs {
				var k struct {
					Source json.RawMessage `json:"source"`
				}
				if err := json.Unmarshal(kv.Value, &k); err != nil {
					return fmt.Errorf("store: marketplace record %q is corrupt: %w; remove it with: wharf marketplace remove %s", kv.Key, err, kv.Key)
				}
				var s plugin.MarketplaceSource
				if err := json.Unmarshal(k.Source, &s); err == nil {
					sources[kv.Key] = &s
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	h.sources.Store(&sources)
	return nil
}

// source is a known marketplace's source, or nil.
func (h *homeState) source(name string) *plugin.MarketplaceSource {
	if m := h.sources.Load(); m != nil {
		return (*m)[name]
	}
	return nil
}
