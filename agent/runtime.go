package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/wharfhq/wharf/internal/client/agentlink"
	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// Activator makes components live in the embedding agent: it registers a
// command, arms a hook, starts a server. Activate returns the undo of exactly
// that registration; the Runtime runs undos last-in-first-out.
//
// During a reload a component may be activated while an older component with
// the same Key is still active (a plugin update changed its content): the
// newer registration must win, and the older undo must remove only its own
// registration. Activate and the undos are called from one goroutine at a
// time (loads are serialized), while the Runtime's lock is held: they must
// not call Load, AddPluginDir or Close (Current is fine).
type Activator interface {
	Activate(ctx context.Context, c Component) (undo func() error, err error)
}

// ActivatorFunc adapts a function to Activator.
type ActivatorFunc func(ctx context.Context, c Component) (func() error, error)

// Activate calls f.
func (f ActivatorFunc) Activate(ctx context.Context, c Component) (func() error, error) {
	return f(ctx, c)
}

// Options configure a Runtime.
type Options struct {
	// Home is WHARF_HOME: the installed registry and cache, the user
	// scope's settings, user components (commands/, skills/, agents/),
	// plugin data dirs (data/<marketplace>/<plugin>), the known
	// marketplaces and the policy memo. Required.
	Home string
	// Project is the project directory (CLAUDE_PROJECT_DIR; project
	// components under .wharf/, the project and local scopes' settings);
	// "" for none.
	Project string
	// ExtraManagedDir is a further managed directory (what wharf's
	// commands take from WHARF_MANAGED_DIR), read after the machine's:
	// like every lower layer it can only tighten. "" for none.
	ExtraManagedDir string
	// FlagSettings is the flag scope's settings document (may be nil).
	FlagSettings []byte
	// Policy decides, below the machine's managed layers, which Open
	// reads itself: a request they deny is denied whatever Policy says.
	// Required (Open fails without it): LoadPolicy() with no paths is
	// the managed layers alone.
	Policy *Policy
	// Entries returns a plugin's marketplace entry (for entries that define
	// components, strict: false), or nil. Optional: without it, such a
	// plugin loads the components of its own files alone.
	Entries func(plugin.ID) *plugin.Entry
	// Builtins are the agent's own components; they win every collision.
	Builtins []Builtin
	// Activator makes components live; nil only computes sets.
	Activator Activator
	// Workers bounds the plugins loaded in parallel (default GOMAXPROCS).
	Workers int
	// NoMemo keeps policy decisions and the component index in memory
	// only: no component index and no policy memo file under Home.
	NoMemo bool
	// AfterLoad, when set, is called with each set a Load made current
	// (e.g. to report the inventory in the background). It must not block.
	AfterLoad func(*Set)

	// wiring is what wharf's own commands give in place of what Open
	// reads from the home (agentlink.Wire).
	wiring *agentlink.Wiring
}

// config is what a Runtime runs on: the Options and what Open made of them
// (the settings paths, the registry, the compiled policy). The package's
// tests build configs of their own.
type config struct {
	Options
	// Settings says where each scope's settings file is.
	Settings settings.Paths
	// Registry lists the installed plugins.
	Registry registry
	// Leaser, when set, leases the version dirs of the current set for the
	// session, so garbage collection keeps them (*cache.Cache).
	Leaser leaser
	// softLease: a lease that cannot be taken is a warning of the set,
	// not a failed load (the home Open opened itself may be read-only).
	softLease bool
	// Policy is the compiled policy every decision asks.
	Policy enginePolicy
	// Revocations are the revocations in force (those the signed policy
	// bundle carries): a plugin one matches, by id and version or by its
	// content digest, is failed (revoked) and its dependents are demoted.
	Revocations policy.Revocations
	// MarketplaceSource returns a known marketplace's source for policy
	// (strictKnownMarketplaces, blockedMarketplaces), or nil.
	MarketplaceSource func(name string) *plugin.MarketplaceSource
	// home, when set, is the home Open reads the known marketplaces'
	// sources of at every load (MarketplaceSource above).
	home *homeState
}

// Errors of the Runtime's lifecycle.
var (
	// ErrLateSideload: AddPluginDir after the first load.
	ErrLateSideload = errors.New("session plugin dirs must be added before the first load")
	// ErrClosed: the Runtime was closed.
	ErrClosed = errors.New("agent runtime is closed")
)

// Runtime holds the current Set of one agent session and the activations
// that made it live. It is safe for concurrent use; Load, AddPluginDir and
// Close are serialized, Current never blocks.
type Runtime struct {
	o     config
	dec   *load.Decider
	index *componentIndex
	// contents keeps the capability sets policy decides on, by content
	// digest (under the home when there is one).
	contents *load.Contents
	cur      atomic.Pointer[Set]

	mu      sync.Mutex
	inline  []string
	loaded  bool
	closed  bool
	active  []activation // in activation order
	lease   *cache.Lease
	dataDir map[string]bool
}

type activation struct {
	key, sum string
	undo     func() error
}

// Open returns a Runtime over o.Home. Options.Policy is required: without
// it Open fails (ErrNoPolicy) rather than run a session nothing decides
// for. Open reads the machine's managed layers itself (the system managed
// directory and Options.ExtraManagedDir) and puts Options.Policy under
// them, so no embedder's policy drops or loosens what they say. It opens
// the home's installed registry (read-only, held only while a load reads
// it) and reads the settings of every scope, the known marketplaces'
// sources and the installed plugins at each Load; only the managed
// directories are read now.
func Open(o Options) (*Runtime, error) {
	c, err := configure(o)
	if err != nil {
		return nil, err
	}
	return open(c)
}

// configure derives the config of o: the settings paths (the managed scope
// is always the machine's directory), the registry (the command's, or the
// home's) and the compiled policy.
func configure(o Options) (config, error) {
	c := config{Options: o}
	if o.Policy == nil {
		return c, &plugin.Error{Layer: plugin.LayerIntent, Type: "usage", Object: "Options.Policy", Err: ErrNoPolicy,
			Hint: "pass the policy the session runs under: agent.LoadPolicy() for the machine's managed layers alone, or with the paths of your own layers, which can only tighten them"}
	}
	c.Settings = settings.Paths{Home: o.Home, Project: o.Project, ManagedDir: settings.SystemManagedDir(), ExtraManagedDir: o.ExtraManagedDir}
	if w := o.wiring; w != nil && w.Registry != nil {
		c.Registry, c.Leaser, c.Revocations, c.MarketplaceSource = w.Registry, w.Leaser, w.Revocations, w.MarketplaceSource
	} else {
		if o.Home == "" {
			return c, &plugin.Error{Layer: plugin.LayerIntent, Type: "usage", Object: "Options.Home", Err: errors.New("agent: Options.Home is required"),
				Hint: "pass the wharf home (WHARF_HOME, by default ~/.wharf) whose installed plugins the session loads"}
		}
		h := openHome(o.Home)
		c.home, c.Registry, c.Leaser, c.softLease, c.MarketplaceSource = h, h, h, true, h.source
	}
	var err error
	if c.Policy, err = o.Policy.compile(c.Settings, o.Home, o.NoMemo); err != nil {
		return c, err
	}
	return c, nil
}

// open puts c's policy under the managed layers and returns its Runtime.
func open(c config) (*Runtime, error) {
	c, err := withManagedPolicy(c)
	if err != nil {
		return nil, err
	}
	return newRuntime(c)
}

// newRuntime builds a Runtime over c as given (the package's tests build
// worlds with their own managed directories).
func newRuntime(o config) (*Runtime, error) {
	if o.Registry == nil {
		return nil, errors.New("agent: no registry")
	}
	if o.Workers <= 0 {
		o.Workers = defaultWorkers()
	}
	r := &Runtime{o: o, dec: load.NewDecider(o.Policy), index: &componentIndex{}, dataDir: map[string]bool{}}
	if o.Home != "" {
		r.contents = load.NewContents(layout.New(o.Home).Capabilities())
	} else {
		r.contents = load.NewContents("")
	}
	if o.Home != "" && !o.NoMemo {
		r.index.file, r.index.legacy = layout.New(o.Home).AgentIndex(), layout.New(o.Home).AgentLegacyIndex()
	}
	return r, nil
}

