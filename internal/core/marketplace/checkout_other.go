//go:build !linux

package marketplace

import (
	"os"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// fillStat records nothing beyond the time and size here: go-git compares
// only those (and the mode) with the work tree.
func fillStat(*index.Entry, os.FileInfo) {}

// writeNewFile writes content to the new file p (as createFile makes it)
// and records its stat in e.
func writeNewFile(p string, perm os.FileMode, content []byte, e *index.Entry) error {
	return writeNewFileOS(p, perm, content, e)
}
