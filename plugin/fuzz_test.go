package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addRealSeeds adds every real file with the given base name as a seed.
func addRealSeeds(f *testing.F, base string) {
	dir := filepath.Join("..", "..", "shared", "realworld")
	n := 0
	_ = filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() || de.Name() != base || n >= 40 {
			return nil
		}
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
			n++
		}
		return nil
	})
}

// checkSyntaxAgreement fails when the parser and encoding/json disagree on
// whether data is JSON. The parser allows a leading BOM and refuses nesting
// deeper than maxJSONDepth; both are excluded.
func checkSyntaxAgreement(t *testing.T, data []byte, err error) {
	var se *SyntaxError
	isSyntax := errors.As(err, &se)
	if isSyntax && strings.Contains(se.Msg, "nesting") || bytes.HasPrefix(data, []byte("\xEF\xBB\xBF")) || int64(len(data)) > MaxManifestSize {
		return
	}
	if json.Valid(data) == isSyntax {
		t.Fatalf("json.Valid = %v but syntax error = %v", json.Valid(data), err)
	}
	if isSyntax && (se.Line < 1 || se.Col < 1) {
		t.Fatalf("syntax error without a position: %+v", se)
	}
}

func checkDiags(t *testing.T, diags []Diagnostic, err error) {
	for _, d := range diags {
		if d.Line < 0 || d.Col < 0 || d.Severity != SeverityError && d.Severity != SeverityWarning || d.Message == "" {
			t.Fatalf("bad diagnostic %+v", d)
		}
	}
	if (err == nil) == hasErrors(diags) && !errors.As(err, new(*SyntaxError)) && !errors.As(err, new(*SizeError)) {
		t.Fatalf("error %v does not match diagnostics %v", err, diags)
	}
}

func FuzzParseMarketplace(f *testing.F) {
	f.Add([]byte(goodMarketplace))
	f.Add([]byte(wrap(`{"name":"a","source":{"source":"git-subdir","url":"o/r","path":"p","ref":"v1"},"strict":false,"skills":["./s"]}`)))
	f.Add([]byte(`{"name":"m","owner":{"name":"o"},"metadata":{"pluginRoot":"./p"},"plugins":[{"name":"a","source":"a","dependencies":{"b":"1"}}],"renames":{"x":null,"y":"z"}}`))
	f.Add([]byte(wrap(`{"name":"a","source":"./a","integrity":"w1:` + strings.Repeat("A", 43) + `=","signatures":[{"keyid":"k","sig":"AAAA"}]}`)))
	f.Add([]byte("{\"a\": [1, 2.5e3, -0, true, null, \"\\u00e9\\ud83d\\ude00\"]}"))
	f.Add([]byte(`{"name": }`))
	addRealSeeds(f, "marketplace.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		m, diags, err := ParseMarketplace(data, "marketplace.json")
		checkSyntaxAgreement(t, data, err)
		checkDiags(t, diags, err)
		if err != nil {
			if m != nil {
				t.Fatal("marketplace returned with an error")
			}
			return
		}
		// What was accepted is written back in a form that parses again
		// to the same plugins.
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		m2, _, err := ParseMarketplace(out, "again.json")
		if err != nil {
			t.Fatalf("re-parse of %s: %v", out, err)
		}
		if len(m2.Plugins) != len(m.Plugins) || m2.Name != m.Name {
			t.Fatalf("round trip changed the marketplace: %s", out)
		}
		for i := range m.Plugins {
			if m.Plugins[i].Source != m2.Plugins[i].Source {
				t.Fatalf("source %d: %+v became %+v", i, m.Plugins[i].Source, m2.Plugins[i].Source)
			}
			if err := m.Plugins[i].Source.Validate(); err != nil {
				t.Fatalf("accepted source fails Validate: %v", err)
			}
		}
	})
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"name":"p","version":"1.0.0","author":{"name":"a"},"commands":"./c","hooks":{"Stop":[{"hooks":[{"type":"command","command":"x"}]}]},"mcpServers":"./.mcp.json","dependencies":["b","c@m",{"name":"d","version":"^1"}]}`))
	f.Add([]byte(`{"name":"p","repository":{"type":"git","url":"u"},"author":"x","keywords":"k","dependencies":"b"}`))
	f.Add([]byte(`{"name":"p","lspServers":{"go":{"command":"gopls"}},"userConfig":{"k":{"type":"string"}}}`))
	f.Add([]byte("\xEF\xBB\xBF{\"name\":\"p\"}"))
	f.Add([]byte(`{"name":"p","commands":{"about":{"source":"./docs/a.md","description":"d"},"hi":{"content":"x"}},"mcpServers":["https://x.example/t.mcpb","./.mcp.json"]}`))
	f.Add([]byte(`{"name":"p","mcpServers":"https://x.example/t.mcpb?v=1"}`))
	addRealSeeds(f, "plugin.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		m, diags, err := ParseManifest(data, "plugin.json")
		checkSyntaxAgreement(t, data, err)
		checkDiags(t, diags, err)
		if err != nil {
			return
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		m2, _, err := ParseManifest(out, "again.json")
		if err != nil {
			t.Fatalf("re-parse of %s: %v", out, err)
		}
		if m2.Name != m.Name || m2.Version != m.Version || len(m2.Dependencies) != len(m.Dependencies) || m2.DeclaresComponents() != m.DeclaresComponents() {
			t.Fatalf("round trip changed the manifest: %s", out)
		}
	})
}

func FuzzParseHooks(f *testing.F) {
	f.Add([]byte(`{"hooks":{"PreToolUse":[{"matcher":"Edit|Write","hooks":[{"type":"command","command":"x","timeout":60}]}]}}`))
	f.Add([]byte(`{"SessionStart":[{"hooks":[{"type":"prompt","prompt":"p","if":"Bash(x)"}]}]}`))
	f.Add([]byte(`{"hooks":{"Stop":[{"matcher":"(","hooks":[]}]}}`))
	f.Add([]byte(`{"hooks":{"Stop":[{"matcher":{"a":1},"hooks":[{"type":"command","command":"x","timeout":1e300}]}],"PreToolUse":[{"matcher":"**","hooks":[{"type":"command","command":"x","timeout":0.5}]}]}}`))
	addRealSeeds(f, "hooks.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		h, diags, err := ParseHooks(data, "hooks.json")
		checkSyntaxAgreement(t, data, err)
		checkDiags(t, diags, err)
		if err != nil {
			return
		}
		out, err := json.Marshal(h)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		h2, _, err := ParseHooks(out, "again.json")
		if err != nil {
			t.Fatalf("re-parse of %s: %v", out, err)
		}
		if len(h2.Hooks) != len(h.Hooks) {
			t.Fatalf("round trip changed the events: %s", out)
		}
	})
}

func FuzzParseMCPServers(f *testing.F) {
	f.Add([]byte(`{"mcpServers":{"db":{"command":"db","args":["a"],"env":{"K":"V"}},"r":{"type":"http","url":"https://x/mcp","headers":{"A":"b"}}}}`))
	f.Add([]byte(`{"db":{"command":"db"},"s":{"type":"sse","url":"https://x/sse"}}`))
	f.Add([]byte(`{"x":{"type":"ws","url":"ws://localhost:1"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, diags, err := ParseMCPServers(data, ".mcp.json")
		checkSyntaxAgreement(t, data, err)
		checkDiags(t, diags, err)
		if err == nil {
			out, err := json.Marshal(c)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			c2, _, err := ParseMCPServers(out, "again.json")
			if err != nil || len(c2.Servers) != len(c.Servers) {
				t.Fatalf("re-parse of %s: %v", out, err)
			}
		}
		// The same bytes as .lsp.json must not panic either.
		_, diags, err = ParseLSPServers(data, ".lsp.json")
		checkDiags(t, diags, err)
	})
}

