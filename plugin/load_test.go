package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeTree creates files under root; a value starting with "->" makes a
// symlink to the rest.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func componentList(p *Plugin) []string {
	var out []string
	for _, c := range p.Components {
		out = append(out, string(c.Kind)+":"+c.Name+"="+c.Path)
	}
	return out
}

func parseEntry(t *testing.T, entry string) *Entry {
	t.Helper()
	m, _, err := ParseMarketplace([]byte(wrap(entry)), "marketplace.json")
	if err != nil {
		t.Fatal(err)
	}
	return &m.Plugins[0]
}

func TestLoadDefaultLayout(t *testing.T) {
	root := filepath.Join(t.TempDir(), "deploy")
	writeTree(t, root, map[string]string{
		"commands/ship.md":            "---\ndescription: ship\n---\nShip it.",
		"commands/db/migrate.md":      "Migrate.",
		"commands/notes.txt":          "not a command",
		"commands/.hidden.md":         "hidden",
		"agents/reviewer.md":          "---\nname: reviewer\n---\n",
		"skills/release/SKILL.md":     "---\nname: release\ndescription: d\n---\n",
		"skills/release/ref.md":       "reference, not a skill",
		"skills/empty/README.md":      "no SKILL.md here",
		"output-styles/terse.md":      "Be terse.",
		"hooks/hooks.json":            `{"hooks":{"PreToolUse":[{"matcher":"Edit|Write","hooks":[{"type":"command","command":"x","timeout":60}]}],"Stop":[{"hooks":[{"type":"command","command":"y"}]}]}}`,
		".mcp.json":                   `{"db":{"command":"${CLAUDE_PLUGIN_ROOT}/db"},"api":{"type":"http","url":"https://api.example/mcp"}}`,
		".lsp.json":                   `{"go":{"command":"gopls","args":["serve"],"extensionToLanguage":{".go":"go"}}}`,
		"bin/tool":                    "#!/bin/sh",
		".claude-plugin/unrelated.md": "x",
	})
	p, diags, err := Load(root, nil)
	if err != nil {
		t.Fatalf("Load: %v (%v)", err, diags)
	}
	if p.Manifest.Name != "deploy" {
		t.Errorf("name from the directory = %q", p.Manifest.Name)
	}
	want := []string{
		"command:db:migrate=commands/db/migrate.md",
		"command:ship=commands/ship.md",
		"agent:reviewer=agents/reviewer.md",
		"skill:release=skills/release/SKILL.md",
		"output-style:terse=output-styles/terse.md",
		"hook:PreToolUse=hooks/hooks.json",
		"hook:Stop=hooks/hooks.json",
		"mcp-server:api=.mcp.json",
		"mcp-server:db=.mcp.json",
		"lsp-server:go=.lsp.json",
	}
	if got := componentList(p); !reflect.DeepEqual(got, want) {
		t.Errorf("components:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLoadRootSkill(t *testing.T) {
	root := filepath.Join(t.TempDir(), "one-skill")
	writeTree(t, root, map[string]string{"SKILL.md": "---\nname: x\ndescription: d\n---\n"})
	p, _, err := Load(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := componentList(p); !reflect.DeepEqual(got, []string{"skill:one-skill=SKILL.md"}) {
		t.Errorf("components = %v", got)
	}
	// With a skills/ directory the root SKILL.md is not a second skill.
	writeTree(t, root, map[string]string{"skills/a/SKILL.md": "x"})
	p, _, err = Load(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := componentList(p); !reflect.DeepEqual(got, []string{"skill:a=skills/a/SKILL.md"}) {
		t.Errorf("components = %v", got)
	}
}

func TestLoadStrictMerge(t *testing.T) {
	root := filepath.Join(t.TempDir(), "dir-name")
	writeTree(t, root, map[string]string{
		".claude-plugin/plugin.json": `{"name":"deploy","version":"2.0.0","commands":["./extra/go.md"],"dependencies":["base"]}`,
		"commands/ship.md":           "x",
		"extra/go.md":                "x",
		"more/x.md":                  "x",
	})
	e := parseEntry(t, `{"name":"deploy-entry","source":"./p","version":"1.0.0","description":"from the entry","category":"ops",
		"author":{"name":"Ops"},"commands":["./more/x.md"],"dependencies":["base","tools@other"]}`)
	p, diags, err := Load(root, e)
	if err != nil {
		t.Fatal(err)
	}
	m := p.Manifest
	// plugin.json wins for what it sets; the entry fills the rest.
	if m.Name != "deploy" || m.Version != "2.0.0" || m.Description != "from the entry" || m.Author.Name != "Ops" {
		t.Errorf("merged manifest = %+v", m)
	}
	if got := len(m.Dependencies); got != 2 {
		t.Errorf("dependencies = %v", m.Dependencies)
	}
	// Declared command paths replace commands/ and combine entry and plugin.json.
	if got := componentList(p); !reflect.DeepEqual(got, []string{"command:go=extra/go.md", "command:x=more/x.md"}) {
		t.Errorf("components = %v", got)
	}
	var warned []string
	for _, d := range diags {
		if d.Severity == SeverityWarning {
			warned = append(warned, d.Field)
		}
	}
	if !reflect.DeepEqual(warned, []string{"name", "version"}) {
		t.Errorf("warnings on %v, want name and version: %v", warned, diags)
	}
}

func TestLoadStrictFalse(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"skills/a/SKILL.md": "x", "skills/b/SKILL.md": "x", "skills/c/SKILL.md": "x",
	})
	e := parseEntry(t, `{"name":"ab","source":"./","strict":false,"skills":["./skills/a","./skills/b"]}`)
	p, _, err := Load(root, e)
	if err != nil {
		t.Fatal(err)
	}
	if got := componentList(p); !reflect.DeepEqual(got, []string{"skill:a=skills/a/SKILL.md", "skill:b=skills/b/SKILL.md"}) {
		t.Errorf("components = %v", got)
	}

	// A plugin.json with metadata only is ignored, with a warning.
	writeTree(t, root, map[string]string{".claude-plugin/plugin.json": `{"name":"other","version":"9.9.9"}`})
	p, diags, err := Load(root, e)
	if err != nil {
		t.Fatal(err)
	}
	if p.Manifest.Name != "ab" || p.Manifest.Version != "" || len(diags) != 1 || diags[0].Severity != SeverityWarning {
		t.Errorf("manifest %+v diags %v", p.Manifest, diags)
	}

	// One that also declares components conflicts with the entry.
	writeTree(t, root, map[string]string{".claude-plugin/plugin.json.new": `{"name":"ab","skills":"./skills/c","hooks":{"Stop":[{"hooks":[{"type":"command","command":"x"}]}]}}`})
	if err := os.Rename(filepath.Join(root, ".claude-plugin/plugin.json.new"), filepath.Join(root, ".claude-plugin/plugin.json")); err != nil {
		t.Fatal(err)
	}
	p, diags, err = Load(root, e)
	var pe *Error
	if !errors.As(err, &pe) || pe.Type != TypeConflict || pe.Layer != LayerMaterialization || p != nil {
		t.Fatalf("conflict: plugin %v err %v", p, err)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "skills,hooks" || !strings.Contains(fe.Msg, "strict: false") {
		t.Errorf("conflict error = %v", err)
	}
	if !hasErrors(diags) {
		t.Errorf("conflict not in diagnostics")
	}
}

func TestLoadInlineComponents(t *testing.T) {
	root := filepath.Join(t.TempDir(), "inline")
	writeTree(t, root, map[string]string{
		".claude-plugin/plugin.json": `{"name":"inline","hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"x"}]}]},
			"mcpServers":{"mcpServers":{"db":{"command":"db"}}}}`,
		"hooks/hooks.json": `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"y"}]}]}}`,
	})
	p, _, err := Load(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"hook:SessionStart=.claude-plugin/plugin.json", "hook:Stop=hooks/hooks.json", "mcp-server:db=.claude-plugin/plugin.json"}
	if got := componentList(p); !reflect.DeepEqual(got, want) {
		t.Errorf("components = %v", got)
	}
	// Inline in the marketplace entry: no file.
	e := parseEntry(t, `{"name":"e","source":"./e","strict":false,"lspServers":{"go":{"command":"gopls"}}}`)
	p, _, err = Load(t.TempDir(), e)
	if err != nil {
		t.Fatal(err)
	}
	if got := componentList(p); !reflect.DeepEqual(got, []string{"lsp-server:go="}) {
		t.Errorf("components = %v", got)
	}
}

func TestLoadErrors(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.md": "x", "skill/SKILL.md": "x", "hooks.json": `{"hooks":{}}`,
		"meta/plugin.json": `{"name":"p"}`, "hookdir/hooks.json": `{"hooks":{}}`})
	tests := []struct {
		name  string
		files map[string]string
		typ   string
		field string
		msg   string
	}{
		{"malformed plugin.json", map[string]string{".claude-plugin/plugin.json": "{\"name\": }"}, TypeManifestParse, "", "expected a value"},
		{"dotdot component path", map[string]string{".claude-plugin/plugin.json": `{"name":"p","commands":"./../x"}`}, TypeManifestParse, "commands", `".."`},
		{"symlinked command escapes", map[string]string{"commands/evil.md": "->" + filepath.Join(outside, "secret.md")}, TypeComponentLoad, "commands", "outside the plugin root"},
		{"symlinked commands dir escapes", map[string]string{"commands": "->" + outside}, TypeComponentLoad, "commands", "outside the plugin root"},
		{"symlinked skill escapes", map[string]string{"skills/s": "->" + filepath.Join(outside, "skill")}, TypeComponentLoad, "skills", "outside the plugin root"},
		{"symlinked hooks escape", map[string]string{"hooks/hooks.json": "->" + filepath.Join(outside, "hooks.json")}, TypeComponentLoad, "hooks", "outside the plugin root"},
		{"symlinked plugin.json escapes", map[string]string{".claude-plugin/plugin.json": "->" + filepath.Join(outside, "hooks.json")}, TypeComponentLoad, "plugin.json", "outside the plugin root"},
		{"symlinked manifest dir escapes", map[string]string{".claude-plugin": "->" + filepath.Join(outside, "meta")}, TypeComponentLoad, "plugin.json", "outside the plugin root"},
		{"symlinked hooks dir escapes", map[string]string{"hooks": "->" + filepath.Join(outside, "hookdir")}, TypeComponentLoad, "hooks", "outside the plugin root"},
		{"bad hooks file", map[string]string{"hooks/hooks.json": `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","timeout":"soon","command":"x"}]}]}}`}, TypeComponentLoad, "hooks.PreToolUse[0].hooks[0].timeout", "expected number"},
		{"malformed mcp file", map[string]string{".mcp.json": `{"mcpServers":{"db":{"command":"x"}}`}, TypeComponentLoad, "", "expected"},
		{"command path not markdown", map[string]string{".claude-plugin/plugin.json": `{"name":"p","commands":"./run.sh"}`, "run.sh": "x"}, TypeComponentLoad, "commands[0]", "Markdown"},
		{"hooks path is a directory", map[string]string{".claude-plugin/plugin.json": `{"name":"p","hooks":"./hooks"}`, "hooks/x": "x"}, TypeComponentLoad, "hooks[0]", "directory"},
		{"invalid directory name", nil, TypeManifestInvalid, "name", "plugin name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "p")
			if tc.files == nil {
				root = filepath.Join(t.TempDir(), "bad name")
			}
			if err := os.MkdirAll(root, 0o755); err != nil {
				t.Fatal(err)
			}
			writeTree(t, root, tc.files)
			p, _, err := Load(root, nil)
			var pe *Error
			if !errors.As(err, &pe) || pe.Type != tc.typ || p != nil {
				t.Fatalf("got plugin %v, error %v; want type %s", p, err, tc.typ)
			}
			var fe *FieldError
			var se *SyntaxError
			switch {
			case errors.As(err, &fe):
				if fe.Field != tc.field || !strings.Contains(fe.Msg, tc.msg) {
					t.Errorf("field %q msg %q; want %q containing %q", fe.Field, fe.Msg, tc.field, tc.msg)
				}
			case errors.As(err, &se):
				if !strings.Contains(se.Msg, tc.msg) || se.Line != 1 {
					t.Errorf("syntax error %v", se)
				}
			default:
				t.Errorf("error %v carries no position", err)
			}
		})
	}
}

