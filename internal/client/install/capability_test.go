package install

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/plugin"
)

// An install whose fetched tree has a capability managed policy denies is
// refused as a policy denial naming the capability, and nothing is
// recorded; a plugin without it installs, and its capability set, kept at
// install, is what the next load reads back instead of the tree.
func TestInstallRefusesDeniedCapability(t *testing.T) {
	w := newWorld(t, map[string][]string{"plain": nil, "sync": nil},
		`{"deniedCapabilities": [{"kind": "mcp-runtime-fetch", "except": ["other@corp"]}]}`)
	write(t, filepath.Join(w.mkt, "plugins", "sync", ".mcp.json"), `{"mcpServers": {"sync": {"command": "npx", "args": ["-y", "sync-mcp@latest"]}}}`)
	_, err := w.in.Install(bg, Request{ID: plugin.MustParseID("sync@corp")})
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Layer != plugin.LayerPolicy || pe.Type != plugin.TypePolicyDenied ||
		!strings.Contains(err.Error(), "MCP server `sync` fetches an unpinned package at run time (npx -y sync-mcp@latest), which deniedCapabilities[0] denies (policy layer managed, rule deniedCapabilities)") {
		t.Fatalf("install: %v", err)
	}
	if _, ok := w.registry()["sync@corp"]; ok {
		t.Fatal("a denied install was recorded")
	}
	if _, err := w.in.Install(bg, Request{ID: plugin.MustParseID("plain@corp")}); err != nil {
		t.Fatal(err)
	}
	kept, err := os.ReadDir(filepath.Join(w.home, "capabilities"))
	if err != nil || len(kept) == 0 {
		t.Fatalf("no capability set kept at install: %v", err)
	}
	before := w.in.contents.Computed()
	rows, err := w.in.List(bg, StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Status != load.StatusActive {
		t.Fatalf("rows %+v", rows)
	}
	if n := w.in.contents.Computed() - before; n != 0 {
		t.Fatalf("the load pass computed %d sets again", n)
	}
}

// TestGCRemovesUnusedCapabilitySets: the kept sets of a version an update
// replaced, and of a plugin uninstalled, go at garbage collection; the
// installed version's set stays and is read back, not computed again, and
// a file that is not a set is left alone.
func TestGCRemovesUnusedCapabilitySets(t *testing.T) {
	w := newWorld(t, map[string][]string{"app": nil, "other": nil},
		`{"deniedCapabilities": [{"kind": "mcp-runtime-fetch"}]}`)
	dir := filepath.Join(w.home, "capabilities")
	sets := func() []string {
		t.Helper()
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	for _, id := range []string{"app@corp", "other@corp"} {
		if _, err := w.in.Install(bg, Request{ID: plugin.MustParseID(id)}); err != nil {
			t.Fatal(err)
		}
	}
	installed := sets()
	if len(installed) != 2 {
		t.Fatalf("kept sets after two installs: %v", installed)
	}
	write(t, filepath.Join(dir, "notes.txt"), "not a set")
	w.setVersion("app", "1.1.0")
	if _, err := w.in.Update(bg, []plugin.ID{plugin.MustParseID("app@corp")}, UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The update collects: the replaced version's set is gone.
	if got := sets(); len(got) != 3 || !slices.Contains(got, "notes.txt") || slices.Contains(got, installed[0]) == slices.Contains(got, installed[1]) {
		t.Fatalf("after the update the directory holds %v (before %v); want the two installed versions' sets and notes.txt", got, installed)
	}
	// A set left by an earlier wharf under a key no version has.
	stale := filepath.Join(dir, strings.Repeat("ab", 32)+".json")
	write(t, stale, `{"key": "`+strings.Repeat("ab", 32)+`", "content": {}}`)
	rep, err := w.in.GC(bg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.CapabilitySets, []string{stale}) {
		t.Fatalf("gc removed sets %v; want %s", rep.CapabilitySets, stale)
	}
	before := w.in.contents.Computed()
	if _, err := w.in.List(bg, StatusOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := w.in.contents.Computed() - before; n != 0 {
		t.Fatalf("after gc the load pass computed %d sets again; the installed versions' sets were removed", n)
	}
	if _, err := w.in.Uninstall(bg, plugin.MustParseID("app@corp"), false); err != nil {
		t.Fatal(err)
	}
	if got := sets(); len(got) != 2 || !slices.Contains(got, "notes.txt") {
		t.Fatalf("after uninstall (which collects) the directory holds %v; want other's set and notes.txt", got)
	}
}
