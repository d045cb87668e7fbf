package plugin

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// readTree reads every regular file under root, by the path Load joins.
func readTree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		files[p] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func loadJSON(t *testing.T, p *Plugin, diags []Diagnostic, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(struct {
		P *Plugin
		D []Diagnostic
	}{p, diags})
	return string(b)
}

// LoadFiles with the tree's own contents loads what Load loads, for every
// plugin of the corp fixture marketplace, and it does read the copy it is
// given: a changed copy of plugin.json changes the result.
func TestLoadFilesEqualsLoad(t *testing.T) {
	root := filepath.Join("testdata", "corp")
	m, _, err := ReadMarketplace(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range m.Plugins {
		e := &m.Plugins[i]
		dir, err := e.LocalDir(root)
		if err != nil {
			continue
		}
		n++
		p, d, err := Load(dir, e)
		want := loadJSON(t, p, d, err)
		p, d, err = LoadFiles(dir, e, readTree(t, dir))
		if got := loadJSON(t, p, d, err); got != want {
			t.Fatalf("%s: LoadFiles\n%s\nLoad\n%s", e.Name, got, want)
		}
	}
	if n < 2 {
		t.Fatalf("compared %d plugins of %s", n, root)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".claude-plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	mf := filepath.Join(dir, ".claude-plugin", "plugin.json")
	if err := os.WriteFile(mf, []byte(`{"name": "a", "version": "1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, err := LoadFiles(dir, nil, map[string][]byte{mf: []byte(`{"name": "a", "version": "2.0.0"}`)})
	if err != nil || p.Manifest.Version != "2.0.0" {
		t.Fatalf("LoadFiles did not read the copy: %+v, %v", p, err)
	}
}