func TestLoadNotADirectory(t *testing.T) {
	_, _, err := Load(filepath.Join(t.TempDir(), "missing"), nil)
	var pe *Error
	if !errors.As(err, &pe) || pe.Type != TypeNotFound {
		t.Errorf("missing dir: %v", err)
	}
	f := filepath.Join(t.TempDir(), "file")
	writeTree(t, filepath.Dir(f), map[string]string{"file": "x"})
	if _, _, err := Load(f, nil); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file as root: %v", err)
	}
}

func TestEntryLocalDir(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	writeTree(t, root, map[string]string{"plugins/a/x": "x", "plugins/evil": "->" + outside})
	e := parseEntry(t, `{"name":"a","source":"./plugins/a"}`)
	if dir, err := e.LocalDir(root); err != nil || dir != filepath.Join(root, "plugins", "a") {
		t.Errorf("LocalDir = %q, %v", dir, err)
	}
	e = parseEntry(t, `{"name":"evil","source":"./plugins/evil"}`)
	if _, err := e.LocalDir(root); err == nil || !strings.Contains(err.Error(), "outside the marketplace") {
		t.Errorf("escaping entry: %v", err)
	}
	e = parseEntry(t, `{"name":"gone","source":"./plugins/gone"}`)
	if _, err := e.LocalDir(root); err == nil || !strings.Contains(HintOf(err), "not there") {
		t.Errorf("missing entry dir: %v", err)
	}
	e = parseEntry(t, `{"name":"gh","source":{"source":"github","repo":"o/r"}}`)
	var pe *Error
	if _, err := e.LocalDir(root); !errors.As(err, &pe) || pe.Type != TypeSource {
		t.Errorf("github entry: %v", err)
	}
}

