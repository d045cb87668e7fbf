package settings

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/wharfhq/wharf/plugin"
)

// lockWait bounds how long a settings write waits for another process
// writing a file of the same directory. The lock is held for one read and
// one write of a small file, so a wait this long means a stuck process.
const lockWait = 2 * time.Minute

// lockDir takes the exclusive lock (flock) of dir, the directory of the
// settings file about to be rewritten, and waits for it up to lockWait.
// The directory, not the file, is locked: the file is replaced by a rename
// (a lock on the old file would not exclude a writer that opened the new
// one) and may not exist yet. Every wharf writer of the file takes this
// lock, then reads the file, so no write overwrites one it did not read.
func lockDir(dir, file string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, file, "check the directory's permissions", "create %s: %v", dir, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, file, "check the directory's permissions", "open %s to lock it: %v", dir, err)
	}
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			d.Close()
			return nil, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, file, "check the directory's file system supports locks", "lock %s: %v", dir, err)
		}
		if time.Now().After(deadline) {
			d.Close()
			return nil, plugin.Errorf(plugin.LayerMaterialization, plugin.TypeConflict, file, "another wharf command is writing settings there; wait for it to finish, or stop it",
				"settings directory %s stayed locked for %s", dir, lockWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return func() {
		syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
		d.Close()
	}, nil
}
