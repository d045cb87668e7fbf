package agent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

// homeState is a wharf home as Open reads it for an embedding program: the
// installed registry (the home's bbolt file, opened read-only and held
// only while a read runs, so wharf's commands are never locked out by a
// session), its cache (which leases the version dirs a session uses), and
// the known marketplaces, whose entries and sources are read again at
// every load.
type homeState struct {
	paths layout.Paths
	st    store.Store
	cache *cache.Cache
	cat   atomic.Pointer[homeCatalog]
}

// homeCatalog is what a load reads of the known marketplaces.
type homeCatalog struct {
	cat     *marketplace.Catalog
	sources map[string]*settings.MarketplaceSource
}

// lockWait bounds how long a load waits for a command that holds the
// registry or the marketplaces.
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

// refresh reads the known marketplaces again, under their shared lock
// (without it when the home is read-only and the lock file cannot be
// made). A marketplace that cannot be read is left out of the entries;
// the registry failing to read fails the load: without the sources,
// policy on marketplace sources could not be applied.
func (h *homeState) refresh(ctx context.Context) error {
	cat := &homeCatalog{cat: &marketplace.Catalog{}, sources: map[string]*settings.MarketplaceSource{}}
	if ok, err := h.installed(); err != nil {
		return err
	} else if !ok {
		h.cat.Store(cat)
		return nil
	}
	wait, cancel := context.WithTimeout(ctx, lockWait)
	unlock, err := cache.RLockFile(wait, h.paths.MarketplacesLock())
	cancel()
	switch {
	case err == nil:
		defer unlock()
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
	default:
		return err
	}
	c, err := marketplace.NewManager(h.st, marketplace.Options{Dir: h.paths.Marketplaces()}).Catalog()
	if err != nil {
		return err
	}
	cat.cat = c
	for _, m := range c.Marketplaces() {
		if s, err := m.Known.Source.Settings(); err == nil {
			cat.sources[m.Known.Name] = &s
		}
	}
	h.cat.Store(cat)
	return nil
}

// entry is a plugin's entry in the known marketplaces, or nil.
func (h *homeState) entry(id plugin.ID) *plugin.Entry {
	if c := h.cat.Load(); c != nil {
		if hit, err := c.cat.Lookup(id); err == nil {
			return hit.Entry
		}
	}
	return nil
}

// source is a known marketplace's source, or nil.
func (h *homeState) source(name string) *settings.MarketplaceSource {
	if c := h.cat.Load(); c != nil {
		return c.sources[name]
	}
	return nil
}
