// Package worldtest builds a real wharf home for the tests of the agent's
// sub-packages: a bbolt registry, a versioned cache, user, project and
// managed settings, all in temp dirs, and an agent.Runtime over them.
package worldtest

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/cache"
	"github.com/wharfhq/wharf/layout"
	"github.com/wharfhq/wharf/plugin"
	"github.com/wharfhq/wharf/policy"
	"github.com/wharfhq/wharf/settings"
	"github.com/wharfhq/wharf/store"
)

// World is a wharf home, a project and a managed directory.
type World struct {
	TB      testing.TB
	Home    string
	Project string
	Managed string
	Store   *store.Bolt
	Cache   *cache.Cache
}

// New makes a World under tb.TempDir(); everything is closed at cleanup.
func New(tb testing.TB) *World {
	tb.Helper()
	root := tb.TempDir()
	w := &World{TB: tb, Home: filepath.Join(root, "home"), Project: filepath.Join(root, "project"), Managed: filepath.Join(root, "managed")}
	for _, d := range []string{w.Home, w.Project, w.Managed} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	st, err := store.OpenBolt(layout.New(w.Home).StateDB(), store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	w.Store = st
	w.Cache, err = cache.New(cache.Options{Home: w.Home, Store: st})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		st.Close()
		MakeWritable(root)
	})
	return w
}

// MakeWritable undoes the cache's read-only modes so a temp dir can go.
func MakeWritable(root string) {
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
}

// Paths are the World's settings paths.
func (w *World) Paths() settings.Paths {
	return settings.Paths{Home: w.Home, Project: w.Project, ManagedDir: w.Managed}
}

// WriteTree writes files under dir: "name" → content; a name ending in "*"
// is executable.
func WriteTree(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, "*") {
			name, mode = strings.TrimSuffix(name, "*"), 0o755
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			tb.Fatal(err)
		}
	}
}

// Install materializes files as id at version in the cache, points the
// registry at it and enables it in user settings, as `wharf install` does.
func (w *World) Install(id, version string, files map[string]string) cache.Record {
	w.TB.Helper()
	pid := plugin.MustParseID(id)
	v, err := w.Cache.Materialize(context.Background(), pid, version, func(ctx context.Context, dir string) error {
		WriteTree(w.TB, dir, files)
		return nil
	})
	if err != nil {
		w.TB.Fatal(err)
	}
	rec := cache.RecordFor(v, "user")
	if err := w.Cache.Put(context.Background(), rec); err != nil {
		w.TB.Fatal(err)
	}
	w.SetEnabled(id, true)
	return rec
}

// SetEnabled sets enabledPlugins[id] in user settings.
func (w *World) SetEnabled(id string, on bool) {
	w.TB.Helper()
	if _, err := settings.SetEnabled(w.Paths(), settings.ScopeUser, plugin.MustParseID(id), on); err != nil {
		w.TB.Fatal(err)
	}
}

// WriteManaged writes the managed settings document.
func (w *World) WriteManaged(doc map[string]any) {
	w.TB.Helper()
	w.writeJSON(filepath.Join(w.Managed, "managed-settings.json"), doc)
}

// WriteSettings writes the settings document of scope (user, project, local).
func (w *World) WriteSettings(scope settings.Scope, doc map[string]any) {
	w.TB.Helper()
	w.writeJSON(w.Paths().File(scope), doc)
}

func (w *World) writeJSON(p string, doc map[string]any) {
	b, err := json.Marshal(doc)
	if err != nil {
		w.TB.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.TB.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		w.TB.Fatal(err)
	}
}

// Policy compiles the managed directory into a real engine.
func (w *World) Policy() *policy.Engine {
	w.TB.Helper()
	e, err := policy.Open(policy.Sources{ManagedDir: w.Managed})
	if err != nil {
		w.TB.Fatal(err)
	}
	return e
}

// Options are agent.Options over the World, without policy or activator.
func (w *World) Options() agent.Options {
	return agent.Options{Home: w.Home, Project: w.Project, Settings: w.Paths(), Registry: w.Cache, Leaser: w.Cache, NoMemo: true}
}

// Runtime returns a Runtime closed at cleanup.
func (w *World) Runtime(o agent.Options) *agent.Runtime {
	w.TB.Helper()
	r, err := agent.New(o)
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
