package settings

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/wharfhq/wharf/plugin"
)

// lockWait bounds how long a settings write waits for another process
// writing a file of the same directory. The lock is held for one read and
// one write of a small file, so a wait this long means a stuck process.
const lockWait = 2 * time.Minute

// lockDir takes the exclusive lock of dir, the directory of the settings
// file about to be rewritten, and waits for it up to lockWait. The
// directory, not the file, is locked: the file is replaced by a rename (a
// lock on the old file would not exclude a writer that opened the new one)
// and may not exist yet. Every wharf writer of the file takes this lock,
// then reads the file, so no write overwrites one it did not read. The lock
// is flock(2) of the directory itself on Unix; Windows cannot lock a
// directory, so there it is LockFileEx of a file in it (see dirLockFile).
func lockDir(dir, file string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, file, "check the directory's permissions", "create %s: %v", dir, err)
	}
	path, flag := dirLockFile(dir)
	l := flock.New(path, flock.SetFlag(flag), flock.SetPermissions(0o644))
	deadline := time.Now().Add(lockWait)
	for {
		ok, err := l.TryLock()
		if ok {
			break
		}
		if err != nil && !errors.Is(err, syscall.EINTR) {
			var pe *fs.PathError
			if errors.As(err, &pe) && pe.Op == "open" {
				return nil, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, file, "check the directory's permissions", "open %s to lock it: %v", dir, err)
			}
			return nil, plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, file, "check the directory's file system supports locks", "lock %s: %v", dir, err)
		}
		if time.Now().After(deadline) {
			return nil, plugin.Errorf(plugin.LayerMaterialization, plugin.TypeConflict, file, "another wharf command is writing settings there; wait for it to finish, or stop it",
				"settings directory %s stayed locked for %s", dir, lockWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return func() { l.Unlock() }, nil
}
