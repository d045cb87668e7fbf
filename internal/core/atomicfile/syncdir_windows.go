//go:build windows

package atomicfile

import (
	"fmt"
	"os"
)

// SyncDir makes a rename or a new entry in dir survive a crash. Windows has
// no fsync of a directory (FlushFileBuffers refuses a directory handle with
// "Access is denied"); NTFS journals its metadata, so a completed rename
// (MoveFileEx) is already durable. SyncDir only checks that dir is still a
// directory, so a caller's error handling works the same on every system.
func SyncDir(dir string) error { return newOptions(nil).syncDir(dir) }

// syncDir ignores o.sync: there is no directory sync to make on Windows.
func (o options) syncDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("sync %s: not a directory", dir)
	}
	return nil
}
