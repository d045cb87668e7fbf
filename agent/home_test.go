package agent

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/testutil/testworld"
	"github.com/wharfhq/wharf/plugin"
)

// LoadPolicy reads and compiles the layers when it is called: a missing
// file, an empty path or a rule that does not compile is an error naming
// it, before any session runs.
func TestLoadPolicyNamesTheBadLayer(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.rego")
	if err := os.WriteFile(bad, []byte("package wharf.admin.bad\n\ndeny contains \"x\" if {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, names string }{
		{filepath.Join(dir, "missing.json"), "missing.json"},
		{bad, "bad"},
		{"", "LoadPolicy"},
	} {
		_, err := LoadPolicy(c.path)
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Layer != plugin.LayerPolicy || !strings.Contains(pe.Object+err.Error(), c.names) {
			t.Errorf("LoadPolicy(%q): %v, want a policy error naming %s", c.path, err, c.names)
		}
	}
	good := filepath.Join(dir, "team.json")
	if err := os.WriteFile(good, []byte(`{"enabledPlugins": {"x@corp": false}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LoadPolicy(good)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Layers(); len(got) != 1 || got[0] != good {
		t.Fatalf("Layers: %v", got)
	}
}

// Open reads the home's known marketplaces at every load: their sources
// reach policy, so a managed blockedMarketplaces entry naming a source
// keeps that marketplace's plugins out of an embedder's session (without
// the source, the request would name only the marketplace and the block
// could not match it).
func TestOpenReadsTheHomesMarketplaceSources(t *testing.T) {
	w := newWorld(t)
	systemManaged(t, w.managed)
	mkt := testworld.Marketplace(t, filepath.Join(t.TempDir(), "corp"), "corp", map[string]map[string]string{
		"tool": {".claude-plugin/plugin.json": `{"name": "tool"}`, "commands/go.md": "Go."},
	})
	mgr := marketplace.NewManager(w.st, marketplace.Options{Dir: layout.New(w.home).Marketplaces(), Getenv: func(string) string { return "" }})
	src, err := plugin.ParseMarketplaceSource(mkt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.Add(bg, src, ""); err != nil {
		t.Fatal(err)
	}
	w.install("tool@corp", "1.0.0", map[string]string{".claude-plugin/plugin.json": `{"name": "tool"}`, "commands/go.md": "Go."})
	w.install("other@else", "1.0.0", map[string]string{".claude-plugin/plugin.json": `{"name": "other"}`, "commands/go.md": "Go."})
	w.setEnabled("tool@corp", true)
	w.setEnabled("other@else", true)
	w.closeStore()
	w.writeManaged(map[string]any{"blockedMarketplaces": []any{map[string]string{"source": "directory", "path": mkt}}})

	pol, err := LoadPolicy()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(Options{Home: w.home, Policy: pol, NoMemo: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	set := w.load(r, CacheOnly)
	tool, _ := set.Plugin(plugin.MustParseID("tool@corp"))
	if tool.Status != "failed" || !strings.Contains(strings.Join(tool.Errors, " "), "blockedMarketplaces") {
		t.Fatalf("tool@corp from the blocked marketplace: %+v", tool)
	}
	if other, _ := set.Plugin(plugin.MustParseID("other@else")); other.Status != "active" {
		t.Fatalf("other@else: %+v", other)
	}
}

// A session over a home whose cache cannot take a lease still loads: the
// lease only keeps `wharf gc` from removing a version dir in use, and the
// set says that nothing is leased. A home with a lease directory takes
// the lease.
func TestOpenHomeLoadsWithoutALease(t *testing.T) {
	w := newWorld(t)
	systemManaged(t, w.managed)
	w.install("a@corp", "1.0.0", map[string]string{".claude-plugin/plugin.json": `{"name": "a"}`, "commands/go.md": "Go."})
	w.setEnabled("a@corp", true)
	w.closeStore()
	leases := layout.New(w.home).Leases()
	if err := os.WriteFile(leases, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := LoadPolicy()
	if err != nil {
		t.Fatal(err)
	}
	open := func() *Set {
		t.Helper()
		r, err := Open(Options{Home: w.home, Policy: pol, NoMemo: true})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		return w.load(r, CacheOnly)
	}
	set := open()
	if _, ok := set.Lookup(plugin.KindCommand, "a:go"); !ok {
		t.Fatal("a:go is not live")
	}
	if ws := strings.Join(set.Warnings(), "\n"); !strings.Contains(ws, "not leased") {
		t.Fatalf("warnings %q do not say the dirs are not leased", ws)
	}
	if err := os.Remove(leases); err != nil {
		t.Fatal(err)
	}
	set = open()
	if ws := strings.Join(set.Warnings(), "\n"); strings.Contains(ws, "not leased") {
		t.Fatalf("with a lease directory: %q", ws)
	}
}

// A home nothing was installed in (no registry file yet) reads as empty;
// Open creates nothing in it.
func TestOpenEmptyHome(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	systemManaged(t, filepath.Join(t.TempDir(), "none"))
	// The zero Policy is the managed layers alone, as LoadPolicy() is.
	r, err := Open(Options{Home: home, Policy: &Policy{}, NoMemo: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	set, err := r.Load(bg, CacheOnly)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Plugins()) != 0 || len(set.Components()) != 0 {
		t.Fatalf("an empty home loaded %v", set.Plugins())
	}
	if _, err := os.Stat(layout.New(home).StateDB()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open created the registry: %v", err)
	}
}

// The runtime reads the known marketplaces' records itself (it links no
// marketplace code): the bucket is the marketplace package's, and the
// source it reads from each record is the one that package gives policy,
// for every kind of source.
func TestKnownMarketplaceRecords(t *testing.T) {
	if knownBucket != marketplace.Bucket {
		t.Fatalf("knownBucket %q, marketplace.Bucket %q", knownBucket, marketplace.Bucket)
	}
	w := newWorld(t)
	dir := testworld.Marketplace(t, filepath.Join(t.TempDir(), "local"), "local", map[string]map[string]string{"p": {"commands/go.md": "Go."}})
	mgr := marketplace.NewManager(w.st, marketplace.Options{Dir: layout.New(w.home).Marketplaces(), Getenv: func(string) string { return "" }})
	src, err := plugin.ParseMarketplaceSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.Add(bg, src, ""); err != nil {
		t.Fatal(err)
	}
	w.closeStore()
	h := openHome(w.home)
	if err := h.refresh(); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{dir, "corp/plugins", "https://git.example.com/corp/plugins.git", "https://example.com/marketplace.json"} {
		want, err := plugin.ParseMarketplaceSource(raw)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(struct {
			Source plugin.MarketplaceSource `json:"source"`
		}{want})
		if err != nil {
			t.Fatal(err)
		}
		var k struct {
			Source json.RawMessage `json:"source"`
		}
		if err := json.Unmarshal(b, &k); err != nil {
			t.Fatal(err)
		}
		var got plugin.MarketplaceSource
		err = json.Unmarshal(k.Source, &got)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the runtime reads %+v (%v), marketplace gives %+v", raw, got, err, want)
		}
	}
	got := h.source("local")
	if got == nil || !reflect.DeepEqual(*got, src) {
		t.Fatalf("the home's record of local reads %+v, want %+v", got, src)
	}
}
