//go:build !windows

package atomicfile

import "os"

// SyncDir fsyncs a directory, so that a rename or a new entry in it survives
// a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
