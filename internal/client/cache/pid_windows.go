//go:build windows

package cache

import (
	"errors"
	"math"

	"golang.org/x/sys/windows"
)

// pidAlive reports whether a process with this PID exists and has not
// exited. Access denied means it exists but belongs to someone else; an
// invalid parameter means there is no such process. Any other failure
// counts as alive: the callers remove what a dead process left behind, and
// removing a live one's files is the worse mistake.
func pidAlive(pid int) bool {
	if pid <= 0 || int64(pid) > math.MaxUint32 {
		return false
	}
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return !errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	defer windows.CloseHandle(h)
	// A process object outlives its process while handles to it are open:
	// it is signaled once the process has exited. (Its exit code alone is
	// ambiguous: STILL_ACTIVE, 259, is also a code a process may exit with.)
	ev, err := windows.WaitForSingleObject(h, 0)
	if err != nil {
		return true
	}
	return ev == uint32(windows.WAIT_TIMEOUT)
}
