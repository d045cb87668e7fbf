//go:build !windows

package atomicfile

// SyncDir fsyncs a directory, so that a rename or a new entry in it survives
// a crash.
func SyncDir(dir string) error { return newOptions(nil).syncDir(dir) }

func (o options) syncDir(dir string) error { return o.syncPath(dir) }