// A component directory that is a symlink inside the plugin is followed, and
// files are named by the path the plugin uses.
func TestLoadSymlinkInsideRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "p")
	writeTree(t, root, map[string]string{
		"src/cmds/a.md":      "x",
		"src/skill/SKILL.md": "x",
		"commands":           "->src/cmds",
		"agents/b.md":        "->../src/cmds/a.md",
		"skills/linked":      "->../src/skill",
	})
	p, _, err := Load(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"command:a=commands/a.md", "agent:b=agents/b.md", "skill:linked=skills/linked/SKILL.md"}
	if got := componentList(p); !reflect.DeepEqual(got, want) {
		t.Errorf("components = %v", got)
	}
}

// TestLoadDuplicateNamesKeepFirst: of two components of a kind with the
// same name the first is kept and a warning names both files (the entry
// by name: "the marketplace entry"), as Claude Code keeps one.
func TestLoadDuplicateNamesKeepFirst(t *testing.T) {
	root := filepath.Join(t.TempDir(), "p")
	writeTree(t, root, map[string]string{
		".claude-plugin/plugin.json": `{"name":"p","commands":["./a","./b"]}`,
		"a/x.md":                     "x", "b/x.md": "x",
		".lsp.json": `{"gopls":{"command":"gopls"}}`,
	})
	e := parseEntry(t, `{"name":"p","source":"./p","lspServers":{"gopls":{"command":"entry-gopls"}}}`)
	p, diags, err := Load(root, e)
	if err != nil {
		t.Fatal(err)
	}
	if got := componentList(p); !reflect.DeepEqual(got, []string{"command:x=a/x.md", "lsp-server:gopls="}) {
		t.Errorf("components = %v", got)
	}
	var msgs []string
	for _, d := range diags {
		if d.Severity == SeverityWarning {
			msgs = append(msgs, d.Message)
		}
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{`two commands are named "x": a/x.md and b/x.md; the first is kept`,
		`two lsp-servers are named "gopls": the marketplace entry and .lsp.json; the first is kept`} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings %q; want %q", msgs, want)
		}
	}
}
