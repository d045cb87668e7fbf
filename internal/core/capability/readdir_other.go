//go:build !linux

package capability

import (
	"io/fs"
	"os"
)

// A dirLister lists directories with os.ReadDir where the raw listing of
// readdir_linux.go is not written.
type dirLister struct{}

func (l *dirLister) readDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }
