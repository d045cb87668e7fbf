package agent

import (
	"context"
	"os"
	"sync/atomic"

	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/plugin"
)

// managedGuard is the policy a Runtime opened with Open runs under: the
// machine's managed layers, read by Open itself, and the embedder's policy.
// A request the managed layers deny is denied whatever the embedder's
// policy says, and a plugin they force on or off stays forced: the
// embedder's policy can only tighten.
type managedGuard struct {
	managed *policy.Engine // the managed directories only
	inner   enginePolicy   // the embedder's policy
	// askBoth asks the managed layers apart even when the embedder's
	// policy has them (BenchmarkOpenManaged100 measures what that costs).
	askBoth bool
	// joined is the last "managed+inner" version made (join): a session
	// start decides over a thousand requests under one pair of versions.
	joined atomic.Pointer[joinedVersion]
}

type joinedVersion struct{ mv, v, s string }

// join is mv + "+" + v, the version of a decision of both policies.
func (g *managedGuard) join(mv, v string) string {
	if j := g.joined.Load(); j != nil && j.mv == mv && j.v == v {
		return j.s
	}
	s := mv + "+" + v
	g.joined.Store(&joinedVersion{mv: mv, v: v, s: s})
	return s
}

// extender is a Policy that can tell whether it already contains the
// managed layers (*policy.Engine).
type extender interface {
	Extends(m *policy.Engine) (version, mVersion string, ok bool)
}

// Decide asks the managed layers first; their denial is final. When the
// embedder's policy already has the managed layers as its highest layers
// (wharf's own commands open the home's policy over the same directories),
// it alone decides: one evaluation per request, answered from its memo
// when it keeps one, and what it decides is what asking both would.
func (g *managedGuard) Decide(ctx context.Context, req policy.Request) (policy.Decision, error) {
	if x, ok := g.inner.(extender); ok && !g.askBoth {
		if v, mv, ok := x.Extends(g.managed); ok {
			d, err := g.inner.Decide(ctx, req)
			if err != nil {
				return policy.Decision{}, err
			}
			// The comparison holds for the versions compared; a
			// reload in between (either side) asks both below.
			if d.PolicyVersion == v && g.managed.Version() == mv {
				d.PolicyVersion = g.join(mv, v)
				return d, nil
			}
		}
	}
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
func (g *managedGuard) Version() string { return g.join(g.managed.Version(), g.inner.Version()) }

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

// withManagedPolicy returns c with its Policy under the machine's managed
// layers (c.Settings' managed directories, read now).
func withManagedPolicy(c config) (config, error) {
	if c.Policy == nil {
		return c, &plugin.Error{Layer: plugin.LayerIntent, Type: "usage", Object: "Options.Policy", Err: ErrNoPolicy,
			Hint: "pass the policy the session runs under; the machine's managed layers apply on top of it"}
	}
	managed, err := policy.Open(policy.Sources{ManagedDir: c.Settings.ManagedDir, ExtraManagedDir: c.Settings.ExtraManagedDir})
	if err != nil {
		return c, err
	}
	if len(managed.LayerNames()) == 0 && !dirExists(c.Settings.ManagedDir) && !dirExists(c.Settings.ExtraManagedDir) {
		// No managed directory on this machine: nothing to guard (one
		// created later applies from the next Open).
		return c, nil
	}
	g := &managedGuard{managed: managed, inner: c.Policy}
	if mf, ok := c.Policy.(memoFile); ok {
		c.Policy = guardWithMemo{managedGuard: g, memo: mf}
	} else {
		c.Policy = g
	}
	return c, nil
}

func dirExists(dir string) bool {
	if dir == "" {
		return false
	}
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}
