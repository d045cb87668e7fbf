package home

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/toolpin"
	"github.com/wharfhq/wharf/plugin"
)

// Options are what Open needs besides the home's paths and Config: where
// the command's progress and warnings go, and the process environment.
// None of them changes which policy applies.
type Options struct {
	// Paths is WHARF_HOME and the paths under it.
	Paths layout.Paths
	// Config is the command's configuration (Default, Parse, Validate);
	// Open validates it again.
	Config Config
	// Project is the project root of the settings' project scopes; ""
	// means the nearest directory above the working directory with a
	// .wharf or .git, else the working directory.
	Project string
	// Progress receives git's output and progress bars; nil for none.
	Progress io.Writer
	// Warn receives warnings (policy warnings, a policy memo that could
	// not be saved) without a prefix; nil drops them.
	Warn func(msg string)
	// Getenv is the process environment; nil means os.Getenv. Variables
	// the Config resolves (WHARF_GITHUB_HOST) are answered from it.
	Getenv func(string) string
	// Clock, when set, is the clock policy decides waivers' expiry by. It
	// may only run ahead of the real time (a waiver expires sooner, never
	// revives): Open refuses one behind it.
	Clock func() time.Time
}

// Home is one command's view of a wharf home: it opens the store, the
// marketplaces, policy, the cache, the installer and the agent runtime on
// first use, and Close releases all of them. A Home serves one command;
// two Homes over the same directory share nothing but the files and their
// locks.
type Home struct {
	paths    layout.Paths
	cfg      Config
	project  string
	progress io.Writer
	warn     func(string)
	getenv   func(string) string
	clock    func() time.Time

	st     *store.OnUse
	roHome *bool
	// mktWriter marks a command that changes marketplaces; mktUnlock
	// releases the shared marketplace lock a reading command holds.
	mktWriter bool
	mktUnlock func()

	pol             *policy.Engine
	hasPolicyServer bool
	// admissions are those of the policy bundles LoadPolicy last pulled,
	// one per server that carries some.
	admissions []*policy.Admissions
	// bundlePins are the tool pins of the policy bundles LoadPolicy last
	// pulled; the engine holds them.
	bundlePins  []toolpin.Pin
	usedPlugins bool
}

// Open checks o and returns the Home; it opens nothing until a command
// asks (Store, Marketplaces, Policy, Installer, Runtime). A bad Config is
// a usage error naming the key.
func Open(o Options) (*Home, error) {
	if o.Paths.Home() == "" {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "home",
			Err:  errors.New("configuration home: no wharf home directory"),
			Hint: "set WHARF_HOME (or --home) to wharf's state directory"}
	}
	if !filepath.IsAbs(o.Paths.Home()) {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "home",
			Err:  fmt.Errorf("configuration home: %q is not an absolute path", o.Paths.Home()),
			Hint: "give WHARF_HOME (or --home) as an absolute path"}
	}
	cfg := o.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if o.Clock != nil && o.Clock().Before(time.Now()) {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "Options.Clock",
			Err:  errors.New("the policy clock is behind the real time: it would revive expired waivers"),
			Hint: "leave Options.Clock unset, or give one at or after the real time"}
	}
	h := &Home{paths: o.Paths, cfg: cfg, project: o.Project, progress: o.Progress, warn: o.Warn, getenv: o.Getenv, clock: o.Clock}
	if h.warn == nil {
		h.warn = func(string) {}
	}
	if h.getenv == nil {
		h.getenv = os.Getenv
	}
	return h, nil
}

// Paths is WHARF_HOME and the paths under it.
func (h *Home) Paths() layout.Paths { return h.paths }

// Config is the configuration the home was opened with.
func (h *Home) Config() Config { return h.cfg }

// Progress is where progress goes; nil for nowhere.
func (h *Home) Progress() io.Writer { return h.progress }

// Getenv is the environment as marketplaces and plugin sources see it,
// with configured values (github-host) in place of the raw variables.
func (h *Home) Getenv(k string) string {
	if k == "WHARF_GITHUB_HOST" {
		return h.cfg.GitHubHost
	}
	return h.getenv(k)
}

// UsedPlugins reports whether the command read the installed plugins
// (built an installer or a runtime).
func (h *Home) UsedPlugins() bool { return h.usedPlugins }

// HasPolicyServer reports whether the policy in force names a server.
func (h *Home) HasPolicyServer() bool { return h.hasPolicyServer }

// Store opens state.db on first use. A second wharf process waits up to
// lock-timeout for the first to finish, then fails with a clear message.
func (h *Home) Store() (store.Store, error) {
	if h.st != nil {
		return h.st, nil
	}
	// The file is held only while a transaction runs, so a long command
	// (an install fetching plugins) does not lock out an agent starting
	// or a `wharf list` meanwhile.
	// A home this process cannot write (a baked image, a sandboxed agent)
	// is opened read-only: reading commands work, writing ones fail on
	// their first write with the hint of StoreOpenError.
	h.st = store.OpenBoltOnUse(h.paths.StateDB(), store.Options{LockTimeout: h.cfg.LockTimeout, ReadOnly: h.ReadOnly()},
		func(err error) error { return StoreOpenError(h.paths, err) })
	return h.st, nil
}

// Close saves the policy decisions made for the next command, releases
// the marketplace lock and closes the store. The Home may be used again
// after it: what it needs is opened again.
func (h *Home) Close() error {
	h.saveMemo()
	if h.mktUnlock != nil {
		h.mktUnlock()
		h.mktUnlock = nil
	}
	if h.st == nil {
		return nil
	}
	err := h.st.Close()
	h.st = nil
	return err
}

