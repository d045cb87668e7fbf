package plugin

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const goodMarketplace = `{
  "name": "corp",
  "owner": {"name": "Corp IT", "email": "it@corp.example"},
  "description": "internal plugins",
  "version": "1.0.0",
  "plugins": [
    {"name": "deploy", "source": "./plugins/deploy", "version": "1.2.0", "description": "ship it",
     "author": {"name": "Ops"}}
  ]
}`

// wrap puts one plugin entry into an otherwise valid marketplace.
func wrap(entry string) string {
	return `{"name":"corp","owner":{"name":"IT"},"plugins":[` + entry + `]}`
}

func TestParseMarketplaceErrors(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		syntax    bool   // want *SyntaxError, else *FieldError
		field     string // FieldError.Field
		line, col int
		msg       string // substring of the message
	}{
		{name: "truncated", in: "{\n  \"name\": \"corp\",\n  \"plugins\": [\n", syntax: true, line: 4, col: 1, msg: "end of input"},
		{name: "trailing comma", in: "{\"name\": \"corp\",}", syntax: true, line: 1, col: 17, msg: "expected a quoted key"},
		{name: "bad literal", in: "{\"a\": tru}", syntax: true, line: 1, col: 7, msg: "expected true"},
		{name: "control char in string", in: "{\"a\": \"x\ty\"}", syntax: true, line: 1, col: 9, msg: "control character"},
		{name: "two values", in: "{} {}", syntax: true, line: 1, col: 4, msg: "after the top-level value"},
		{name: "column counts characters", in: "{\"é\": \"ü\" x}", syntax: true, line: 1, col: 11, msg: "expected ',' or '}'"},
		{name: "top level not object", in: `[1]`, field: "", line: 1, col: 1, msg: "expected object, got array"},
		{name: "wrong type repo", in: "{\"name\":\"corp\",\"owner\":{\"name\":\"IT\"},\"plugins\":[\n{\"name\":\"a\",\"source\":\"./a\"},{\"name\":\"b\",\"source\":\"./b\"},{\"name\":\"c\",\"source\":\"./c\"},\n  {\"name\": \"d\", \"source\": {\"source\": \"github\", \"repo\": 42}}]}",
			field: "plugins[3].source.repo", line: 3, col: 56, msg: "expected string, got number"},
		{name: "plugins not array", in: `{"name":"corp","owner":{"name":"IT"},"plugins":{}}`, field: "plugins", msg: "expected array, got object"},
		{name: "dotdot path", in: wrap(`{"name":"a","source":"./plugins/../../etc"}`), field: "plugins[0].source", msg: `contains ".."`},
		{name: "path without dot slash", in: wrap(`{"name":"a","source":"plugins/a"}`), field: "plugins[0].source", msg: "must start with ./"},
		{name: "absolute path", in: wrap(`{"name":"a","source":"/etc"}`), field: "plugins[0].source", msg: "absolute"},
		{name: "component path dotdot", in: wrap(`{"name":"a","source":"./a","commands":["./c","../x"]}`), field: "plugins[0].commands[1]", msg: `".."`},
		{name: "component path no dot slash", in: wrap(`{"name":"a","source":"./a","skills":"skills"}`), field: "plugins[0].skills", msg: "must start with ./"},
		{name: "missing name", in: `{"owner":{"name":"IT"},"plugins":[]}`, field: "name", msg: "required"},
		{name: "missing owner", in: `{"name":"corp","plugins":[]}`, field: "owner", msg: "required"},
		{name: "missing source", in: wrap(`{"name":"a"}`), field: "plugins[0].source", msg: "required"},
		{name: "invalid plugin name", in: wrap(`{"name":"../evil","source":"./a"}`), field: "plugins[0].name", msg: "must start with a letter"},
		{name: "duplicate plugin", in: wrap(`{"name":"a","source":"./a"},{"name":"a","source":"./b"}`), field: "plugins[1].name", msg: "listed twice"},
		{name: "unknown source kind", in: wrap(`{"name":"a","source":{"source":"ftp","url":"ftp://x"}}`), field: "plugins[0].source.source", msg: "unknown source kind"},
		{name: "github repo shape", in: wrap(`{"name":"a","source":{"source":"github","repo":"just-one"}}`), field: "plugins[0].source.repo", msg: "not owner/repo"},
		{name: "ref option injection", in: wrap(`{"name":"a","source":{"source":"github","repo":"o/r","ref":"--upload-pack=x"}}`), field: "plugins[0].source.ref", msg: "starts with '-'"},
		{name: "short sha", in: wrap(`{"name":"a","source":{"source":"url","url":"https://h/r.git","sha":"abc123"}}`), field: "plugins[0].source.sha", msg: "full commit hash"},
		{name: "url scheme", in: wrap(`{"name":"a","source":{"source":"url","url":"ext::sh -c evil"}}`), field: "plugins[0].source.url", msg: "must be an https://"},
		{name: "archive sha256", in: wrap(`{"name":"a","source":{"source":"archive","url":"https://h/a.zip","sha256":"xyz"}}`), field: "plugins[0].source.sha256", msg: "64 hex"},
		{name: "npm name", in: wrap(`{"name":"a","source":{"source":"npm","package":"../x"}}`), field: "plugins[0].source.package", msg: "npm package name"},
		{name: "git-subdir without path", in: wrap(`{"name":"a","source":{"source":"git-subdir","url":"o/r"}}`), field: "plugins[0].source.path", msg: "required"},
		{name: "unsafe version", in: wrap(`{"name":"a","source":"./a","version":"../1"}`), field: "plugins[0].version", msg: "cache directory"},
		{name: "strict not bool", in: wrap(`{"name":"a","source":"./a","strict":"no"}`), field: "plugins[0].strict", msg: "expected boolean, got string"},
		{name: "integrity shape", in: wrap(`{"name":"a","source":"./a","integrity":"sha256:abc"}`), field: "plugins[0].integrity", msg: "w1:"},
		{name: "signature base64", in: wrap(`{"name":"a","source":"./a","signatures":[{"keyid":"k","sig":"%%%"}]}`), field: "plugins[0].signatures[0].sig", msg: "base64"},
		{name: "dependency name", in: wrap(`{"name":"a","source":"./a","dependencies":["ok","bad name"]}`), field: "plugins[0].dependencies[1]", msg: "contains ' '"},
		{name: "rename target", in: `{"name":"corp","owner":{"name":"IT"},"plugins":[],"renames":{"old":5}}`, field: "renames.old", msg: "new name string or null"},
		{name: "inline hooks bad", in: wrap(`{"name":"a","source":"./a","hooks":{"PreToolUse":[{"hooks":[{"type":"command"}]}]}}`), field: "plugins[0].hooks.PreToolUse[0].hooks[0].command", msg: "required"},
		{name: "inline mcp not an object", in: wrap(`{"name":"a","source":"./a","mcpServers":5}`), field: "plugins[0].mcpServers", msg: "expected"},
		{name: "pluginRoot dotdot", in: `{"name":"corp","owner":{"name":"IT"},"metadata":{"pluginRoot":"../x"},"plugins":[]}`, field: "metadata.pluginRoot", msg: `".."`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, diags, err := ParseMarketplace([]byte(tc.in), "marketplace.json")
			if err == nil {
				t.Fatalf("no error; diags %v", diags)
			}
			if m != nil {
				t.Errorf("got a marketplace along with an error")
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Layer != LayerMaterialization || pe.Type != TypeManifestParse {
				t.Fatalf("error %v is not a materialization manifest-parse *Error", err)
			}
			if tc.syntax {
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Fatalf("error %v is not a *SyntaxError", err)
				}
				if se.Line != tc.line || se.Col != tc.col || !strings.Contains(se.Msg, tc.msg) || se.File != "marketplace.json" {
					t.Errorf("got %s:%d:%d %q; want line %d col %d containing %q", se.File, se.Line, se.Col, se.Msg, tc.line, tc.col, tc.msg)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FieldError", err)
			}
			if fe.Field != tc.field || !strings.Contains(fe.Msg, tc.msg) {
				t.Errorf("got field %q msg %q; want field %q containing %q", fe.Field, fe.Msg, tc.field, tc.msg)
			}
			if tc.line != 0 && (fe.Line != tc.line || fe.Col != tc.col) {
				t.Errorf("position %d:%d, want %d:%d", fe.Line, fe.Col, tc.line, tc.col)
			}
			if fe.Line == 0 {
				t.Errorf("field error without a line")
			}
			if !hasErrors(diags) {
				t.Errorf("the error is not among the diagnostics: %v", diags)
			}
		})
	}
}

