package policy

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/wharfhq/wharf/internal/core/capability"
)

// contentOf reads a crafted plugin of package capability's testdata.
func contentOf(t *testing.T, dir string) *Content {
	t.Helper()
	r, err := capability.Read(filepath.Join("..", "capability", "testdata", filepath.FromSlash(dir)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ContentOf(r)
}

// An admin rule denies on a capability read from the tree (an MCP server
// that fetches a package at run time) and on a finding kind; the same
// plugin without them, and a request that carries no content, pass.
func TestRegoDeniesOnCapability(t *testing.T) {
	module := `package wharf.admin.security

deny contains msg if {
	input.action == "install"
	some s in input.capabilities.mcpServers
	some f in s.fetches
	msg := sprintf("MCP server %s fetches %s at run time (%s)", [s.name, f.package, f.tool])
}

deny contains msg if {
	input.action == "install"
	some f in input.findings
	f.kind == "download-and-run"
	msg := sprintf("%s:%d downloads and runs code", [f.file, f.line])
}
`
	e, err := NewEngine([]Layer{{Name: "security", Modules: map[string]string{"security.rego": module}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		content *Content
		denied  string
	}{
		{"v2 adds npx -y", contentOf(t, "update/v2"), "MCP server sync fetches sync-mcp@latest at run time (npx -y)"},
		{"v1", contentOf(t, "update/v1"), ""},
		{"download-and-run hook", contentOf(t, "malicious/download-and-run"), "hooks/hooks.json:8 downloads and runs code"},
		{"no content", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := Request{Action: ActionInstall, Plugin: mustID("deploy@corp"), Marketplace: Marketplace{Name: "corp", Source: ghSource("corp/plugins")}, Content: c.content}
			d, err := e.Decide(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if c.denied == "" {
				if !d.Allowed {
					t.Fatalf("denied: %v", d.Reasons)
				}
				return
			}
			if d.Allowed || len(d.Reasons) != 1 || d.Reasons[0].Message != c.denied || d.Reasons[0].Layer != "security" {
				t.Fatalf("decision %+v; want denied by layer security: %s", d, c.denied)
			}
		})
	}
}

// Input and the AST input agree with content too, and the request's JSON
// form (wharf policy eval --input) carries it.
func TestContentInput(t *testing.T) {
	req := Request{Action: ActionInstall, Plugin: mustID("deploy@corp"), Marketplace: Marketplace{Name: "corp"}, Content: contentOf(t, "update/v2")}
	want, err := ast.InterfaceToValue(req.Input())
	if err != nil {
		t.Fatal(err)
	}
	if got := req.evalInput(nil); got.Compare(want) != 0 {
		t.Fatalf("evalInput\n%v\nInput\n%v", got, want)
	}
	caps := req.Input()["capabilities"].(map[string]any)
	if hooks := caps["hooks"].([]any); len(hooks) != 1 || hooks[0].(map[string]any)["event"] != "PreToolUse" {
		t.Errorf("input.capabilities.hooks = %v", caps["hooks"])
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Content == nil || back.Content.Capabilities.Digest() != req.Content.Capabilities.Digest() {
		t.Fatalf("content lost in %s", b)
	}
	if _, err := ParseRequest([]byte(`{"action":"install","plugin":"a@b","content":{"capabilities":{"hooks":"x"}}}`)); err == nil ||
		!strings.Contains(err.Error(), "hooks") {
		t.Errorf("a malformed content is not refused by name: %v", err)
	}
}

// A layer written against input.plugin.capabilities and
// input.plugin.findings denies as one written against input.capabilities
// does, while input.plugin stays the plugin's name for the rules that
// compare it; a reference into input.plugin that names neither is refused
// when the layer is read, not left undefined (a deny that never fires).
func TestRegoDeniesOnPluginCapabilities(t *testing.T) {
	module := `package wharf.admin.security

import input.plugin.findings as found

deny contains msg if {
	input.plugin != "trusted@corp"
	some s in input.plugin.capabilities.mcpServers
	some f in s.fetches
	msg := sprintf("%s: MCP server %s fetches %s at run time", [input.plugin, s.name, f.package])
}

deny contains msg if {
	some f in found
	f.kind == "download-and-run"
	msg := sprintf("%s:%d downloads and runs code", [f.file, f.line])
}
`
	e, err := NewEngine([]Layer{{Name: "security", Modules: map[string]string{"security.rego": module}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name, plugin string
		content      *Content
		denied       string
	}{
		{"v2 adds npx -y", "deploy", contentOf(t, "update/v2"), "deploy@corp: MCP server sync fetches sync-mcp@latest at run time"},
		{"the exempted plugin", "trusted", contentOf(t, "update/v2"), ""},
		{"v1", "deploy", contentOf(t, "update/v1"), ""},
		{"download-and-run hook", "deploy", contentOf(t, "malicious/download-and-run"), "hooks/hooks.json:8 downloads and runs code"},
		{"no content", "deploy", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := Request{Action: ActionInstall, Plugin: mustID(c.plugin + "@corp"), Marketplace: Marketplace{Name: "corp", Source: ghSource("corp/plugins")}, Content: c.content}
			d, err := e.Decide(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if c.denied == "" {
				if !d.Allowed {
					t.Fatalf("denied: %v", d.Reasons)
				}
				return
			}
			if d.Allowed || len(d.Reasons) != 1 || d.Reasons[0].Message != c.denied {
				t.Fatalf("decision %+v; want denied: %s", d, c.denied)
			}
		})
	}
	for name, bad := range map[string]string{
		"a field of the name":   "deny contains \"x\" if { input.plugin.hooks }",
		"an index of the name":  "deny contains \"x\" if { some k; input.plugin[k] }",
		"an import of the name": "import input.plugin\ndeny contains \"x\" if { plugin.capabilities.hooks[_] }",
	} {
		_, err := NewEngine([]Layer{{Name: "security", Modules: map[string]string{"security.rego": "package wharf.admin.security\n" + bad + "\n"}}})
		if err == nil || !strings.Contains(err.Error(), "input.plugin is the plugin's name") {
			t.Errorf("%s: NewEngine error %v; want it refused, naming input.plugin", name, err)
		}
	}
}
