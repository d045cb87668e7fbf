//go:build !linux

package marketplace

import (
	"os"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// fillStat records nothing beyond the time and size here: go-git compares
// only those (and the mode) with the work tree.
func fillStat(*index.Entry, os.FileInfo) {}