// ReadOnly reports whether this process cannot write WHARF_HOME (or its
// state.db). Reading commands then create, lock for writing and rewrite
// nothing there: no lock file, no policy memo, state.db opened read-only.
func (h *Home) ReadOnly() bool {
	if h.roHome != nil {
		return *h.roHome
	}
	ro := false
	home := h.paths.Home()
	if _, err := os.Stat(home); err == nil {
		ro = !writable(home)
		if _, err := os.Stat(h.paths.StateDB()); err == nil && !writable(h.paths.StateDB()) {
			ro = true
		}
	}
	h.roHome = &ro
	return ro
}

// saveMemo keeps the policy decisions this command made for the next one.
// Nothing is written when WHARF_HOME does not exist (a command that only
// read policy); a write that fails costs the next command speed, not
// correctness, so it is a warning.
func (h *Home) saveMemo() {
	if h.pol == nil || h.ReadOnly() {
		return
	}
	if fi, err := os.Stat(h.paths.Home()); err != nil || !fi.IsDir() {
		return
	}
	if err := h.pol.SaveMemo(); err != nil {
		if hint := plugin.HintOf(err); hint != "" {
			h.warn(fmt.Sprintf("%v (%s)", err, hint))
			return
		}
		h.warn(err.Error())
	}
}

// lockWait bounds how long a command waits for the marketplace lock.
func (h *Home) lockWait(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, h.cfg.LockTimeout)
}

// WithMarketplaceLock runs fn holding the marketplace lock
// ($WHARF_HOME/marketplaces/.lock) exclusively: marketplace add, update
// and remove hold it around each change (a git update rewrites its clone
// in place). Only a command that got its Manager from MarketplaceWriter
// may call it.
func (h *Home) WithMarketplaceLock(ctx context.Context, fn func(context.Context) error) error {
	wait, cancel := h.lockWait(ctx)
	defer cancel()
	unlock, err := cache.LockFile(wait, h.paths.MarketplacesLock())
	if err != nil {
		return err
	}
	defer unlock()
	return fn(ctx)
}

// MarketplaceWriter returns the Manager for a command that changes
// marketplaces: it takes the marketplace lock exclusively per change
// (WithMarketplaceLock), never shared.
func (h *Home) MarketplaceWriter() (*marketplace.Manager, error) {
	h.mktWriter = true
	return h.Marketplaces()
}

// DoneWriting ends a command's marketplace changes: from here on it only
// reads them, and the next Marketplaces takes the lock shared, like any
// reader, so no other command rewrites a clone while plugins are copied
// out of it.
func (h *Home) DoneWriting() error {
	h.mktWriter = false
	_, err := h.Marketplaces()
	return err
}

// Marketplaces returns a Manager over the store and
// WHARF_HOME/marketplaces. A reading command holds the marketplace lock
// shared from its first call to Close, so it never copies a plugin out of
// a half-updated clone; readers do not wait for each other.
func (h *Home) Marketplaces() (*marketplace.Manager, error) {
	st, err := h.Store()
	if err != nil {
		return nil, err
	}
	if !h.mktWriter && h.mktUnlock == nil {
		wait, cancel := h.lockWait(context.Background())
		var unlock func()
		var err error
		if h.ReadOnly() {
			unlock, err = readOnlyRLock(wait, h.paths.MarketplacesLock())
		} else {
			unlock, err = cache.RLockFile(wait, h.paths.MarketplacesLock())
		}
		cancel()
		if err != nil {
			return nil, err
		}
		h.mktUnlock = unlock
	}
	return marketplace.NewManager(st, marketplace.Options{
		Dir:         h.paths.Marketplaces(),
		Gate:        policyGate{h},
		ProgressBar: h.progress,
		Fetch:       h.cfg.Fetch,
	}), nil
}

// readOnlyRLock takes the marketplace lock shared without creating or
// writing anything: the lock file is opened read-only (flock needs no
// write access). When it does not exist, no marketplace was ever changed
// through a lock here, and a home this process cannot write needs none.
func readOnlyRLock(ctx context.Context, path string) (func(), error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil
	}
	l := flock.New(path, flock.SetFlag(os.O_RDONLY))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := l.TryRLock()
		if ok {
			return func() { l.Unlock() }, nil
		}
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) && pe.Op == "open" {
				return nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeSource, Object: path, Err: err,
					Hint: "make the file readable, or run wharf as a user who can read " + filepath.Dir(path)}
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			return nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeStoreLocked, Object: path, Err: ctx.Err(),
				Hint: "a marketplace add, update or remove is running; wait for it, or raise WHARF_LOCK_TIMEOUT"}
		case <-tick.C:
		}
	}
}

// The error types of a state.db that does not open.
const (
	TypeStoreDamaged    = "store-damaged"
	TypeStorePermission = "store-permission"
	TypeStoreLocked     = "store-locked"
)

// StoreOpenError says why state.db did not open, with the way out: held
// by another command, damaged, or not readable by this user.
func StoreOpenError(paths layout.Paths, err error) error {
	path := paths.StateDB()
	pe := &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeStoreLocked, Object: path, Err: err,
		Hint: "check that " + paths.Home() + " is writable"}
	switch {
	case errors.Is(err, store.ErrLocked):
		pe.Hint = "another wharf command is using " + path + "; wait for it to finish, or raise WHARF_LOCK_TIMEOUT"
	case errors.Is(err, store.ErrCorrupt):
		pe.Type = TypeStoreDamaged
		pe.Hint = "run: wharf doctor --repair (it keeps the damaged file aside and rebuilds the installed registry from the plugin cache)"
	case errors.Is(err, fs.ErrPermission):
		pe.Type = TypeStorePermission
		pe.Hint = "this is a permission problem, not damage: give your user read and write access to " + path + " and " + paths.Home() + " (or run wharf as their owner)"
	}
	return pe
}
