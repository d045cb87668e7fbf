package cache

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
)

// sealTree leaves a tree read-only (executables keep their execute bit) and
// fails on what a version may not hold.
func TestSealTree(t *testing.T) {
	root := t.TempDir()
	if err := files(map[string]string{"a.md": "a", "sub/b.md": "b", "bin/run.sh*": "#!/bin/sh\n"})(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.SealTree(root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeTree(root) })
	for p, want := range map[string]fs.FileMode{"a.md": 0o444, "sub/b.md": 0o444, "bin/run.sh": 0o555, "sub": 0o555 | fs.ModeDir, ".": 0o555 | fs.ModeDir} {
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v, %v; want %v", p, fi.Mode(), err, want)
		}
	}

	fifo := t.TempDir()
	if err := mkfifo(filepath.Join(fifo, "pipe")); err != nil {
		t.Skip("no mkfifo here:", err)
	}
	if err := atomicfile.SealTree(fifo); err == nil {
		t.Error("sealTree accepted a named pipe")
	}
}