// AddPluginDir registers a session plugin dir (--plugin-dir, source
// "inline", never persisted). It must be called before the first Load;
// afterwards it fails with an intent error wrapping ErrLateSideload. Policy
// (disableSideloadFlags) is asked now, and again at every load.
func (r *Runtime) AddPluginDir(ctx context.Context, dir string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if r.loaded {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: "usage", Object: dir, Err: ErrLateSideload,
			Hint: "pass --plugin-dir when the session starts; it cannot be added to a running session"}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: "usage", Object: dir, Err: err}
	}
	r.dec.Begin()
	if err := r.dec.Check(ctx, policy.Request{Action: policy.ActionSideload, Path: abs}); err != nil {
		return err
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		if err == nil {
			err = fmt.Errorf("%s is not a directory", abs)
		}
		return &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeNotFound, Object: abs, Err: err,
			Hint: "pass a plugin directory (one with .claude-plugin/plugin.json or commands/, skills/, ...)"}
	}
	for _, d := range r.inline {
		if d == abs {
			return nil
		}
	}
	r.inline = append(r.inline, abs)
	return nil
}

// Home is Options.Home (WHARF_HOME; "" for none).
func (r *Runtime) Home() string { return r.o.Home }

// Project is Options.Project ("" for none).
func (r *Runtime) Project() string { return r.o.Project }

// Current returns the current Set, or nil before the first successful load.
func (r *Runtime) Current() *Set { return r.cur.Load() }

// policyReloader is a Policy that can re-read its inputs (*policy.Engine).
type policyReloader interface {
	Reload(ctx context.Context) (bool, error)
}

// Load builds the complete Set of mode from the settings, the registry and
// the cache as they are now, activates what is new, swaps the Set in, then
// undoes what is gone (last-in-first-out). On error the previous Set and its
// activations stay in place. The first Load of a session is the startup
// load; later ones are reloads. A Full load after a CacheOnly one replaces
// its result.
func (r *Runtime) Load(ctx context.Context, mode Mode) (*Set, error) {
	if mode != CacheOnly && mode != Full {
		return nil, fmt.Errorf("agent: unknown load mode %d", int(mode))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	r.loaded = true
	// A reload also picks up a policy change (managed files, --policy layers,
	// the server's bundle): intent, policy included, takes effect at an
	// explicit reload. A policy that cannot be read keeps the previous one.
	var polWarn string
	if r.cur.Load() != nil {
		if rl, ok := r.o.Policy.(policyReloader); ok {
			if _, err := rl.Reload(ctx); err != nil {
				polWarn = "policy not reloaded, the previous policy stays in force: " + err.Error()
			}
		}
	}
	// The memo and the index are read while the settings and the registry
	// are: they are independent, and this is the startup path.
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.dec.Begin() }()
	go func() { defer wg.Done(); r.index.load() }()
	snap, err := settings.Load(r.o.Settings, r.o.FlagSettings)
	if err != nil {
		wg.Wait()
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: settings.TypeSettingsInvalid, Err: err, Hint: "fix the settings file named above"}
	}
	if r.o.home != nil {
		if err := r.o.home.refresh(); err != nil {
			wg.Wait()
			return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeSource, Object: r.o.Home, Err: err,
				Hint: "the known marketplaces could not be read; check WHARF_HOME, or wait for the wharf command that holds it"}
		}
	}
	var recs []cache.Record
	var broken []cache.BrokenRecord
	if sc, ok := r.o.Registry.(registryScanner); ok {
		recs, broken, err = sc.Scan()
	} else {
		recs, err = r.o.Registry.List()
	}
	wg.Wait()
	if err != nil {
		return nil, err
	}
	in := &loadInput{snap: snap, recs: recs, broken: broken, inline: r.inline, dec: r.dec, index: r.index, contents: r.contents, mode: mode, o: &r.o, workers: r.o.Workers}
	set, err := build(ctx, in)
	if err != nil {
		return nil, err
	}
	if polWarn != "" {
		set.warnings = append(set.warnings, polWarn)
	}
	if !r.o.NoMemo {
		if err := r.dec.Save(); err != nil {
			set.warnings = append(set.warnings, "policy decisions not memoized: "+err.Error())
		}
	}
	if err := r.index.save(recs); err != nil {
		set.warnings = append(set.warnings, "component index not saved: "+err.Error())
	}
	var lease *cache.Lease
	if r.o.Leaser != nil && len(set.paths) > 0 {
		if lease, err = r.o.Leaser.Acquire(ctx, set.paths...); err != nil {
			if !r.o.softLease {
				return nil, err
			}
			lease = nil
			set.warnings = append(set.warnings, "the plugins' version directories are not leased for the session, so `wharf gc` may remove one it no longer needs: "+err.Error())
		}
	}
	removed, err := r.activate(ctx, set)
	if err != nil {
		if lease != nil {
			lease.Release()
		}
		return nil, err
	}
	r.cur.Store(set)
	if r.o.AfterLoad != nil {
		r.o.AfterLoad(set)
	}
	var errs []error
	for i := len(removed) - 1; i >= 0; i-- {
		if err := removed[i].undo(); err != nil {
			errs = append(errs, fmt.Errorf("deactivate %s: %w", printable(removed[i].key), err))
		}
	}
	if r.lease != nil {
		if err := r.lease.Release(); err != nil {
			errs = append(errs, err)
		}
	}
	r.lease = lease
	if len(errs) > 0 {
		// The new set is in place; a failed undo is reported, not reverted.
		return set, &plugin.Error{Layer: plugin.LayerActive, Type: plugin.TypeComponentLoad, Object: "reload",
			Err: errors.Join(errs...), Hint: "the new plugin set is active; restart the session to clear what could not be deactivated"}
	}
	return set, nil
}

