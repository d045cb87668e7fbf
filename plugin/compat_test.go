package plugin

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestLoadFailedComponents: an MCP or LSP entry Claude Code cannot use fails
// alone, with its file, field and reason; the rest of the plugin loads.
// Only what makes the plugin unsafe or unreadable refuses it.
func TestLoadFailedComponents(t *testing.T) {
	tests := []struct {
		name   string
		files  map[string]string
		loaded []string // "kind name"
		failed []string // "kind name path field: reason substring"
	}{
		{
			name: "server name with a space loads, as in Claude Code",
			files: map[string]string{
				".mcp.json":     `{"mcpServers":{"google calendar":{"type":"http","url":"https://cal.example/mcp"},"gmail":{"type":"http","url":"https://mail.example/mcp"}}}`,
				"commands/a.md": "a",
			},
			loaded: []string{"command a", "mcp-server gmail", "mcp-server google calendar"},
		},
		{
			name: "server name with a colon",
			files: map[string]string{
				".mcp.json":     `{"mcpServers":{"a:b":{"type":"http","url":"https://cal.example/mcp"},"gmail":{"type":"http","url":"https://mail.example/mcp"}}}`,
				"commands/a.md": "a",
			},
			loaded: []string{"command a", "mcp-server gmail"},
			failed: []string{`mcp-server a:b .mcp.json mcpServers["a:b"]: contains ':'`},
		},
		{
			name: "placeholder empty url is listed, as in Claude Code",
			files: map[string]string{
				".mcp.json":         `{"mcpServers":{"crm":{"type":"http","url":""},"docs":{"command":"node","args":["${CLAUDE_PLUGIN_ROOT}/s.js"]}}}`,
				"skills/s/SKILL.md": "---\nname: s\ndescription: d\n---\n",
			},
			loaded: []string{"skill s", "mcp-server crm", "mcp-server docs"},
		},
		{
			name: "missing url",
			files: map[string]string{
				".mcp.json":         `{"mcpServers":{"crm":{"type":"http"},"docs":{"command":"node","args":["${CLAUDE_PLUGIN_ROOT}/s.js"]}}}`,
				"skills/s/SKILL.md": "---\nname: s\ndescription: d\n---\n",
			},
			loaded: []string{"skill s", "mcp-server docs"},
			failed: []string{"mcp-server crm .mcp.json mcpServers.crm: required for a http server"},
		},
		{
			name: "url valid only after expansion of its default",
			files: map[string]string{
				".mcp.json": `{"mcpServers":{"tlsradar":{"type":"http","url":"${TLSRADAR_BASE_URL:-https://tlsradar.com}/api/v1/mcp"}}}`,
			},
			loaded: []string{"mcp-server tlsradar"},
		},
		{
			name: "url from the environment is judged at load",
			files: map[string]string{
				".mcp.json": `{"mcpServers":{"api":{"type":"sse","url":"${API_URL}/sse","headers":{"Authorization":"Bearer ${TOKEN}"}}}}`,
			},
			loaded: []string{"mcp-server api"},
		},
		{
			name: "default that is not a url",
			files: map[string]string{
				".mcp.json": `{"mcpServers":{"api":{"type":"http","url":"${API_URL:-ftp://x}"}}}`,
			},
			failed: []string{"mcp-server api .mcp.json mcpServers.api: must be an https:// URL"},
		},
		{
			name: "inline server in plugin.json",
			files: map[string]string{
				".claude-plugin/plugin.json": `{"name":"p","mcpServers":{"bad":{"type":"ws"},"good":{"command":"x"}}}`,
			},
			loaded: []string{"mcp-server good"},
			failed: []string{"mcp-server bad .claude-plugin/plugin.json mcpServers.bad: bad.url: required for a ws server"},
		},
		{
			name: "lsp entry without a command",
			files: map[string]string{
				".lsp.json": `{"go":{"command":"gopls"},"rust analyzer":{"command":"ra"},"py":{"args":["x"]}}`,
			},
			loaded: []string{"lsp-server go", "lsp-server rust analyzer"},
			failed: []string{
				`lsp-server py .lsp.json py: py.command: required`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "p")
			writeTree(t, root, tc.files)
			p, diags, err := Load(root, nil)
			if err != nil {
				t.Fatalf("Load refused the plugin: %v (%v)", err, diags)
			}
			var got []string
			for _, c := range p.Components {
				got = append(got, string(c.Kind)+" "+c.Name)
			}
			if !reflect.DeepEqual(got, tc.loaded) {
				t.Errorf("components = %q; want %q", got, tc.loaded)
			}
			if len(p.Failed) != len(tc.failed) {
				t.Fatalf("failed = %v; want %d: %q", p.Failed, len(tc.failed), tc.failed)
			}
			for i, f := range p.Failed {
				head := string(f.Kind) + " " + f.Name + " " + f.Path + " " + f.Field + ": "
				want := tc.failed[i]
				if !strings.HasPrefix(want, head) || !strings.Contains(f.Reason, strings.TrimPrefix(want, head)) {
					t.Errorf("failed[%d] = %q; want %q", i, head+f.Reason, want)
				}
			}
			for _, d := range diags {
				if d.Severity == SeverityError {
					t.Errorf("error diagnostic for a plugin that loads: %s", d)
				}
			}
		})
	}
}

