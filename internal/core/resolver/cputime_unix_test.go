//go:build unix

package resolver

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) the test process has used
// so far. Benchmarks report it per op next to wall time: on a shared machine
// wall time also counts the time spent waiting for a CPU.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
