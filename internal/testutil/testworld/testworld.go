// Package testworld builds the fixtures wharf's tests share: a real wharf
// home (a bbolt registry, a versioned cache, user, project and managed
// settings, all in temp dirs) and directory marketplaces whose plugins are
// file trees. It is for tests only; it imports no package that imports it
// back, so the tests of agent, install and cmd/wharf can all use it.
package testworld

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
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

// Materialize puts files as id at version in the cache and points the
// registry at it, as `wharf install` does after fetching. It does not
// enable the plugin.
func (w *World) Materialize(id, version string, files map[string]string) cache.Record {
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
	return rec
}

// Install materializes files as id at version and enables it in user
// settings, as `wharf install` does.
func (w *World) Install(id, version string, files map[string]string) cache.Record {
	w.TB.Helper()
	rec := w.Materialize(id, version, files)
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
	writeJSON(w.TB, filepath.Join(w.Managed, "managed-settings.json"), doc)
}

// WriteSettings writes the settings document of scope (user, project, local).
func (w *World) WriteSettings(scope settings.Scope, doc map[string]any) {
	w.TB.Helper()
	writeJSON(w.TB, w.Paths().File(scope), doc)
}

func writeJSON(tb testing.TB, p string, doc any) {
	tb.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	WriteTree(tb, filepath.Dir(p), map[string]string{filepath.Base(p): string(b)})
}

// Policy compiles the managed directory into a real engine that keeps its
// decision memo in the home, as wharf's commands do.
func (w *World) Policy() *policy.Engine {
	w.TB.Helper()
	e, err := policy.Open(policy.Sources{ManagedDir: w.Managed}, policy.WithMemoFile(layout.New(w.Home).PolicyMemo()))
	if err != nil {
		w.TB.Fatal(err)
	}
	return e
}

// Marketplace writes a directory marketplace named name at dir: each
// plugin's files (as WriteTree takes them) under plugins/<plugin>/, and
// .claude-plugin/marketplace.json listing every plugin, in name order, with
// source "./plugins/<plugin>". It returns dir.
func Marketplace(tb testing.TB, dir, name string, plugins map[string]map[string]string) string {
	tb.Helper()
	names := make([]string, 0, len(plugins))
	for n := range plugins {
		names = append(names, n)
	}
	slices.Sort(names)
	entries := make([]any, 0, len(names))
	for _, n := range names {
		WriteTree(tb, filepath.Join(dir, "plugins", n), plugins[n])
		entries = append(entries, map[string]string{"name": n, "source": "./plugins/" + n})
	}
	writeJSON(tb, plugin.MarketplaceFile(dir), map[string]any{"name": name, "owner": map[string]string{"name": "test"}, "plugins": entries})
	return dir
}

// Manifest is a plugin.json of name at version depending on deps.
func Manifest(name, version string, deps ...string) string {
	if deps == nil {
		deps = []string{}
	}
	d, _ := json.Marshal(deps)
	return fmt.Sprintf(`{"name": %q, "version": %q, "dependencies": %s}`, name, version, d)
}
