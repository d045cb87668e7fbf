package install

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/plugin"
)

// A tree loaded before it was renamed into the cache answers for its new
// place without being read again — unless Load named the plugin after the
// old directory, which the new one would not.
func TestGraphMovedTree(t *testing.T) {
	g := newGraph(nil, nil)
	stage := filepath.Join(t.TempDir(), ".tmp-stage-1-2")
	if err := os.MkdirAll(filepath.Join(stage, ".claude-plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(manifest string) {
		if err := os.WriteFile(filepath.Join(stage, ".claude-plugin", "plugin.json"), []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"name":"deploy","dependencies":["creds"]}`)
	p, _, err := plugin.Load(stage, nil)
	if err != nil {
		t.Fatal(err)
	}
	final := filepath.Join(t.TempDir(), "1.0.0") // never written: the answer must come from memory
	g.moved(p, final)
	got, err := g.load(final, nil)
	if err != nil || got.Root != final || got.Manifest.Name != "deploy" || len(got.Manifest.Dependencies) != 1 {
		t.Fatalf("load of the moved tree = %+v, %v; want deploy at %s with its dependency", got, err, final)
	}
	if p.Root != stage {
		t.Error("moved changed the caller's Plugin")
	}

	// No manifest and no entry: Load names the plugin after its directory.
	bare := filepath.Join(t.TempDir(), "stage")
	if err := os.MkdirAll(filepath.Join(bare, "commands"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, _, err = plugin.Load(bare, nil)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "2.0.0")
	g.moved(p, other)
	if _, err := g.load(other, nil); err == nil {
		t.Error("a plugin named after its staging dir was recorded for its new place; it must be read there")
	}
}

// The marketplace roots a graph resolves once answer as resolving them per
// lookup does: localDir gives entry.LocalDir's directory or error, and
// marketplaceAt what source.ResolveMarketplace gives, for roots that are
// real, reached through a symlink, or missing, and for entries inside,
// outside, missing or not directories.
func TestGraphRootsEqualPerLookup(t *testing.T) {
	base := t.TempDir()
	mkt := filepath.Join(base, "mkt")
	for _, d := range []string{"plugins/a/.claude-plugin", "plugins/b", "other"} {
		if err := os.MkdirAll(filepath.Join(mkt, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(mkt, "plugins/file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(mkt, "plugins/out"))
	os.Symlink("b", filepath.Join(mkt, "plugins/in"))
	os.Symlink("plugins", filepath.Join(mkt, "linked"))
	link := filepath.Join(base, "link")
	os.Symlink(mkt, link)
	roots := []string{mkt, link, filepath.Join(base, "missing"), mkt + "/"}
	paths := []string{"./plugins/a", "./plugins/b", "./", "./plugins/out", "./plugins/in", "./linked/a", "./plugins/none", "./plugins/file", "../x", "/etc"}
	g := newGraph(nil, nil)
	for round := 0; round < 2; round++ { // the second round answers from the memory
		for _, root := range roots {
			for _, p := range paths {
				e := &plugin.Entry{Manifest: plugin.Manifest{Name: "x"}, Source: plugin.Source{Kind: plugin.SourceRelative, Path: p}}
				want, wantErr := e.LocalDir(root)
				got, gotErr := g.localDir(e, root)
				if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Errorf("localDir(%s, %s) = %q, %v; LocalDir gives %q, %v", root, p, got, gotErr, want, wantErr)
				}
			}
			wantM, wantErr := source.ResolveMarketplace(root)
			gotM, gotErr := g.marketplaceAt(root)
			if !reflect.DeepEqual(gotM, wantM) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Errorf("marketplaceAt(%s) = %+v, %v; ResolveMarketplace gives %+v, %v", root, gotM, gotErr, wantM, wantErr)
			}
		}
	}
}