// activate makes set's new components live and returns the activations the
// set no longer has, in activation order. On error it undoes (LIFO) what it
// activated and leaves r.active unchanged.
func (r *Runtime) activate(ctx context.Context, set *Set) ([]activation, error) {
	if r.o.Activator == nil {
		return nil, nil
	}
	old := map[string]int{}
	for i, a := range r.active {
		old[a.key+"\x00"+a.sum] = i
	}
	keep := make([]bool, len(r.active))
	var added []activation
	for _, c := range set.comps {
		id := c.Key() + "\x00" + c.sum
		if i, ok := old[id]; ok {
			keep[i] = true
			continue
		}
		if c.DataDir != "" && !r.dataDir[c.DataDir] && (c.Kind == "hook" || c.Kind == "mcp-server" || c.Kind == "lsp-server") {
			if err := os.MkdirAll(c.DataDir, 0o755); err != nil {
				rollback(added)
				return nil, &plugin.Error{Layer: plugin.LayerActive, Type: plugin.TypeComponentLoad, Object: c.Plugin.String(), Err: err,
					Hint: "check that WHARF_HOME is writable"}
			}
			r.dataDir[c.DataDir] = true
		}
		undo, err := r.o.Activator.Activate(ctx, *c)
		if err != nil {
			rollback(added)
			obj := c.Name
			if c.Source == SourcePlugin {
				obj = c.Plugin.String()
			}
			return nil, &plugin.Error{Layer: plugin.LayerActive, Type: plugin.TypeComponentLoad, Object: obj,
				Err: fmt.Errorf("activate %s %s: %w", c.Kind, c.Name, err), Hint: "the previous plugin set stays active; fix the component and reload"}
		}
		if undo == nil {
			undo = func() error { return nil }
		}
		added = append(added, activation{key: c.Key(), sum: c.sum, undo: undo})
	}
	var kept, removed []activation
	for i, a := range r.active {
		if keep[i] {
			kept = append(kept, a)
		} else {
			removed = append(removed, a)
		}
	}
	r.active = append(kept, added...)
	return removed, nil
}

func rollback(added []activation) {
	for i := len(added) - 1; i >= 0; i-- {
		added[i].undo()
	}
}

// Close deactivates every component, last-in-first-out, and releases the
// session's lease. The Runtime cannot be used afterwards.
func (r *Runtime) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	for i := len(r.active) - 1; i >= 0; i-- {
		if err := r.active[i].undo(); err != nil {
			errs = append(errs, fmt.Errorf("deactivate %s: %w", printable(r.active[i].key), err))
		}
	}
	r.active = nil
	if r.lease != nil {
		if err := r.lease.Release(); err != nil {
			errs = append(errs, err)
		}
		r.lease = nil
	}
	return errors.Join(errs...)
}

func printable(key string) string {
	b := []byte(key)
	for i, c := range b {
		if c == 0 {
			b[i] = ' '
		}
	}
	return string(b)
}
