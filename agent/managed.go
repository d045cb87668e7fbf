package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// ErrNoPolicy is wrapped by the error of Open without Options.Policy: a
// Runtime never runs without a policy.
var ErrNoPolicy = errors.New("agent: Options.Policy is required")

// ErrManagedDir is wrapped by the error of Open with a Settings.ManagedDir
// other than the machine's managed directory.
var ErrManagedDir = errors.New("agent: Options.Settings.ManagedDir must be the machine's managed directory")

// managedGuard is the policy a Runtime opened with Open runs under: the
// machine's managed layers, read by Open itself, and the embedder's policy.
// A request the managed layers deny is denied whatever the embedder's
// policy says, and a plugin they force on or off stays forced: the
// embedder's policy can only tighten.
type managedGuard struct {
	managed *policy.Engine // the managed directories only
	inner   Policy         // the embedder's policy
}

// Decide asks the managed layers first; their denial is final.
func (g *managedGuard) Decide(ctx context.Context, req policy.Request) (policy.Decision, error) {
	m, err := g.managed.Decide(ctx, req)
	if err != nil {
		return policy.Decision{}, err
	}
	if !m.Allowed {
		m.PolicyVersion = g.Version()
		return m, nil
	}
	d, err := g.inner.Decide(ctx, req)
	if err != nil {
		return policy.Decision{}, err
	}
	if m.Forced != "" {
		d.Forced = m.Forced
	}
	d.Warnings = append(append([]string(nil), m.Warnings...), d.Warnings...)
	d.PolicyVersion = g.Version()
	return d, nil
}

// ReadsContent reports whether either policy's decisions can depend on a
// request's capability set (see load.ReadsContent).
func (g *managedGuard) ReadsContent() bool {
	return g.managed.ReadsContent() || load.ReadsContent(g.inner)
}

// Version changes when either policy does.
func (g *managedGuard) Version() string { return g.managed.Version() + "+" + g.inner.Version() }

// Reload re-reads the managed directories and the embedder's policy.
func (g *managedGuard) Reload(ctx context.Context) (bool, error) {
	changed, err := g.managed.Reload(ctx)
	if err != nil {
		return false, err
	}
	if rl, ok := g.inner.(policyReloader); ok {
		c, err := rl.Reload(ctx)
		if err != nil {
			return changed, err
		}
		changed = changed || c
	}
	return changed, nil
}

// memoFile is a Policy that keeps its decisions in a file between
// processes (*policy.Engine opened with policy.WithMemoFile): the guard
// keeps the embedder's policy's memo working.
type memoFile interface {
	MemoFile() string
	LoadMemo()
	SaveMemo() error
}

// guardWithMemo is a managedGuard over a policy that keeps a memo file.
type guardWithMemo struct {
	*managedGuard
	memo memoFile
}

func (g guardWithMemo) MemoFile() string { return g.memo.MemoFile() }
func (g guardWithMemo) LoadMemo()        { g.memo.LoadMemo() }
func (g guardWithMemo) SaveMemo() error  { return g.memo.SaveMemo() }

// withManagedPolicy checks o's policy fields and returns o with its Policy
// under the machine's managed layers.
func withManagedPolicy(o Options) (Options, error) {
	if o.Policy == nil {
		return o, &plugin.Error{Layer: plugin.LayerIntent, Type: "usage", Object: "Options.Policy", Err: ErrNoPolicy,
			Hint: "pass the policy the session runs under (the home's policy engine); the machine's managed layers apply on top of it"}
	}
	sys := settings.SystemManagedDir
	switch {
	case o.Settings.ManagedDir == "":
		o.Settings.ManagedDir = sys
	case filepath.Clean(o.Settings.ManagedDir) != filepath.Clean(sys):
		return o, &plugin.Error{Layer: plugin.LayerIntent, Type: "usage", Object: "Options.Settings.ManagedDir", Err: ErrManagedDir,
			Hint: "leave it empty (it is " + sys + "); a further managed directory goes in Options.Settings.ExtraManagedDir, which can only tighten"}
	}
	managed, err := policy.Open(policy.Sources{ManagedDir: o.Settings.ManagedDir, ExtraManagedDir: o.Settings.ExtraManagedDir})
	if err != nil {
		return o, err
	}
	if len(managed.LayerNames()) == 0 && !dirExists(o.Settings.ManagedDir) && !dirExists(o.Settings.ExtraManagedDir) {
		// No managed directory on this machine: nothing to guard (one
		// created later applies from the next Open).
		return o, nil
	}
	g := &managedGuard{managed: managed, inner: o.Policy}
	if mf, ok := o.Policy.(memoFile); ok {
		o.Policy = guardWithMemo{managedGuard: g, memo: mf}
	} else {
		o.Policy = g
	}
	return o, nil
}

func dirExists(dir string) bool {
	if dir == "" {
		return false
	}
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}