func TestDiagnosticString(t *testing.T) {
	in := "{\"name\":\"corp\",\"owner\":{\"name\":\"IT\"},\"plugins\":[\n{\"name\":\"a\",\"source\":\"./a\"},{\"name\":\"b\",\"source\":\"./b\"},{\"name\":\"c\",\"source\":\"./c\"},\n  {\"name\": \"d\",\n    \"source\": {\"source\": \"github\", \"repo\": 42}}]}"
	_, _, err := ParseMarketplace([]byte(in), "marketplace.json")
	want := "marketplace.json:4:44: plugins[3].source.repo: expected string, got number"
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	w := Diagnostic{File: "plugin.json", Line: 3, Col: 1, Field: "foo", Severity: SeverityWarning, Message: "unknown key"}
	if got := w.String(); got != "plugin.json:3:1: warning: foo: unknown key" {
		t.Errorf("warning String() = %q", got)
	}
}

func TestParseMarketplaceWarnings(t *testing.T) {
	in := `{
  "name": "corp",
  "owner": {"name": "IT", "team": "ops"},
  "colour": "blue",
  "metadata": {"pluginRoot": "./plugins", "mood": 1},
  "plugins": [
    {"name": "fmt", "source": "fmt", "flavour": {"x": 1}, "keywords": "one",
     "source2": 1, "dependencies": {"base": "^1.0", "tools@other": "*"}}
  ]
}`
	m, diags, err := ParseMarketplace([]byte(in), "marketplace.json")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, d := range diags {
		if d.Severity != SeverityWarning {
			t.Errorf("not a warning: %s", d)
		}
		if d.Line == 0 {
			t.Errorf("warning without a position: %s", d)
		}
		got[d.Field] = true
	}
	for _, f := range []string{"owner.team", "colour", "metadata.mood", "plugins[0].flavour", "plugins[0].keywords", "plugins[0].source2", "plugins[0].dependencies"} {
		if !got[f] {
			t.Errorf("no warning for %s; got %v", f, diags)
		}
	}
	// Unknown keys are kept, not dropped.
	if string(m.Extra["colour"]) != `"blue"` || string(m.Plugins[0].Extra["flavour"]) != `{"x": 1}` {
		t.Errorf("extras = %q, %q", m.Extra, m.Plugins[0].Extra)
	}
	e := m.Plugins[0]
	// metadata.pluginRoot prefixes the bare name.
	if e.Source.Kind != SourceRelative || e.Source.Path != "./plugins/fmt" {
		t.Errorf("source = %+v", e.Source)
	}
	if !reflect.DeepEqual(e.Keywords, []string{"one"}) {
		t.Errorf("keywords = %v", e.Keywords)
	}
	wantDeps := []Dependency{{Name: "base", Version: "^1.0"}, {Name: "tools", Marketplace: "other", Version: "*"}}
	if !reflect.DeepEqual(e.Dependencies, wantDeps) {
		t.Errorf("dependencies = %+v", e.Dependencies)
	}
}

