package plugin

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseHooksForms(t *testing.T) {
	file := `{
  "description": "guard",
  "hooks": {
    "PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "check", "timeout": 60}]}],
    "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "review", "if": "Bash(git push:*)", "asyncRewake": true}]}],
    "Stop": [{"hooks": [{"type": "prompt", "prompt": "Is the task done?"}]}]
  }
}`
	h, diags, err := ParseHooks([]byte(file), "hooks.json")
	if err != nil || len(diags) != 0 {
		t.Fatalf("ParseHooks: %v %v", err, diags)
	}
	want := map[HookEvent][]HookMatcher{
		HookPreToolUse:  {{Matcher: "Edit|Write", Hooks: []Hook{{Type: "command", Command: "check", Timeout: 60}}}},
		HookPostToolUse: {{Matcher: "Bash", Hooks: []Hook{{Type: "command", Command: "review"}}}},
		HookStop:        {{Hooks: []Hook{{Type: "prompt", Prompt: "Is the task done?"}}}},
	}
	if h.Description != "guard" || len(h.Hooks) != 3 || !reflect.DeepEqual(h.Hooks[HookPreToolUse], want[HookPreToolUse]) || !reflect.DeepEqual(h.Hooks[HookStop], want[HookStop]) {
		t.Errorf("hooks = %+v", h)
	}
	// Keys Claude Code defines are kept for the runtime.
	if x := h.Hooks[HookPostToolUse][0].Hooks[0].Extra; string(x["if"]) != `"Bash(git push:*)"` || string(x["asyncRewake"]) != "true" {
		t.Errorf("extra = %q", x)
	}
	// The manifest's inline form: events at the top level.
	inline := `{"SessionStart": [{"hooks": [{"type": "command", "command": "hi"}]}]}`
	h, _, err = ParseHooks([]byte(inline), "plugin.json")
	if err != nil || len(h.Hooks[HookSessionStart]) != 1 {
		t.Errorf("inline form: %+v %v", h, err)
	}
}

func TestParseHooksProblems(t *testing.T) {
	tests := []struct {
		name, in, field, msg string
		warn                 bool
	}{
		{"bad regex", `{"hooks":{"PreToolUse":[{"matcher":"(","hooks":[{"type":"command","command":"x"}]}]}}`, "hooks.PreToolUse[0].matcher", "regular expression", false},
		{"timeout type", `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"x","timeout":"1m"}]}]}}`, "hooks.PreToolUse[0].hooks[0].timeout", "expected number of seconds, got string", false},
		{"negative timeout", `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"x","timeout":-1}]}]}}`, "hooks.PreToolUse[0].hooks[0].timeout", "must be a positive number of seconds", false},
		{"missing type", `{"hooks":{"PermissionRequest":[{"hooks":[{"command":"x"}]}]}}`, "hooks.PermissionRequest[0].hooks[0].type", "required", false},
		{"missing hooks", `{"hooks":{"PreToolUse":[{"matcher":"x"}]}}`, "hooks.PreToolUse[0].hooks", "required", false},
		{"matcher object in a guard event", `{"hooks":{"PreToolUse":[{"matcher":{"tool":"Bash"},"hooks":[{"type":"command","command":"x"}]}]}}`, "hooks.PreToolUse[0].matcher", "expected string, got object", false},
		// Outside PreToolUse and PermissionRequest, what cannot be used is
		// left out with a warning, as Claude Code does.
		{"bad hook outside the guard events", `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"x","timeout":-1}]}]}}`, "hooks.Stop[0].hooks[0].timeout", "this hook is left out", true},
		{"matcher object outside the guard events", `{"hooks":{"Stop":[{"matcher":{"a":1},"hooks":[{"type":"command","command":"x"}]}]}}`, "hooks.Stop[0].matcher", "left out", true},
		{"missing hooks outside the guard events", `{"hooks":{"SessionStart":[{"matcher":"x"}]}}`, "hooks.SessionStart[0].hooks", "left out", true},
		{"event not array", `{"hooks":{"Stop":{}}}`, "hooks.Stop", "expected array", false},
		{"unknown event", `{"hooks":{"BeforeLunch":[{"hooks":[{"type":"command","command":"x"}]}]}}`, "hooks.BeforeLunch", "unknown hook event", true},
		{"unknown hook key", `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"x","shell":"zsh"}]}]}}`, "hooks.Stop[0].hooks[0].shell", "unknown key", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, diags, err := ParseHooks([]byte(tc.in), "hooks.json")
			if tc.warn != (err == nil) {
				t.Fatalf("err = %v, want warning only: %v", err, tc.warn)
			}
			for _, d := range diags {
				if d.Field == tc.field && strings.Contains(d.Message, tc.msg) && (d.Severity == SeverityWarning) == tc.warn {
					return
				}
			}
			t.Errorf("no diagnostic %s %q in %v", tc.field, tc.msg, diags)
		})
	}
}

