//go:build windows

package store

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// bboltLockRange is the one byte bbolt locks on Windows, at offset 2^64-1
// (go.etcd.io/bbolt, bolt_windows.go): a lock on real content would make
// other readers' reads of it fail. A lock elsewhere would not exclude bbolt.
var bboltLockRange = windows.Overlapped{Offset: 1<<32 - 1, OffsetHigh: 1<<32 - 1}

// tryLockFile takes the lock bbolt takes of its file (LockFileEx on the
// byte above), shared or exclusive, without waiting. It reports false when
// another holder's lock is in the way.
func tryLockFile(f *os.File, exclusive bool) (bool, error) {
	flags := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if exclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	ol := bboltLockRange
	err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, &ol)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return false, nil
	}
	return false, err
}

// unlockFile releases a lock tryLockFile took.
func unlockFile(f *os.File) {
	ol := bboltLockRange
	windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