// TestValidateShowsFailedComponents: validate reports a failed component
// as a warning with file, line and field, and --strict makes it an error.
func TestValidateShowsFailedComponents(t *testing.T) {
	root := filepath.Join(t.TempDir(), "p")
	writeTree(t, root, map[string]string{
		".claude-plugin/plugin.json": `{"name":"p","description":"d","version":"1.0.0","author":{"name":"a"}}`,
		".mcp.json":                  "{\"mcpServers\": {\n  \"google/calendar\": {\"type\":\"http\",\"url\":\"https://x.example\"}}}",
	})
	diags, err := Validate(root, false)
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	diags = withoutDirectoryChecks(diags)
	if len(diags) != 1 || diags[0].Severity != SeverityWarning || diags[0].Line != 2 ||
		diags[0].File != filepath.Join(root, ".mcp.json") || diags[0].Field != `mcpServers["google/calendar"]` ||
		!strings.Contains(diags[0].Message, "is skipped; the rest of the plugin loads") {
		t.Errorf("diags = %v", diags)
	}
	if _, err := Validate(root, true); err == nil {
		t.Error("strict validate passed a plugin with a failed server")
	}
}

// TestNamespaceFromPluginJSON: the plugin.json name wins for the namespace;
// without plugin.json the marketplace entry's name is used.
func TestNamespaceFromPluginJSON(t *testing.T) {
	base := t.TempDir()
	ops := filepath.Join(base, "claude-ops")
	writeTree(t, ops, map[string]string{
		".claude-plugin/plugin.json": `{"name":"ops"}`,
		"commands/ops-dash.md":       "x",
	})
	bare := filepath.Join(base, "bare")
	writeTree(t, bare, map[string]string{"commands/x.md": "x"})
	for _, tc := range []struct {
		dir   string
		entry *Entry
		want  string
	}{
		{ops, &Entry{Manifest: Manifest{Name: "claude-ops"}}, "ops"},
		{ops, nil, "ops"},
		{bare, &Entry{Manifest: Manifest{Name: "from-entry"}}, "from-entry"},
		{bare, nil, "bare"},
	} {
		p, _, err := Load(tc.dir, tc.entry)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Namespace(); got != tc.want {
			t.Errorf("Load(%s, %v).Namespace() = %q; want %q", filepath.Base(tc.dir), tc.entry != nil, got, tc.want)
		}
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"HOST": "h.example", "EMPTY": ""}
	v := Vars{
		PluginRoot: "/r", PluginData: "/d",
		UserConfig: map[string]string{"api_key": "k1"},
		Env:        func(k string) (string, bool) { s, ok := env[k]; return s, ok },
	}
	tests := []struct {
		in, want string
		missing  []string
	}{
		{"plain", "plain", nil},
		{"${CLAUDE_PLUGIN_ROOT}/bin/s --data ${CLAUDE_PLUGIN_DATA}", "/r/bin/s --data /d", nil},
		{"https://${HOST}/mcp", "https://h.example/mcp", nil},
		{"${NOPE:-https://tlsradar.com}/api", "https://tlsradar.com/api", nil},
		{"${HOST:-other}", "h.example", nil},
		{"${EMPTY:-fallback}", "fallback", nil},
		{"[${EMPTY}]", "[]", nil},
		{"Bearer ${user_config.api_key}", "Bearer k1", nil},
		{"${user_config.unset}", "${user_config.unset}", []string{"user_config.unset"}},
		{"${NOPE}/${NOPE}/${ALSO}", "${NOPE}/${NOPE}/${ALSO}", []string{"NOPE", "ALSO"}},
		{"$HOME ${ not a ref} ${} ${", "$HOME ${ not a ref} ${} ${", nil},
		{"${CLAUDE_PROJECT_DIR}", "${CLAUDE_PROJECT_DIR}", []string{"CLAUDE_PROJECT_DIR"}},
	}
	for _, tc := range tests {
		got, missing := v.Expand(tc.in)
		if got != tc.want || !reflect.DeepEqual(missing, tc.missing) {
			t.Errorf("Expand(%q) = %q %q; want %q %q", tc.in, got, missing, tc.want, tc.missing)
		}
	}
	s, missing := v.ExpandMCP(MCPServer{Type: "http", URL: "https://${HOST}/x", Headers: map[string]string{"A": "${user_config.api_key}"}, Args: []string{"${X}"}})
	if s.URL != "https://h.example/x" || s.Headers["A"] != "k1" || !reflect.DeepEqual(missing, []string{"X"}) {
		t.Errorf("ExpandMCP = %+v %v", s, missing)
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"${A}", "${A:-b}", "${user_config.k}", "${", "${}", "x${A:-${B}}y", "${A:-}"} {
		f.Add(s)
	}
	v := Vars{PluginRoot: "/r", Env: func(k string) (string, bool) { return "v", k == "A" }}
	f.Fuzz(func(t *testing.T, s string) {
		out, missing := v.Expand(s)
		if !strings.Contains(s, "${") && out != s {
			t.Fatalf("Expand changed %q without references: %q", s, out)
		}
		for _, m := range missing {
			if !strings.Contains(out, "${"+m) {
				t.Fatalf("missing %q not left in %q", m, out)
			}
		}
	})
}

