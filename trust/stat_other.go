//go:build !linux

package trust

import "os"

type statBuf struct{}

func (statBuf) same(p string, e *FPEntry) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Size() == e.Size && fi.ModTime().UnixNano() == e.Mtime && fi.Mode() == e.Mode
}