func TestParseManifestForms(t *testing.T) {
	in := `{
  "name": "deploy",
  "version": "2.0.0",
  "author": "Jane <jane@example.com>",
  "repository": {"type": "git", "url": "https://github.com/corp/deploy"},
  "dependencies": "base@corp",
  "commands": "./cmds",
  "agents": ["./agents", "./more/reviewer.md"],
  "hooks": "./config/hooks.json",
  "mcpServers": {"db": {"command": "${CLAUDE_PLUGIN_ROOT}/db", "args": ["--ro"], "env": {"A": "1"}}},
  "lspServers": ["./a.lsp.json", "./b.lsp.json"],
  "userConfig": {"token": {"type": "string"}}
}`
	m, diags, err := ParseManifest([]byte(in), "plugin.json")
	if err != nil {
		t.Fatal(err)
	}
	if m.Author.Name != "Jane <jane@example.com>" || m.Repository != "https://github.com/corp/deploy" {
		t.Errorf("author %+v repository %q", m.Author, m.Repository)
	}
	if !reflect.DeepEqual(m.Dependencies, []Dependency{{Name: "base", Marketplace: "corp"}}) {
		t.Errorf("dependencies = %+v", m.Dependencies)
	}
	if !reflect.DeepEqual(m.Commands, PathList{"./cmds"}) || len(m.Agents) != 2 {
		t.Errorf("commands %v agents %v", m.Commands, m.Agents)
	}
	if !reflect.DeepEqual(m.Hooks.Paths, []string{"./config/hooks.json"}) || m.Hooks.Inline != nil {
		t.Errorf("hooks = %+v", m.Hooks)
	}
	if m.MCPServers.Inline == nil || len(m.LSPServers.Paths) != 2 {
		t.Errorf("mcp %+v lsp %+v", m.MCPServers, m.LSPServers)
	}
	if string(m.UserConfig) != `{"token": {"type": "string"}}` {
		t.Errorf("userConfig = %s", m.UserConfig)
	}
	var fields []string
	for _, d := range diags {
		fields = append(fields, d.Field)
	}
	if strings.Join(fields, ",") != "author,repository,dependencies" {
		t.Errorf("warnings on %v, want author, repository, dependencies: %v", fields, diags)
	}
	// plugin.json needs only a name.
	if _, _, err := ParseManifest([]byte(`{"version":"1"}`), "plugin.json"); err == nil || !strings.Contains(err.Error(), "name: required") {
		t.Errorf("missing name: %v", err)
	}
}