// MCP oauth settings are kept (no "unknown key" warning) for the MCP
// client; an oauth that is not an object fails that server alone.
func TestMCPOAuthKept(t *testing.T) {
	c, diags, err := ParseMCPServers([]byte(`{"slack":{"type":"http","url":"https://mcp.slack.com/mcp","oauth":{"clientId":"1601185624273.8899143856786","callbackPort":3118}},
		"bad":{"type":"http","url":"https://x.example","oauth":"yes"}}`), ".mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(c.Servers["slack"].OAuth()); got != `{"clientId":"1601185624273.8899143856786","callbackPort":3118}` {
		t.Errorf("oauth = %s", got)
	}
	for _, d := range diags {
		if strings.Contains(d.Message, "unknown key") {
			t.Errorf("oauth reported as unknown: %s", d)
		}
	}
	if len(c.Failed) != 1 || c.Failed[0].Name != "bad" || !strings.Contains(c.Failed[0].Reason, "bad.oauth: expected object") {
		t.Errorf("failed = %+v", c.Failed)
	}
}

func TestUserConfigOptions(t *testing.T) {
	m := Manifest{UserConfig: []byte(`{"region":{"type":"string","title":"Region","default":"eu-west-1","required":true},
		"api_token":{"type":"string","sensitive":true},"port":{"type":"number","default":8080}}`)}
	opts, err := m.UserConfigOptions()
	if err != nil {
		t.Fatal(err)
	}
	if len(opts) != 3 || opts[0].Key != "api_token" || !opts[0].Sensitive || opts[1].Key != "port" || opts[1].DefaultString() != "8080" ||
		opts[2].Key != "region" || opts[2].DefaultString() != "eu-west-1" || !opts[2].Required {
		t.Fatalf("options = %+v", opts)
	}
	if err := opts[1].CheckValue("eighty"); err == nil {
		t.Error("number option took a word")
	}
	for _, bad := range []string{`{"bad key":{"type":"string"}}`, `{"k":{"type":"colour"}}`, `[1]`, `{"k":{"sensitive":"yes"}}`} {
		if _, err := (&Manifest{UserConfig: []byte(bad)}).UserConfigOptions(); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func FuzzUserConfigOptions(f *testing.F) {
	for _, s := range []string{`{"k":{"type":"string","default":"x"}}`, `{"n":{"type":"number","default":1,"sensitive":true}}`, `[]`, `{"bad key":{}}`, `{"k":null}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		opts, err := (&Manifest{UserConfig: []byte(s)}).UserConfigOptions()
		if err != nil {
			return
		}
		for _, o := range opts {
			if !validRefName(o.Key) {
				t.Fatalf("accepted key %q", o.Key)
			}
			_ = o.DefaultString()
		}
	})
}

// TestValidateClaudeVerdicts: validate gives Claude Code's verdicts and
// refuses the dependencies install would refuse.
func TestValidateClaudeVerdicts(t *testing.T) {
	meta := `"version":"1.0.0","description":"d","author":{"name":"a"}`
	mkt := func(plugins string) map[string]string {
		return map[string]string{".claude-plugin/marketplace.json": `{"name":"m","owner":{"name":"o"},"description":"d","version":"1",` +
			`"allowCrossMarketplaceDependenciesOn":["ok-mkt"],"plugins":[` + plugins + `]}`}
	}
	tests := []struct {
		name  string
		files map[string]string
		sev   Severity
		field string
		msg   string
	}{
		{"hooks without wrapper", map[string]string{".claude-plugin/plugin.json": `{"name":"p",` + meta + `}`,
			"hooks/hooks.json": `{"Stop":[{"hooks":[{"type":"command","command":"x"}]}]}`}, SeverityError, "", `without its "hooks" wrapper`},
		{"no manifest, no components", map[string]string{"README.md": "x"}, SeverityError, "", "no .claude-plugin/plugin.json"},
		{"no manifest, commands only", map[string]string{"commands/x.md": "---\ndescription: d\n---\nx"}, SeverityError, "", "unless it holds a skills tree"},
		{"manifest at the root", map[string]string{"plugin.json": `{"name":"p"}`, "commands/x.md": "x"}, SeverityError, "", "move it there"},
		{"author as a string", map[string]string{".claude-plugin/plugin.json": `{"name":"p","version":"1","description":"d","author":"me"}`, "commands/x.md": "x"},
			SeverityError, "author", "received string"},
		{"repository as an object", map[string]string{".claude-plugin/plugin.json": `{"name":"p",` + meta + `,"repository":{"url":"https://x"}}`, "commands/x.md": "x"},
			SeverityError, "repository", "received object"},
		{"claude- name", map[string]string{".claude-plugin/plugin.json": `{"name":"claude-x",` + meta + `}`, "commands/x.md": "x"},
			SeverityError, "name", `passes as one of Anthropic's own`},
		{"unlisted dependency", mkt(`{"name":"a","source":{"source":"github","repo":"o/a"},"dependencies":["ghost"]}`),
			SeverityError, "plugins[0].dependencies[0]", "does not list"},
		{"cross-marketplace dependency not allowed", mkt(`{"name":"a","source":{"source":"github","repo":"o/a"},"dependencies":["x@other"]}`),
			SeverityError, "plugins[0].dependencies[0]", "allowCrossMarketplaceDependenciesOn"},
		{"cycle", mkt(`{"name":"a","source":{"source":"github","repo":"o/a"},"dependencies":["b"]},{"name":"b","source":{"source":"github","repo":"o/b"},"dependencies":["c"]},{"name":"c","source":{"source":"github","repo":"o/c"},"dependencies":["a"]}`),
			SeverityError, "plugins[2].dependencies", "dependency cycle: a -> b -> c -> a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "p")
			writeTree(t, root, tc.files)
			diags, _ := Validate(root, false)
			for _, d := range diags {
				if d.Severity == tc.sev && d.Field == tc.field && strings.Contains(d.Message, tc.msg) {
					return
				}
			}
			t.Errorf("no %s at %q with %q in %v", tc.sev, tc.field, tc.msg, diags)
		})
	}
	// Allowed cross-marketplace and listed dependencies are fine.
	root := filepath.Join(t.TempDir(), "p")
	writeTree(t, root, mkt(`{"name":"a","source":{"source":"github","repo":"o/a"},"description":"d","author":{"name":"x"},"dependencies":["b","y@ok-mkt"]},{"name":"b","source":{"source":"github","repo":"o/b"},"description":"d","author":{"name":"x"}}`))
	if diags, err := Validate(root, false); err != nil || len(diags) != 0 {
		t.Errorf("valid marketplace: %v %v", err, diags)
	}
	if diags, _ := ValidateWith(root, ValidateOptions{Verbose: true}); len(diags) != 2 || diags[0].Field != "plugins[0].version" {
		t.Errorf("--verbose: %v; want the two no-version warnings", diags)
	}
}
