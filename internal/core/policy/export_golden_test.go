package policy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestExportGolden exports the layers of every golden file and compares the
// result with its "export.json" section (go test -run TestExportGolden
// -update writes it): the settings document and the warnings, byte for byte.
func TestExportGolden(t *testing.T) {
	paths, err := filepath.Glob("testdata/golden/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, layers, _ := loadGolden(t, path)
			e, err := NewEngine(layers)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(e.ExportClaude(), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			idx := -1
			for i, f := range ar.Files {
				if f.Name == "export.json" {
					idx = i
				}
			}
			if *update {
				if idx < 0 {
					ar.Files = append(ar.Files, txtar.File{Name: "export.json", Data: got})
				} else {
					ar.Files[idx].Data = got
				}
				if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if idx < 0 {
				t.Fatalf("%s has no export.json section; run go test -run TestExportGolden -update", path)
			}
			if want := ar.Files[idx].Data; !bytes.Equal(got, want) {
				t.Errorf("export differs from %s\n--- got\n%s--- want\n%s", path, got, want)
			}
		})
	}
}