func TestSourceJSONForms(t *testing.T) {
	tests := []struct {
		in   string
		want Source
	}{
		{`"./plugins/a"`, Source{Kind: SourceRelative, Path: "./plugins/a"}},
		{`"./"`, Source{Kind: SourceRelative, Path: "./"}},
		{`{"source":"github","repo":"o/r","ref":"v1"}`, Source{Kind: SourceGitHub, Repo: "o/r", Ref: "v1"}},
		{`{"source":"url","url":"git@github.com:o/r.git","sha":"0123456789abcdef0123456789abcdef01234567","path":"sub"}`,
			Source{Kind: SourceURL, URL: "git@github.com:o/r.git", SHA: "0123456789abcdef0123456789abcdef01234567", Path: "sub"}},
		{`{"source":"git-subdir","url":"o/r","path":"plugins/x"}`, Source{Kind: SourceGitSubdir, URL: "o/r", Path: "plugins/x"}},
		{`{"source":"git-subdir","repo":"o/r","path":"plugins/x"}`, Source{Kind: SourceGitSubdir, Repo: "o/r", Path: "plugins/x"}},
		{`{"source":"npm","package":"@corp/deploy","version":"1.2.0","registry":"https://npm.corp.example"}`,
			Source{Kind: SourceNPM, Package: "@corp/deploy", Version: "1.2.0", Registry: "https://npm.corp.example"}},
		{`{"source":"archive","url":"https://h/p.zip","sha256":"` + strings.Repeat("ab", 32) + `"}`,
			Source{Kind: SourceArchive, URL: "https://h/p.zip", SHA256: strings.Repeat("ab", 32)}},
	}
	for _, tc := range tests {
		var s Source
		if err := json.Unmarshal([]byte(tc.in), &s); err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if s != tc.want {
			t.Errorf("%s: got %+v", tc.in, s)
		}
		if err := s.Validate(); err != nil {
			t.Errorf("%s: Validate: %v", tc.in, err)
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var again Source
		if err := json.Unmarshal(out, &again); err != nil || again != s {
			t.Errorf("%s: round trip %s gave %+v, %v", tc.in, out, again, err)
		}
		if (tc.in[0] == '"') != (out[0] == '"') {
			t.Errorf("%s marshalled to another form: %s", tc.in, out)
		}
	}
	bad := []Source{
		{Kind: SourceRelative, Path: "a"},
		{Kind: SourceRelative, Path: "./a/../.."},
		{Kind: SourceGitHub},
		{Kind: "svn", URL: "https://x"},
		{Kind: SourceGitSubdir, Path: "x"},
	}
	for _, s := range bad {
		if err := s.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil", s)
		}
	}
	var s Source
	if err := json.Unmarshal([]byte(`{"source":"github","repo":7}`), &s); err == nil {
		t.Errorf("a number repo unmarshalled")
	}
}

func TestPathListAndComponentSpecJSON(t *testing.T) {
	var p PathList
	if err := json.Unmarshal([]byte(`"./a"`), &p); err != nil || !reflect.DeepEqual(p, PathList{"./a"}) {
		t.Errorf("string: %v %v", p, err)
	}
	if err := json.Unmarshal([]byte(`["./a","./b"]`), &p); err != nil || len(p) != 2 {
		t.Errorf("list: %v %v", p, err)
	}
	if err := json.Unmarshal([]byte(`["../a"]`), &p); err == nil {
		t.Errorf("a .. path unmarshalled")
	}
	var c ComponentSpec
	for _, in := range []string{`"./hooks.json"`, `["./a.json","./b.json"]`, `{"PreToolUse":[{"hooks":[{"type":"command","command":"x"}]}]}`} {
		if err := json.Unmarshal([]byte(in), &c); err != nil {
			t.Errorf("%s: %v", in, err)
		}
		out, _ := json.Marshal(c)
		if string(out) != in {
			t.Errorf("%s marshalled as %s", in, out)
		}
	}
	if err := json.Unmarshal([]byte(`42`), &c); err == nil {
		t.Errorf("a number component spec unmarshalled")
	}
}

