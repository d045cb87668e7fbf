package policy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestExportAgentsGolden exports the layers of every file in
// testdata/agents for Copilot CLI, Codex, Gemini CLI and OpenCode and
// compares the results with its "copilot.json" (settings and warnings),
// "codex.toml" and "codex-warnings", "gemini.json" and "opencode.json"
// (settings or config, and warnings) sections, byte for byte (go test -run
// TestExportAgentsGolden -update writes them).
func TestExportAgentsGolden(t *testing.T) {
	paths, err := filepath.Glob("testdata/agents/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{}
			for _, f := range ar.Files {
				files[f.Name] = f.Data
			}
			var layers []Layer
			for _, name := range strings.Fields(string(files["layers"])) {
				l := Layer{Name: name, Origin: name + ".json", Settings: files[name+".json"]}
				for fn, b := range files {
					if strings.HasSuffix(fn, ".rego") && strings.SplitN(fn, ".", 2)[0] == name {
						if l.Modules == nil {
							l.Modules = map[string]string{}
						}
						l.Modules[fn] = string(b)
					}
				}
				layers = append(layers, l)
			}
			e, err := NewEngine(layers)
			if err != nil {
				t.Fatal(err)
			}
			cp, err := json.MarshalIndent(e.ExportCopilot(), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			cx := e.ExportCodex()
			doc, err := cx.TOML()
			if err != nil {
				t.Fatal(err)
			}
			// What is written is TOML Codex can read back.
			var back map[string]any
			if err := toml.Unmarshal(doc, &back); err != nil {
				t.Fatalf("the codex export is not TOML: %v\n%s", err, doc)
			}
			gm, err := json.MarshalIndent(e.ExportGemini(), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			oc, err := json.MarshalIndent(e.ExportOpenCode(), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]byte{
				"copilot.json":   append(cp, '\n'),
				"codex.toml":     doc,
				"codex-warnings": []byte(strings.Join(cx.Warnings, "\n") + "\n"),
				"gemini.json":    append(gm, '\n'),
				"opencode.json":  append(oc, '\n'),
			}
			for _, name := range []string{"copilot.json", "codex.toml", "codex-warnings", "gemini.json", "opencode.json"} {
				idx := -1
				for i, f := range ar.Files {
					if f.Name == name {
						idx = i
					}
				}
				if *update {
					if idx < 0 {
						ar.Files = append(ar.Files, txtar.File{Name: name, Data: got[name]})
					} else {
						ar.Files[idx].Data = got[name]
					}
					continue
				}
				if idx < 0 {
					t.Fatalf("%s has no %s section; run go test -run TestExportAgentsGolden -update", path, name)
				}
				if want := ar.Files[idx].Data; !bytes.Equal(got[name], want) {
					t.Errorf("%s differs from %s\n--- got\n%s--- want\n%s", name, path, got[name], want)
				}
			}
			if *update {
				if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
