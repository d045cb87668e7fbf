//go:build windows

package settings

import (
	"os"
	"path/filepath"
)

// dirLockFileName is the file lockDir locks on Windows, where a directory
// handle cannot be locked. It stays in the directory (removing it would
// race with a writer about to lock it) and is not a settings file: its name
// does not end in .json.
const dirLockFileName = ".settings.lock"

// dirLockFile is what lockDir locks for dir, and how it opens it.
func dirLockFile(dir string) (path string, flag int) {
	return filepath.Join(dir, dirLockFileName), os.O_RDWR | os.O_CREATE
}
