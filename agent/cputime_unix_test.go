//go:build unix

package agent

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) the test process has used
// so far. On a shared machine wall time also counts waiting for a CPU, so
// benchmarks report both.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
