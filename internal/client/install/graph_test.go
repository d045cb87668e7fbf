package install

import (
	"os"
	"path/filepath"
	"testing"

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