// An Entry survives encoding/json both ways with its embedded manifest.
func TestEntryJSONRoundTrip(t *testing.T) {
	m, _, err := ParseMarketplace([]byte(goodMarketplace), "marketplace.json")
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back Marketplace
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Plugins[0], m.Plugins[0]) || back.EffectiveVersion() != "1.0.0" {
		t.Errorf("round trip:\n%+v\n%+v", back.Plugins[0], m.Plugins[0])
	}
	if !strings.Contains(string(out), `"source":"./plugins/deploy"`) {
		t.Errorf("source not written in string form: %s", out)
	}
}

func TestMaxManifestSize(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "marketplace.json")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse file: 10 MiB + 1 byte without writing it.
	if err := f.Truncate(MaxManifestSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, _, err = ReadMarketplaceFile(file)
	var ze *SizeError
	if !errors.As(err, &ze) || ze.Size != MaxManifestSize+1 || ze.Limit != MaxManifestSize {
		t.Fatalf("ReadMarketplaceFile of a big file: %v", err)
	}
	var pe *Error
	if !errors.As(err, &pe) || pe.Type != TypeManifestParse {
		t.Errorf("not a manifest-parse *Error: %v", err)
	}
	big := make([]byte, MaxManifestSize+1)
	for _, parse := range []func([]byte, string) error{
		func(b []byte, f string) error { _, _, err := ParseManifest(b, f); return err },
		func(b []byte, f string) error { _, _, err := ParseMarketplace(b, f); return err },
		func(b []byte, f string) error { _, _, err := ParseHooks(b, f); return err },
		func(b []byte, f string) error { _, _, err := ParseMCPServers(b, f); return err },
		func(b []byte, f string) error { _, _, err := ParseLSPServers(b, f); return err },
	} {
		if err := parse(big, "big.json"); !errors.As(err, &ze) {
			t.Errorf("parsing 10 MiB + 1: %v", err)
		}
	}
	// Exactly the limit is read (and here fails only as JSON).
	if err := os.Truncate(file, MaxManifestSize); err != nil {
		t.Fatal(err)
	}
	_, _, err = ReadMarketplaceFile(file)
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Errorf("file at the limit: %v", err)
	}
}

func TestReadMarketplaceMissing(t *testing.T) {
	_, _, err := ReadMarketplace(t.TempDir())
	var pe *Error
	if !errors.As(err, &pe) || pe.Type != TypeNotFound || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing marketplace.json: %v", err)
	}
	fifo := filepath.Join(t.TempDir(), "dir")
	if err := os.Mkdir(fifo, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadMarketplaceFile(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("reading a directory: %v", err)
	}
}

func TestDeepNesting(t *testing.T) {
	in := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	_, _, err := ParseManifest([]byte(in), "plugin.json")
	var se *SyntaxError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "nesting") {
		t.Errorf("deep nesting: %v", err)
	}
}

func TestHostileVolume(t *testing.T) {
	// Too many values: refused before the tree gets large.
	in := "[" + strings.Repeat("0,", maxJSONValues) + "0]"
	_, _, err := ParseManifest([]byte(in), "plugin.json")
	var se *SyntaxError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "more than") {
		t.Fatalf("many values: %v", err)
	}
	// Many unknown keys: the list is capped, with a note, and an error
	// after the cap is still reported.
	var b strings.Builder
	b.WriteString(`{"name":"p"`)
	for i := 0; i < 3*maxDiagnostics; i++ {
		b.WriteString(`,"k` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `":1`)
	}
	b.WriteString(`,"version":7}`)
	_, diags, err := ParseManifest([]byte(b.String()), "plugin.json")
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "version" {
		t.Errorf("error after the cap: %v", err)
	}
	if len(diags) != maxDiagnostics+2 || !strings.Contains(diags[len(diags)-1].Message, "more problems not shown") {
		t.Errorf("%d diagnostics, last %v", len(diags), diags[len(diags)-1])
	}
}
