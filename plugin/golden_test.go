package plugin

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// TestGoldenNormalizedMarketplace pins what wharf makes of a marketplace
// that uses every form: the normalized marketplace (pluginRoot applied,
// sources in their written form), each relative plugin's effective manifest
// and components, and every diagnostic.
func TestGoldenNormalizedMarketplace(t *testing.T) {
	root := filepath.Join("testdata", "corp")
	m, diags, err := ReadMarketplace(root)
	if err != nil {
		t.Fatal(err)
	}
	type loaded struct {
		Manifest    Manifest     `json:"manifest"`
		Components  []Component  `json:"components"`
		Diagnostics []Diagnostic `json:"diagnostics,omitempty"`
	}
	got := struct {
		Marketplace *Marketplace          `json:"marketplace"`
		Diagnostics []Diagnostic          `json:"diagnostics"`
		Plugins     map[string]loaded     `json:"plugins"`
		Extra       map[string]any        `json:"extra"`
		Validate    []Diagnostic          `json:"validate"`
		Sources     map[string]string     `json:"revisions"`
		Strict      map[string]bool       `json:"strict"`
		Kinds       map[string]SourceKind `json:"kinds"`
	}{Marketplace: m, Diagnostics: diags, Plugins: map[string]loaded{}, Extra: map[string]any{},
		Sources: map[string]string{}, Strict: map[string]bool{}, Kinds: map[string]SourceKind{}}
	for i := range m.Plugins {
		e := &m.Plugins[i]
		got.Strict[e.Name] = e.IsStrict()
		got.Kinds[e.Name] = e.Source.Kind
		if r := e.Source.Revision(); r != "" {
			got.Sources[e.Name] = r
		}
		if len(e.Extra) > 0 {
			got.Extra[e.Name] = e.Extra
		}
		if e.Source.Kind != SourceRelative {
			continue
		}
		dir, err := e.LocalDir(root)
		if err != nil {
			t.Fatal(err)
		}
		p, pd, err := Load(dir, e)
		if err != nil {
			t.Fatalf("Load(%s): %v", e.Name, err)
		}
		got.Plugins[e.Name] = loaded{p.Manifest, p.Components, pd}
	}
	got.Validate, err = Validate(root, false)
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	out, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, '\n')
	golden := filepath.Join("testdata", "corp.golden.json")
	if *update {
		if err := os.WriteFile(golden, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run Golden -update to create it)", err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("normalized marketplace differs from %s (run with -update after checking the change):\n%s", golden, out)
	}
}
