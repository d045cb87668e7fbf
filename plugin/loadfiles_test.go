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

// listTree lists every directory under root as LoadTree takes it.
func listTree(t *testing.T, root string) map[string][]fs.DirEntry {
	t.Helper()
	dirs := map[string][]fs.DirEntry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			dirs[filepath.Dir(p)] = append(dirs[filepath.Dir(p)], d)
		}
		if d.IsDir() && dirs[filepath.Clean(p)] == nil {
			dirs[filepath.Clean(p)] = []fs.DirEntry{}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// LoadTree with the tree's own listing and contents loads what Load
// loads, for every plugin of the corp fixture marketplace; it hands back
// the front matter it parsed; and it does take the layout from the
// listing it is given: a listing without commands/ has no commands.
func TestLoadTreeEqualsLoad(t *testing.T) {
	root := filepath.Join("testdata", "corp")
	m, _, err := ReadMarketplace(root)
	if err != nil {
		t.Fatal(err)
	}
	n, parsed := 0, 0
	for i := range m.Plugins {
		e := &m.Plugins[i]
		dir, err := e.LocalDir(root)
		if err != nil {
			continue
		}
		n++
		p, d, err := Load(dir, e)
		want := loadJSON(t, p, d, err)
		tree := &Tree{Files: readTree(t, dir), Dirs: listTree(t, dir), FrontMatter: map[string]FrontMatter{}}
		p, d, err = LoadTree(dir, e, tree)
		if got := loadJSON(t, p, d, err); got != want {
			t.Fatalf("%s: LoadTree\n%s\nLoad\n%s", e.Name, got, want)
		}
		parsed += len(tree.FrontMatter)
	}
	if n < 2 || parsed == 0 {
		t.Fatalf("compared %d plugins of %s, %d front matters handed back", n, root, parsed)
	}
	dir := t.TempDir()
	for _, rel := range []string{".claude-plugin/plugin.json", "commands/a.md"} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"name": "a"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dirs := listTree(t, dir)
	dirs[filepath.Clean(dir)] = []fs.DirEntry{dirs[filepath.Clean(dir)][0]} // .claude-plugin only
	p, _, err := LoadTree(dir, nil, &Tree{Dirs: dirs})
	if err != nil || len(p.Components) != 0 {
		t.Fatalf("LoadTree did not take the listing: %+v, %v", p, err)
	}
}
