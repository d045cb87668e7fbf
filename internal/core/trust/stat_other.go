//go:build !linux

package trust

import (
	"io/fs"
	"os"
	"path/filepath"
)

type statBuf struct{ root string }

func (b *statBuf) open(root string) error {
	if _, err := os.Stat(root); err != nil {
		return err
	}
	b.root = root
	return nil
}

func (b *statBuf) close() {}

func (b *statBuf) same(rel string, e *FPEntry) bool {
	fi, err := os.Lstat(filepath.Join(b.root, filepath.FromSlash(rel)))
	return err == nil && fi.Size() == e.Size && fi.ModTime().UnixNano() == e.Mtime && fi.Mode() == e.Mode
}

// ctimeOf is 0: outside Linux the fingerprint does not record ctimes.
func ctimeOf(fs.FileInfo) int64 { return 0 }