func FuzzFrontMatter(f *testing.F) {
	f.Add([]byte("---\nname: x\ndescription: y\n---\nbody"))
	f.Add([]byte("---\r\ntools: [a, b]\r\n...\r\n"))
	f.Add([]byte("---\ndescription: Use when: x\n  more\n---\n"))
	f.Add([]byte("---\na: &a [*a]\n---\n"))
	f.Add([]byte("no front matter"))
	f.Fuzz(func(t *testing.T, data []byte) {
		meta, body, err := ParseFrontMatter(data)
		if err != nil {
			var fe *FrontMatterError
			if !errors.As(err, &fe) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if !bytes.HasSuffix(data, body) {
			t.Fatalf("body %q is not the end of the input", body)
		}
		if meta == nil && !bytes.Equal(body, data) {
			t.Fatalf("no front matter but the body changed")
		}
	})
}

func FuzzParseID(f *testing.F) {
	for _, s := range []string{"deploy@corp", "a@b@c", "@x", "x@", "../x@y", "name.with_dots-1@m", strings.Repeat("a", 129) + "@m", "é@m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Type != TypeInvalidID {
				t.Fatalf("error %v is not an invalid-id *Error", err)
			}
			return
		}
		if id.String() != s {
			t.Fatalf("ParseID(%q).String() = %q", s, id.String())
		}
		if strings.ContainsAny(s, "/\\\x00") || strings.Contains(id.Name, "..") && id.Name[0] == '.' {
			t.Fatalf("unsafe id accepted: %q", s)
		}
		b, _ := id.MarshalText()
		var back ID
		if err := back.UnmarshalText(b); err != nil || back != id {
			t.Fatalf("text round trip: %v %v", back, err)
		}
	})
}

// FuzzLoadNamesAndRootVersion: whatever a root plugin.json and an agent's
// front matter hold, Load neither panics nor takes a version that cannot
// name a cache directory, nor names an agent with a separator.
func FuzzLoadNamesAndRootVersion(f *testing.F) {
	f.Add([]byte(`{"name":"p","version":"2.0.0"}`), []byte("---\nname: reviewer\n---\nx"))
	f.Add([]byte(`{"version":"../../x"}`), []byte("---\nname: a/b\n---\n"))
	f.Add([]byte(`{"version":7}`), []byte("---\nname: [1]\n---\n"))
	f.Add([]byte(`[]`), []byte("---\nname: x: y: z\n---\n"))
	f.Fuzz(func(t *testing.T, manifest, agent []byte) {
		root := filepath.Join(t.TempDir(), "p")
		if err := os.MkdirAll(filepath.Join(root, "agents"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "plugin.json"), manifest, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "agents", "a.md"), agent, 0o644); err != nil {
			t.Fatal(err)
		}
		p, _, err := Load(root, nil)
		if err != nil {
			return
		}
		if v := p.Manifest.Version; v != "" {
			if _, err := SanitizeVersion(v); err != nil {
				t.Fatalf("version %q taken from a root plugin.json: %v", v, err)
			}
		}
		for _, c := range p.ComponentsOf(KindAgent) {
			if c.Name != "a" && validComponentName(c.Name) != nil {
				t.Fatalf("agent named %q", c.Name)
			}
		}
	})
}
