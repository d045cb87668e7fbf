// Package worldtest builds a real wharf home for the tests of the agent's
// sub-packages: testworld's home (a bbolt registry, a versioned cache,
// user, project and managed settings, all in temp dirs) and an
// agent.Runtime over it.
package worldtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/internal/client/agentlink"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/internal/testutil/testworld"
)

// World is a wharf home, a project and a managed directory.
type World struct {
	*testworld.World
}

// New makes a World under tb.TempDir(); everything is closed at cleanup.
func New(tb testing.TB) *World {
	tb.Helper()
	return &World{testworld.New(tb)}
}

// WriteTree and MakeWritable are testworld's, for the tests that use World.
var (
	WriteTree    = testworld.WriteTree
	MakeWritable = testworld.MakeWritable
)

// Tests never read the machine's real managed directory: the system
// managed directory of a test binary that uses World is one that does not
// exist, and each World's managed directory is the further one
// (Settings.ExtraManagedDir), as WHARF_MANAGED_DIR gives it.
func init() {
	settings.SystemManagedDir = filepath.Join(os.TempDir(), "wharf-test-no-system-managed-dir")
}

// Options are agent.Options over the World, without policy or activator:
// the World's managed directory is the further one, and the registry is
// the World's cache, which the World holds open.
func (w *World) Options() agent.Options {
	o := agent.Options{Home: w.Home, Project: w.Project, ExtraManagedDir: w.Managed, NoMemo: true}
	agentlink.Wire(&o, agentlink.Wiring{Registry: w.Cache, Leaser: w.Cache})
	return o
}

// AgentPolicy is the World's policy engine (testworld's Policy) as an
// agent.Policy, as wharf's commands give theirs.
func (w *World) AgentPolicy() *agent.Policy {
	return agentlink.Policy(w.Policy()).(*agent.Policy)
}

// Runtime returns a Runtime (agent.Open) closed at cleanup. Without
// o.Policy it runs under the World's managed directory only.
func (w *World) Runtime(o agent.Options) *agent.Runtime {
	w.TB.Helper()
	if o.Policy == nil {
		pol, err := policy.Open(policy.Sources{ExtraManagedDir: w.Managed})
		if err != nil {
			w.TB.Fatal(err)
		}
		o.Policy = agentlink.Policy(pol).(*agent.Policy)
	}
	r, err := agent.Open(o)
	if err != nil {
		w.TB.Fatal(err)
	}
	w.TB.Cleanup(func() { r.Close() })
	return r
}

// Load loads r in mode or fails the test.
func (w *World) Load(r *agent.Runtime, mode agent.Mode) *agent.Set {
	w.TB.Helper()
	s, err := r.Load(context.Background(), mode)
	if err != nil {
		w.TB.Fatalf("load %s: %v", mode, err)
	}
	return s
}
