//go:build unix

package settings

import "os"

// dirLockFile is what lockDir locks for dir, and how it opens it: on Unix
// the directory itself, read-only, so locking leaves no file behind.
func dirLockFile(dir string) (path string, flag int) {
	return dir, os.O_RDONLY
}
