package wharf

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteDemoMarketplace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	if err := WriteDemoMarketplace(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".claude-plugin", "marketplace.json")); err != nil {
		t.Fatalf("demo marketplace has no manifest: %v", err)
	}
	want, _ := filepath.Glob(filepath.Join("testdata", "demo-marketplace", "plugins", "*"))
	got, _ := filepath.Glob(filepath.Join(dir, "plugins", "*"))
	if len(got) == 0 || len(got) != len(want) {
		t.Fatalf("demo has %d plugins, the source tree %d", len(got), len(want))
	}
	if err := WriteDemoMarketplace(dir); err == nil {
		t.Fatal("writing over an existing demo dir succeeded")
	}
}
