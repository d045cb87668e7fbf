//go:build unix

package capability

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) the test process has used so
// far: on a shared machine it moves less with the load than the wall
// clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
