package install

import (
	"errors"
	"os"
	"path/filepath"
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