// TestParseHooksLeavesOut: outside the guard events a hook or matcher
// group that cannot be used is left out and the rest is kept; a broken
// guard hook fails the file (the plugin is refused rather than run
// unguarded), as in Claude Code.
func TestParseHooksLeavesOut(t *testing.T) {
	h, _, err := ParseHooks([]byte(`{"hooks":{
		"Stop":[{"matcher":{"a":1},"hooks":[{"type":"command","command":"dropped"}]},{"hooks":[{"type":"command","command":"kept"},{"type":"command"}]}],
		"SessionStart":[{"hooks":[{"type":"command","command":"start"}]}]}}`), "hooks.json")
	if err != nil {
		t.Fatal(err)
	}
	stop := h.Hooks[HookStop]
	if len(stop) != 1 || len(stop[0].Hooks) != 1 || stop[0].Hooks[0].Command != "kept" || len(h.Hooks[HookSessionStart]) != 1 {
		t.Errorf("hooks = %+v", h.Hooks)
	}
	if _, _, err := ParseHooks([]byte(`{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"kept"},{"type":"command"}]}]}}`), "hooks.json"); err == nil {
		t.Error("a broken PreToolUse hook did not fail the file")
	}
}

func TestParseMCPServersForms(t *testing.T) {
	wrapped := `{"mcpServers": {
  "db": {"command": "${CLAUDE_PLUGIN_ROOT}/db", "args": ["--ro"], "env": {"DB_URL": "${DB_URL}"}},
  "asana": {"type": "sse", "url": "https://mcp.asana.com/sse"},
  "gh": {"type": "http", "url": "https://api.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
}}`
	bare := `{
  "db": {"command": "${CLAUDE_PLUGIN_ROOT}/db", "args": ["--ro"], "env": {"DB_URL": "${DB_URL}"}},
  "asana": {"type": "sse", "url": "https://mcp.asana.com/sse"},
  "gh": {"type": "http", "url": "https://api.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
}`
	a, _, err := ParseMCPServers([]byte(wrapped), ".mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := ParseMCPServers([]byte(bare), ".mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("wrapped and bare forms differ:\n%+v\n%+v", a, b)
	}
	if got := a.Names(); !reflect.DeepEqual(got, []string{"asana", "db", "gh"}) {
		t.Errorf("names = %v", got)
	}
	db := a.Servers["db"]
	if db.IsRemote() || db.Command != "${CLAUDE_PLUGIN_ROOT}/db" || db.Env["DB_URL"] != "${DB_URL}" || !a.Servers["gh"].IsRemote() {
		t.Errorf("servers = %+v", a.Servers)
	}
	// An entry that cannot be used fails alone, as in Claude Code: no
	// error, the entry in Failed with its field and reason, the others kept.
	failing := []struct{ in, name, field, msg string }{
		{`{"x":{"type":"grpc","url":"https://x"},"ok":{"command":"c"}}`, "x", "x", "unknown server type"},
		{`{"x":{"command":"c","env":{"N":1}},"ok":{"command":"c"}}`, "x", "x", "x.env.N: expected string, got number"},
		{`{"x":{"type":"http","url":"ftp://x"},"ok":{"command":"c"}}`, "x", "x", "https://"},
		{`{"x":{"type":"http"},"ok":{"command":"c"}}`, "x", "x", "x.url: required for a http server"},
		{`{"bad:name":{"command":"c"},"ok":{"command":"c"}}`, "bad:name", `["bad:name"]`, "server name"},
		{`{" padded":{"command":"c"},"ok":{"command":"c"}}`, " padded", `[" padded"]`, "server name"},
		{`{"x":[],"ok":{"command":"c"}}`, "x", "x", "expected object"},
	}
	for _, tc := range failing {
		c, diags, err := ParseMCPServers([]byte(tc.in), ".mcp.json")
		if err != nil || hasErrors(diags) {
			t.Errorf("%s: error %v (%v); want the entry to fail alone", tc.in, err, diags)
			continue
		}
		if _, ok := c.Servers["ok"]; !ok || len(c.Servers) != 1 {
			t.Errorf("%s: servers %v; want only ok", tc.in, c.Names())
		}
		if len(c.Failed) != 1 || c.Failed[0].Name != tc.name || c.Failed[0].Field != tc.field || !strings.Contains(c.Failed[0].Reason, tc.msg) || c.Failed[0].Kind != KindMCPServer {
			t.Errorf("%s: failed = %+v; want %s at %s: %s", tc.in, c.Failed, tc.name, tc.field, tc.msg)
		}
		if len(diags) == 0 || !strings.Contains(diags[0].Message, "cannot be used and is skipped") {
			t.Errorf("%s: diags %v; want a warning saying the server is skipped", tc.in, diags)
		}
	}
	// Listed as Claude Code lists them: a name with a space, and an http
	// server whose url is the empty placeholder (with a warning: it cannot
	// start until filled in).
	c, diags, err := ParseMCPServers([]byte(`{"google calendar":{"type":"http","url":"https://cal.example/mcp"},"later":{"type":"http","url":""}}`), ".mcp.json")
	if err != nil || len(c.Failed) != 0 || !reflect.DeepEqual(c.Names(), []string{"google calendar", "later"}) {
		t.Errorf("listed servers = %v, failed %v, err %v", c.Names(), c.Failed, err)
	}
	if len(diags) != 1 || diags[0].Severity != SeverityWarning || diags[0].Field != "later.url" || !strings.Contains(diags[0].Message, "cannot start") {
		t.Errorf("empty url diags = %v", diags)
	}
	_, diags, err = ParseMCPServers([]byte(`{"mcpServers":[]}`), ".mcp.json")
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "mcpServers" || !strings.Contains(fe.Msg, "expected object") {
		t.Errorf("servers not an object: %v (%v)", err, diags)
	}
}

