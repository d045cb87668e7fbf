//go:build unix && !linux

package processtest

import (
	"errors"
	"syscall"
)

// Alive reports whether pid exists. Without /proc a zombie (exited, not yet
// reaped) counts as alive, so a caller polls until its parent reaps it.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
