package load

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

// capabilityTrees are the crafted plugins of package capability: every
// capability kind and every finding kind.
var capabilityTrees = []string{"update/v1", "update/v2", "update/v3", "capabilities/executables", "capabilities/hooks",
	"capabilities/lsp", "capabilities/mcp-fetch", "capabilities/prompts", "malicious/download-and-run",
	"malicious/undeclared-host", "malicious/credential-read", "malicious/hidden-instructions", "malicious/invisible-unicode"}

// treeCache is a real cache (bbolt registry, sealed version dirs).
type treeCache struct {
	t    testing.TB
	home string
	c    *cache.Cache
}

func newTreeCache(t testing.TB) *treeCache {
	t.Helper()
	home := t.TempDir()
	st, err := store.OpenBolt(filepath.Join(home, "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Close()
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { os.Chmod(p, 0o755); return nil })
	})
	c, err := cache.New(cache.Options{Home: home, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return &treeCache{t: t, home: home, c: c}
}

// put materializes the tree at src as id at version and registers it.
func (tc *treeCache) put(id, version, src string) cache.Record {
	tc.t.Helper()
	v, err := tc.c.Materialize(bg, plugin.MustParseID(id), version, func(_ context.Context, dir string) error {
		return os.CopyFS(dir, os.DirFS(src))
	})
	if err != nil {
		tc.t.Fatal(err)
	}
	rec := cache.RecordFor(v, "user")
	if err := tc.c.Put(bg, rec); err != nil {
		tc.t.Fatal(err)
	}
	return rec
}

func capabilityTree(name string) string {
	return filepath.Join("..", "..", "core", "capability", "testdata", filepath.FromSlash(name))
}

func contentJSON(t *testing.T, c *policy.Content) string {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The kept set equals the set computed from the tree, for every crafted
// capability and finding kind: read back by a new Contents (as the next
// process would), after a file was damaged, and under another
// marketplace entry, which is another key. Policy decides the kept set
// as it decides the computed one.
func TestContentsCachedEqualsUncached(t *testing.T) {
	tc := newTreeCache(t)
	dir := filepath.Join(tc.home, "capabilities")
	e, err := policy.NewEngine([]policy.Layer{{Name: "managed", Settings: []byte(`{"deniedCapabilities": [{"kind": "runtime-fetch"},
		{"kind": "hook", "matcher": "Bash"}, {"kind": "host", "outside": ["api.example.com"]}, {"kind": "allowed-tool", "tool": "Bash"}],
		"deniedFindings": ["download-and-run", "hidden-instructions"]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	decide := func(id plugin.ID, c *policy.Content) string {
		d, err := e.Decide(bg, policy.Request{Action: policy.ActionLoad, Plugin: id, Content: c})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(d)
		return string(b)
	}
	for i, name := range capabilityTrees {
		id := plugin.MustParseID(strings.ReplaceAll(strings.ReplaceAll(name, "/", "-"), ".", "") + "@corp")
		rec := tc.put(id.String(), "1.0."+string(rune('0'+i%10)), capabilityTree(name))
		uncached, err := computeContent(rec.InstallPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := contentJSON(t, uncached)
		first := NewContents(dir)
		got1, err := first.Of(rec, nil)
		if err != nil || first.Computed() != 1 {
			t.Fatalf("%s: first Of computed %d, err %v", name, first.Computed(), err)
		}
		next := NewContents(dir)
		got2, err := next.Of(rec, nil)
		if err != nil || next.Computed() != 0 {
			t.Fatalf("%s: read back computed %d (want 0: kept in %s), err %v", name, next.Computed(), dir, err)
		}
		for _, got := range []*policy.Content{got1, got2} {
			if g := contentJSON(t, got); g != want {
				t.Fatalf("%s: kept set differs from the tree's:\n got %s\nwant %s", name, g, want)
			}
			if decide(id, got) != decide(id, uncached) {
				t.Fatalf("%s: policy decides the kept set otherwise: %s vs %s", name, decide(id, got), decide(id, uncached))
			}
		}
		// A damaged file is computed again, not believed.
		key := contentKey(rec, nil)
		if err := os.WriteFile(filepath.Join(dir, key+".json"), []byte(`{"key":"`+key+`","content":{"capabilities":{"hooks":[]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		again := NewContents(dir)
		if got, err := again.Of(rec, nil); err != nil || again.Computed() != 1 || contentJSON(t, got) != want {
			t.Fatalf("%s: damaged file: computed %d, err %v", name, again.Computed(), err)
		}
		// Another entry is another key.
		entry := &plugin.Entry{Category: "other"}
		other := NewContents(dir)
		if _, err := other.Of(rec, entry); err != nil || other.Computed() != 1 {
			t.Fatalf("%s: another entry read back a set kept for none (computed %d, %v)", name, other.Computed(), err)
		}
	}
}

// A file kept for one key and copied under another is not believed: the
// key it names is checked.
func TestContentsRefusesAMovedFile(t *testing.T) {
	tc := newTreeCache(t)
	dir := filepath.Join(tc.home, "capabilities")
	quiet := tc.put("quiet@corp", "1.0.0", capabilityTree("update/v1"))
	loud := tc.put("loud@corp", "1.0.0", capabilityTree("update/v2"))
	c := NewContents(dir)
	if _, err := c.Of(quiet, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, contentKey(quiet, nil)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, contentKey(loud, nil)+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := NewContents(dir).Of(loud, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Capabilities.MCPServers) != 1 {
		t.Fatalf("loud@corp read as quiet@corp's set: %s", contentJSON(t, got))
	}
}

// An installed plugin whose capability a new managed policy denies stops
// loading at the next pass, with the reason naming the capability, also
// when its set is read back from the kept file; a plugin without it keeps
// loading; a tree changed after install is refused by trust before its
// content is looked at.
func TestPassDeniesCapabilityAtNextLoad(t *testing.T) {
	tc := newTreeCache(t)
	dir := filepath.Join(tc.home, "capabilities")
	sync := tc.put("sync@corp", "2.0.0", capabilityTree("update/v2"))
	quiet := tc.put("quiet@corp", "1.0.0", capabilityTree("update/v1"))
	in := Input{Records: []cache.Record{sync, quiet}, Enabled: map[plugin.ID]bool{sync.ID: true, quiet.ID: true}}
	pass := func(settings string) map[string]Row {
		t.Helper()
		e, err := policy.NewEngine([]policy.Layer{{Name: "managed", Settings: []byte(settings)}})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := List(bg, Options{Decider: NewDecider(e), Contents: NewContents(dir)}, in)
		if err != nil {
			t.Fatal(err)
		}
		return rowsByID(rows)
	}
	rows := pass(`{}`)
	if rows["sync@corp"].Status != StatusActive || rows["quiet@corp"].Status != StatusActive {
		t.Fatalf("without a denial: %+v", rows)
	}
	for round := range 2 { // computed, then read back
		rows = pass(`{"deniedCapabilities": [{"kind": "mcp-runtime-fetch"}]}`)
		r := rows["sync@corp"]
		if r.Status != StatusFailed || len(r.ErrorDetails) != 1 || r.ErrorDetails[0].Type != plugin.TypePolicyDenied ||
			!strings.Contains(r.Errors[0], "MCP server `sync` fetches an unpinned package at run time (npx -y sync-mcp@latest), which deniedCapabilities[0] denies (policy layer managed, rule deniedCapabilities)") {
			t.Fatalf("round %d: sync@corp %+v", round, r)
		}
		if rows["quiet@corp"].Status != StatusActive {
			t.Fatalf("round %d: quiet@corp %+v", round, rows["quiet@corp"])
		}
	}
	// quiet's tree gains a server after install: trust refuses it first.
	mcp := filepath.Join(quiet.InstallPath, ".mcp.json")
	os.Chmod(quiet.InstallPath, 0o755)
	if err := os.WriteFile(mcp, []byte(`{"mcpServers": {"x": {"command": "npx", "args": ["-y", "x@latest"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rows = pass(`{"deniedCapabilities": [{"kind": "mcp-runtime-fetch"}]}`)
	if r := rows["quiet@corp"]; r.Status != StatusFailed || r.ErrorDetails[0].Layer != string(plugin.LayerTrust) {
		t.Fatalf("a changed tree: %+v", r)
	}
}

// A tree that does not load as a plugin fails with its manifest's error
// (as without a capability policy), not with a capability error; a tree
// whose set cannot be computed otherwise (here: gone) gives
// TypeCapabilities, layer policy, with the way to look at it.
func TestContentErrors(t *testing.T) {
	tc := newTreeCache(t)
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, ".claude-plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, ".claude-plugin", "plugin.json"), []byte(`{"name": "bad", "version": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := tc.put("bad@corp", "1.0.0", src)
	e, err := policy.NewEngine([]policy.Layer{{Name: "managed", Settings: []byte(`{"deniedCapabilities": [{"kind": "hook"}]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := List(bg, Options{Decider: NewDecider(e), Contents: NewContents("")}, Input{Records: []cache.Record{bad}, Enabled: map[plugin.ID]bool{bad.ID: true}})
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[0]; r.Status != StatusFailed || r.ErrorDetails[0].Layer != string(plugin.LayerMaterialization) || !strings.Contains(r.Errors[0], "version") {
		t.Fatalf("bad manifest: %+v", r)
	}
	gone := bad
	gone.InstallPath = filepath.Join(t.TempDir(), "gone")
	_, err = NewContents("").Of(gone, nil)
	if err == nil {
		t.Fatal("no error for a tree that is gone")
	}
	var pe *plugin.Error
	if err := ContentError(gone.ID, gone.Version, err); !errors.As(err, &pe) || pe.Type != TypeCapabilities || pe.Layer != plugin.LayerPolicy ||
		!strings.Contains(pe.Hint, "wharf show bad@corp") {
		t.Fatalf("content error: %#v", err)
	}
}
