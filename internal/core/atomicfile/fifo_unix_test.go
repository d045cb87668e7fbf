//go:build unix

package atomicfile

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestSyncTreeRefusesNamedPipe(t *testing.T) {
	root := t.TempDir()
	pipe := filepath.Join(root, "pipe")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Skip("no mkfifo here:", err)
	}
	for name, f := range map[string]func(string, ...Option) error{"SyncTree": SyncTree, "SealTree": SealTree} {
		err := f(root)
		if err == nil || !strings.Contains(err.Error(), pipe) {
			t.Errorf("%s on a tree with a named pipe: %v, want an error naming %s", name, err, pipe)
		}
	}
}
