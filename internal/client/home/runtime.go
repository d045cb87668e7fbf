package home

import (
	"context"
	"path/filepath"
	"time"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/internal/cli/shell"
	"github.com/wharfhq/wharf/internal/client/agentlink"
	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

// RuntimeOptions say which agent runtime Runtime builds.
type RuntimeOptions struct {
	// Agent are the caller's runtime options (activator, flag settings,
	// NoMemo). Runtime sets the home, the project, the further managed
	// directory, the policy, the marketplaces' entries, and wires the
	// registry, the revocations and the marketplaces' sources.
	Agent agent.Options
	// Revocations are added to those the policy in force carries, never
	// in their place.
	Revocations policy.Revocations
	// Project is the project directory; "" means SettingsPaths'.
	Project string
	// PluginDirs are loaded for this session only (--plugin-dir).
	PluginDirs []string
	// Session is a long-lived runtime (an agent session): its registry
	// opens state.db for each read and closes it after, so the session
	// never holds the file's lock between loads and the user's `wharf
	// install` or `wharf disable` keep working while an agent runs; it
	// leases the version dirs it uses. The marketplaces' entries and
	// sources are read once, at start, and Runtime releases this Home's
	// store and marketplace lock before it returns.
	Session bool
}

// Runtime builds the agent runtime of this home: registry, policy (under
// the machine's managed layers, which agent.Open reads itself), the
// marketplaces' entries and sources, the settings scopes and the session
// plugin dirs. The caller closes it.
func (h *Home) Runtime(ctx context.Context, ro RuntimeOptions) (*agent.Runtime, error) {
	if ro.Session {
		return h.sessionRuntime(ctx, ro)
	}
	st, err := h.Store()
	if err != nil {
		return nil, err
	}
	c, err := cache.New(cache.Options{Home: h.paths.Home(), Store: st, Grace: h.cfg.Grace})
	if err != nil {
		return nil, err
	}
	if _, err := h.Policy(); err != nil {
		return nil, err
	}
	mgr, err := h.Marketplaces()
	if err != nil {
		return nil, err
	}
	cat, err := mgr.Catalog()
	if err != nil {
		return nil, err
	}
	return h.newRuntime(ctx, ro, cat, c, nil)
}

func (h *Home) sessionRuntime(ctx context.Context, ro RuntimeOptions) (*agent.Runtime, error) {
	mgr, err := h.Marketplaces()
	if err != nil {
		return nil, err
	}
	cat, err := mgr.Catalog()
	if err != nil {
		return nil, err
	}
	// Everything below reads the store through sessionStore.
	if err := h.Close(); err != nil {
		return nil, err
	}
	if _, err := h.Policy(); err != nil {
		return nil, err
	}
	c, err := cache.New(cache.Options{Home: h.paths.Home(), Store: sessionStore{path: h.paths.StateDB(), timeout: h.cfg.LockTimeout}, Grace: h.cfg.Grace})
	if err != nil {
		return nil, err
	}
	return h.newRuntime(ctx, ro, cat, c, c)
}

func (h *Home) newRuntime(ctx context.Context, ro RuntimeOptions, cat *marketplace.Catalog, c *cache.Cache, leaser agentlink.Leaser) (*agent.Runtime, error) {
	pol, err := h.Policy()
	if err != nil {
		return nil, err
	}
	sources := map[string]*plugin.MarketplaceSource{}
	for _, m := range cat.Marketplaces() {
		src := m.Known.Source
		sources[m.Known.Name] = &src
	}
	paths := h.SettingsPaths()
	if ro.Project != "" {
		abs, err := filepath.Abs(ro.Project)
		if err != nil {
			return nil, shell.UsageError("wharf", err)
		}
		paths.Project = abs
	}
	h.usedPlugins = true
	o := ro.Agent
	o.Home = h.paths.Home()
	// A home this process cannot write keeps the policy memo and the
	// component index in memory: reading needs neither file.
	o.NoMemo = o.NoMemo || h.ReadOnly()
	o.Project = paths.Project
	o.ExtraManagedDir = paths.ExtraManagedDir
	o.Policy = agentlink.Policy(pol).(*agent.Policy)
	o.Entries = func(id plugin.ID) *plugin.Entry {
		if hit, err := cat.Lookup(id); err == nil {
			return hit.Entry
		}
		return nil
	}
	w := agentlink.Wiring{Registry: c, Revocations: append(append(policy.Revocations{}, h.Revocations()...), ro.Revocations...),
		MarketplaceSource: func(name string) *plugin.MarketplaceSource { return sources[name] }}
	if leaser != nil {
		w.Leaser = leaser
	}
	agentlink.Wire(&o, w)
	r, err := agent.Open(o)
	if err != nil {
		return nil, err
	}
	for _, d := range ro.PluginDirs {
		if err := r.AddPluginDir(ctx, d); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

// sessionStore opens the bbolt file for each transaction (shared lock for
// reads) and closes it right after.
type sessionStore struct {
	path    string
	timeout time.Duration
}

func (s sessionStore) View(fn func(store.Reader) error) error {
	b, err := store.OpenBolt(s.path, store.Options{LockTimeout: s.timeout, ReadOnly: true})
	if err != nil {
		return err
	}
	defer b.Close()
	return b.View(fn)
}

func (s sessionStore) Update(fn func(store.Tx) error) error {
	b, err := store.OpenBolt(s.path, store.Options{LockTimeout: s.timeout})
	if err != nil {
		return err
	}
	defer b.Close()
	return b.Update(fn)
}

func (s sessionStore) Close() error { return nil }
