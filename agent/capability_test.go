package agent

import (
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/plugin"
)

// A managed deniedCapabilities holds in a Runtime whose embedder's policy
// has no capability rule (so it alone would compute no capability set):
// the plugin with the denied MCP server is failed, naming it, and its
// components are not live; the other plugin loads.
func TestOpenDeniesManagedCapabilities(t *testing.T) {
	w := newWorld(t)
	systemManaged(t, w.managed)
	w.install("sync@corp", "1.0.0", map[string]string{
		"commands/go.md": "Go.",
		".mcp.json":      `{"mcpServers": {"sync": {"command": "npx", "args": ["-y", "sync-mcp@latest"]}}}`,
	})
	w.install("plain@corp", "1.0.0", map[string]string{"commands/stay.md": "Stay."})
	w.setEnabled("sync@corp", true)
	w.setEnabled("plain@corp", true)
	writeTree(t, w.managed, map[string]string{"managed-settings.json": `{"deniedCapabilities": [{"kind": "mcp-runtime-fetch"}]}`})
	loose, err := policy.Open(policy.Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if loose.ReadsContent() {
		t.Fatal("control: a policy without capability keys or rules reads content")
	}
	o := w.options()
	o.Policy = loose
	o.NoMemo = true
	r, err := open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	for _, mode := range []Mode{CacheOnly, Full} {
		set := w.load(r, mode)
		s, _ := set.Plugin(plugin.MustParseID("sync@corp"))
		if s.Status != "failed" || len(s.Errors) == 0 ||
			!strings.Contains(s.Errors[0], "MCP server `sync` fetches an unpinned package at run time (npx -y sync-mcp@latest), which deniedCapabilities[0] denies") {
			t.Fatalf("%s: sync@corp %+v", mode, s)
		}
		if _, ok := set.Lookup(plugin.KindCommand, "sync:go"); ok {
			t.Fatalf("%s: the denied plugin's command is live", mode)
		}
		if p, _ := set.Plugin(plugin.MustParseID("plain@corp")); p.Status != "active" {
			t.Fatalf("%s: plain@corp is %s", mode, p.Status)
		}
	}
}
