package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/settings"
)

// capEngine is an engine whose managed layer is the settings document doc.
func capEngine(t *testing.T, layers ...Layer) *Engine {
	t.Helper()
	e, err := NewEngine(layers)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func capDecide(t *testing.T, e *Engine, action Action, id string, c *Content) Decision {
	t.Helper()
	req := Request{Action: action, Plugin: mustID(id), Marketplace: Marketplace{Name: "corp", Source: ghSource("corp/plugins")}, Content: c}
	d, err := e.Decide(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Each managed key denies the capability it names, with a reason that
// names it, on install and load; an entry's except exempts the plugins it
// lists from that entry only; a plugin without the capability, and a
// request without content, pass.
func TestManagedKeysDenyCapabilities(t *testing.T) {
	for _, c := range []struct {
		name     string
		settings string
		tree     string
		id       string
		rule     string
		want     string // substring of the reason; "" allowed
	}{
		{"mcp runtime fetch", `{"deniedCapabilities":[{"kind":"mcp-runtime-fetch"}]}`, "update/v2", "deploy@corp",
			"deniedCapabilities", "MCP server `sync` fetches an unpinned package at run time (npx -y sync-mcp@latest), which deniedCapabilities[0] denies"},
		{"mcp runtime fetch, v1 has none", `{"deniedCapabilities":[{"kind":"mcp-runtime-fetch"}]}`, "update/v1", "deploy@corp", "", ""},
		{"pinned fetch passes unpinned-only", `{"deniedCapabilities":[{"kind":"runtime-fetch","unpinned":true}]}`, "capabilities/hooks", "deploy@corp", "", ""},
		{"any fetch", `{"deniedCapabilities":[{"kind":"runtime-fetch"}]}`, "capabilities/hooks", "deploy@corp",
			"deniedCapabilities", "hook SessionStart fetches a package at run time (npx -y hook-helper@2.1.0)"},
		{"PreToolUse Bash hook", `{"deniedCapabilities":[{"kind":"hook","event":"PreToolUse","matcher":"Bash"}]}`, "update/v2", "deploy@corp",
			"deniedCapabilities", "hook PreToolUse(Bash) runs `${CLAUDE_PLUGIN_ROOT}/scripts/sync.sh`, which deniedCapabilities[0] denies"},
		{"PreToolUse Bash hook, excepted", `{"deniedCapabilities":[{"kind":"hook","event":"PreToolUse","matcher":"Bash","except":["deploy@corp"]}]}`, "update/v2", "deploy@corp", "", ""},
		{"except is per entry", `{"deniedCapabilities":[{"kind":"hook","except":["deploy@corp"]},{"kind":"mcp-server"}]}`, "update/v2", "deploy@corp",
			"deniedCapabilities", "MCP server `sync` runs `npx -y sync-mcp@latest`, which deniedCapabilities[1] denies"},
		{"hook matcher for another tool", `{"deniedCapabilities":[{"kind":"hook","event":"PreToolUse","matcher":"Write"}]}`, "update/v2", "deploy@corp", "", ""},
		{"http hooks", `{"deniedCapabilities":[{"kind":"hook","type":"http"}]}`, "capabilities/hooks", "deploy@corp",
			"deniedCapabilities", "hook PostToolUse(Write) calls https://audit.example.com:8443/hook"},
		{"host outside", `{"deniedCapabilities":[{"kind":"host","outside":["*.example.com"]}]}`, "malicious/undeclared-host", "deploy@corp",
			"deniedCapabilities", "reaches host mcp.tracker.example.io (mcp tracker), outside *.example.com"},
		{"host inside", `{"deniedCapabilities":[{"kind":"host","outside":["*.example.com","*.example.io"]}]}`, "malicious/undeclared-host", "deploy@corp", "", ""},
		{"allowed Bash", `{"deniedCapabilities":[{"kind":"allowed-tool","tool":"Bash"}]}`, "capabilities/prompts", "prompts@corp",
			"deniedCapabilities", "command `prompts:ship` may use Bash(*) without asking"},
		{"sensitive config", `{"deniedCapabilities":[{"kind":"sensitive-config"}]}`, "capabilities/prompts", "prompts@corp",
			"deniedCapabilities", "asks for the sensitive setting `api_token`"},
		{"executables", `{"deniedCapabilities":[{"kind":"executable"}]}`, "update/v2", "deploy@corp",
			"deniedCapabilities", "ships executable scripts/sync.sh (exec-bit, hook)"},
		{"lsp", `{"deniedCapabilities":[{"kind":"lsp-server"}]}`, "capabilities/lsp", "deploy@corp", "deniedCapabilities", "LSP server"},
		{"require declared hosts", `{"requireDeclaredHosts":true}`, "malicious/undeclared-host", "deploy@corp",
			"requireDeclaredHosts", "reaches host mcp.tracker.example.io (mcp tracker), which network.hosts does not declare"},
		{"require declared hosts, no hosts", `{"requireDeclaredHosts":true}`, "update/v2", "deploy@corp", "", ""},
		{"denied finding", `{"deniedFindings":["download-and-run"]}`, "malicious/download-and-run", "deploy@corp",
			"deniedFindings", "finding download-and-run at hooks/hooks.json:8"},
		{"other finding", `{"deniedFindings":["bidi-unicode"]}`, "malicious/download-and-run", "deploy@corp", "", ""},
		{"invalid deniedFindings denies every finding", `{"deniedFindings":["download-and-rn"]}`, "malicious/download-and-run", "deploy@corp",
			"deniedFindings", "finding download-and-run"},
		{"invalid entry refuses every plugin", `{"deniedCapabilities":[{"kind":"mcp-fetch"}]}`, "update/v1", "deploy@corp",
			"deniedCapabilities", "deniedCapabilities cannot be read (deniedCapabilities[0]), so every plugin is refused (fail closed)"},
		{"invalid requireDeclaredHosts is true", `{"requireDeclaredHosts":"yes"}`, "malicious/undeclared-host", "deploy@corp",
			"requireDeclaredHosts", "mcp.tracker.example.io"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := capEngine(t, Layer{Name: "managed", Settings: []byte(c.settings)})
			content := contentOf(t, c.tree)
			for _, action := range []Action{ActionInstall, ActionLoad} {
				d := capDecide(t, e, action, c.id, content)
				if c.want == "" {
					if !d.Allowed {
						t.Fatalf("%s denied: %v", action, d.Reasons)
					}
					continue
				}
				found := false
				for _, r := range d.Reasons {
					if r.Rule == c.rule && r.Layer == "managed" && strings.Contains(r.Message, c.want) {
						found = true
					}
				}
				if d.Allowed || !found {
					t.Fatalf("%s: decision %+v; want a %s reason of layer managed containing %q", action, d, c.rule, c.want)
				}
			}
			if c.want != "" && !strings.Contains(c.name, "invalid entry") {
				// Without the tree's content nothing can be matched.
				if d := capDecide(t, e, ActionLoad, c.id, nil); !d.Allowed {
					t.Fatalf("load without content denied: %v", d.Reasons)
				}
			}
		})
	}
}

// Policy only tightens: a lower layer cannot exempt a plugin from a higher
// layer's entry, nor switch requireDeclaredHosts off, nor narrow
// deniedFindings; its own entries add reasons.
func TestCapabilityDenialsOnlyTighten(t *testing.T) {
	managed := Layer{Name: "managed", Settings: []byte(`{"deniedCapabilities":[{"kind":"mcp-runtime-fetch"}],"requireDeclaredHosts":true,"deniedFindings":["download-and-run"]}`)}
	lower := Layer{Name: "project", Settings: []byte(`{"deniedCapabilities":[{"kind":"mcp-runtime-fetch","except":["deploy@corp"]}],"requireDeclaredHosts":false,"deniedFindings":[]}`)}
	e := capEngine(t, managed, lower)
	for _, tree := range []string{"update/v2", "malicious/undeclared-host", "malicious/download-and-run"} {
		d := capDecide(t, e, ActionLoad, "deploy@corp", contentOf(t, tree))
		if d.Allowed {
			t.Fatalf("%s: a lower layer loosened the managed denial: %+v", tree, d)
		}
		for _, r := range d.Reasons {
			if r.Layer != "managed" {
				t.Fatalf("%s: unexpected reason %+v", tree, r)
			}
		}
	}
	// The lower layer's own entry adds a reason for another plugin.
	e = capEngine(t, Layer{Name: "managed", Settings: []byte(`{}`)}, Layer{Name: "project", Settings: []byte(`{"deniedCapabilities":[{"kind":"hook"}]}`)})
	if d := capDecide(t, e, ActionInstall, "deploy@corp", contentOf(t, "update/v2")); d.Allowed || d.Reasons[0].Layer != "project" {
		t.Fatalf("lower layer's denial: %+v", d)
	}
}

// A key a layer sets twice in one document, or sets in a fragment too,
// still denies: a fragment adds entries, it never replaces them.
func TestCapabilityDenialsAddUpOverFragments(t *testing.T) {
	e := capEngine(t, Layer{Name: "managed", Settings: []byte(`{"deniedCapabilities":[{"kind":"hook"}]}`),
		Fragments: []settings.Document{{Name: "managed-settings.d/10.json", Data: []byte(`{"deniedCapabilities":[]}`)}}})
	if d := capDecide(t, e, ActionLoad, "deploy@corp", contentOf(t, "update/v2")); d.Allowed {
		t.Fatal("a fragment's empty list removed the managed file's denial")
	}
	e = capEngine(t, Layer{Name: "managed", Settings: []byte(`{"deniedCapabilities":[],"deniedCapabilities":[]}`)})
	if d := capDecide(t, e, ActionLoad, "deploy@corp", contentOf(t, "update/v1")); d.Allowed {
		t.Fatal("a key set twice (which value counts is unknowable) did not fail closed")
	}
}

// Every invalid value is named by file, key and index, and fails closed.
func TestCapabilityKeysValidation(t *testing.T) {
	for _, c := range []struct {
		doc, want string
	}{
		{`{"deniedCapabilities":{"kind":"hook"}}`, `m.json: deniedCapabilities: must be a list of {"kind": ...} objects, got an object; every plugin is refused`},
		{`{"deniedCapabilities":["hook"]}`, `m.json: deniedCapabilities[0]: must be an object {"kind": ...}, got a string`},
		{`{"deniedCapabilities":[{"kind":"hook"},{}]}`, `m.json: deniedCapabilities[1]: needs a "kind" (one of allowed-tool, executable, hook, host, lsp-server, mcp-runtime-fetch, mcp-server, runtime-fetch, sensitive-config)`},
		{`{"deniedCapabilities":[{"kind":"mcp-fetch"}]}`, `deniedCapabilities[0]: kind: unknown kind "mcp-fetch"`},
		{`{"deniedCapabilities":[{"kind":"hook","event":"PreTooluse"}]}`, `deniedCapabilities[0]: event: "PreTooluse" is not one of PreToolUse`},
		{`{"deniedCapabilities":[{"kind":"hook","tool":"Bash"}]}`, `deniedCapabilities[0]: tool: not a field of kind "hook" (it takes: event, matcher, type, except)`},
		{`{"deniedCapabilities":[{"kind":"hook","matcher":""}]}`, `deniedCapabilities[0]: matcher: must be a non-empty string, got a string`},
		{`{"deniedCapabilities":[{"kind":"mcp-server","transport":"grpc"}]}`, `transport: "grpc" is not one of stdio, http, sse, ws`},
		{`{"deniedCapabilities":[{"kind":"allowed-tool"}]}`, `deniedCapabilities[0]: kind "allowed-tool" needs a "tool" such as "Bash"`},
		{`{"deniedCapabilities":[{"kind":"host","outside":[]}]}`, `deniedCapabilities[0]: outside: must be a non-empty list of host patterns`},
		{`{"deniedCapabilities":[{"kind":"host","outside":["https://corp.example"]}]}`, `outside[0]: "https://corp.example" is not a host pattern`},
		{`{"deniedCapabilities":[{"kind":"runtime-fetch","unpinned":"yes"}]}`, `unpinned: must be true or false, got a string`},
		{`{"deniedCapabilities":[{"kind":"hook","except":["nobody"]}]}`, `deniedCapabilities[0]: except[0]: "nobody" is not a plugin id name@marketplace`},
		{`{"requireDeclaredHosts":1}`, `m.json: requireDeclaredHosts: must be true or false, got a number; treated as true (fail closed)`},
		{`{"deniedFindings":"download-and-run"}`, `m.json: deniedFindings: must be a list of finding kinds`},
		{`{"deniedFindings":["download-and-run",3]}`, `m.json: deniedFindings[1]: must be a finding kind string, got a number; every finding is denied`},
	} {
		e := capEngine(t, Layer{Name: "managed", Origin: "m.json", Settings: []byte(c.doc)})
		w := strings.Join(e.Warnings(), "\n")
		if !strings.Contains(w, c.want) {
			t.Errorf("%s: warnings\n%s\nwant %q", c.doc, w, c.want)
		}
	}
}

// User and project settings cannot set the keys: they are honoured only
// in managed settings, with a warning elsewhere.
func TestCapabilityKeysAreManagedOnly(t *testing.T) {
	m := settings.Merge([]settings.Document{
		{Scope: settings.ScopeManaged, Name: "managed.json", Data: []byte(`{"deniedCapabilities":[{"kind":"hook"}]}`)},
		{Scope: settings.ScopeUser, Name: "user.json", Data: []byte(`{"deniedCapabilities":[],"requireDeclaredHosts":false}`)},
	})
	if _, ok := m.Unknown["requireDeclaredHosts"]; ok {
		t.Fatal("user requireDeclaredHosts kept")
	}
	if string(m.Unknown["deniedCapabilities"]) != `[{"kind":"hook"}]` {
		t.Fatalf("managed deniedCapabilities replaced by the user's: %s", m.Unknown["deniedCapabilities"])
	}
	if !strings.Contains(strings.Join(m.Warnings(), "\n"), "user.json: deniedCapabilities: only honoured in managed settings; ignored in user scope") {
		t.Fatalf("no warning: %v", m.Warnings())
	}
}

// The Claude Code export cannot carry the capability keys: it says so,
// naming the layer, rather than leave them out silently.
func TestExportWarnsAboutCapabilityKeys(t *testing.T) {
	e := capEngine(t, Layer{Name: "managed", Settings: []byte(`{"deniedCapabilities": [{"kind": "hook"}]}`)})
	x := e.ExportClaude()
	if _, ok := x.Settings[KeyDeniedCapabilities]; ok {
		t.Fatalf("exported %v", x.Settings)
	}
	if !strings.Contains(strings.Join(x.Warnings, "\n"), "layer managed sets deniedCapabilities, requireDeclaredHosts or deniedFindings; Claude Code cannot enforce them") {
		t.Fatalf("warnings %v", x.Warnings)
	}
}