func TestParseLSPServers(t *testing.T) {
	for _, in := range []string{
		`{"go":{"command":"gopls","args":["serve"],"extensionToLanguage":{".go":"go"},"settings":{"x":1}}}`,
		`{"lspServers":{"go":{"command":"gopls","args":["serve"],"extensionToLanguage":{".go":"go"},"settings":{"x":1}}}}`,
	} {
		c, _, err := ParseLSPServers([]byte(in), ".lsp.json")
		if err != nil {
			t.Fatal(err)
		}
		s := c.Servers["go"]
		if s.Command != "gopls" || s.ExtensionToLanguage[".go"] != "go" || string(s.Settings) != `{"x":1}` || !reflect.DeepEqual(c.Names(), []string{"go"}) {
			t.Errorf("%s: %+v", in, c)
		}
	}
	for _, tc := range []struct{ in, msg string }{
		{`{"go":{"args":[]},"rs":{"command":"ra"}}`, "go.command: required field is missing"},
		{`{"go":{"command":"gopls","transport":"pigeon"},"rs":{"command":"ra"}}`, "go.transport: unknown transport"},
	} {
		c, diags, err := ParseLSPServers([]byte(tc.in), ".lsp.json")
		if err != nil {
			t.Errorf("%s: %v (%v); want the entry to fail alone", tc.in, err, diags)
			continue
		}
		if !reflect.DeepEqual(c.Names(), []string{"rs"}) || len(c.Failed) != 1 || c.Failed[0].Name != "go" ||
			c.Failed[0].Kind != KindLSPServer || !strings.Contains(c.Failed[0].Reason, tc.msg) {
			t.Errorf("%s: servers %v failed %+v; want go failed with %q", tc.in, c.Names(), c.Failed, tc.msg)
		}
	}
}

func TestParseFrontMatter(t *testing.T) {
	tests := []struct {
		name string
		in   string
		meta map[string]any
		body string
	}{
		{"none", "# Title\n", nil, "# Title\n"},
		{"simple", "---\nname: ship\ndescription: Ship it\nallowed-tools: [Bash, Read]\n---\nBody\n", map[string]any{"name": "ship", "description": "Ship it", "allowed-tools": []any{"Bash", "Read"}}, "Body\n"},
		{"crlf", "---\r\nname: x\r\n---\r\nBody", map[string]any{"name": "x"}, "Body"},
		{"empty header", "---\n---\nBody", map[string]any{}, "Body"},
		{"no body", "---\nname: x\n---", map[string]any{"name": "x"}, ""},
		{"dots close", "---\nname: x\n...\nBody", map[string]any{"name": "x"}, "Body"},
		{"not at top", "\n---\nname: x\n---\n", nil, "\n---\nname: x\n---\n"},
		{"lenient unquoted colon", "---\nname: a\ndescription: Use it when: things happen\n  and more\n---\nB", map[string]any{"name": "a", "description": "Use it when: things happen\n  and more"}, "B"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			meta, body, err := ParseFrontMatter([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(meta, tc.meta) || string(body) != tc.body {
				t.Errorf("got %#v %q; want %#v %q", meta, body, tc.meta, tc.body)
			}
		})
	}
	for _, bad := range []string{
		"---\nname: x\nno closing line\n",
		"---\n- a\n- b\n---\n",
		"---\n[unclosed\n---\n",
		"---\n" + strings.Repeat("k: v\n", 60000) + "---\n",
	} {
		_, _, err := ParseFrontMatter([]byte(bad))
		var fe *FrontMatterError
		if !errors.As(err, &fe) {
			t.Errorf("%.30q: %v", bad, err)
		}
	}
}
