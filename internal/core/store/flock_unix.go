//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
)

// tryLockFile takes the lock bbolt takes of its file (flock(2)), shared or
// exclusive, without waiting. It reports false when another holder's lock
// is in the way.
func tryLockFile(f *os.File, exclusive bool) (bool, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EINTR) {
		return false, nil
	}
	return false, err
}

// unlockFile releases a lock tryLockFile took.
func unlockFile(f *os.File) {
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
