package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/source"
)

// validate refuses a plugin whose tree is over the install size limit, with
// the same fetcher and limits install uses (a small limit here, so that the
// test reads little).
func TestValidateRefusesOversizedTree(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "big")
	if err := os.MkdirAll(filepath.Join(dir, "commands"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "commands", "x.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A sparse file: large, but nothing on disk until it is copied.
	f, err := os.Create(filepath.Join(dir, "blob.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fetch := &source.Fetcher{Limits: source.Limits{MaxBytes: 1 << 20}}
	diags := copyChecks(context.Background(), fetch, []copyTarget{{name: "big", dir: dir, file: dir}})
	if len(diags) != 1 || !strings.Contains(diags[0].Message, "wharf install refuses it") || !strings.Contains(diags[0].Message, "too large") {
		t.Fatalf("diags = %v; want the size limit refused", diags)
	}
	fetch.Limits.MaxBytes = 8 << 20
	if diags := copyChecks(context.Background(), fetch, []copyTarget{{name: "big", dir: dir, file: dir}}); len(diags) != 0 {
		t.Fatalf("under the limit: %v", diags)
	}
}
