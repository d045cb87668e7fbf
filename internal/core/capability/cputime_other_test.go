//go:build !unix

package capability

import "time"

// cpuTime is 0: the benchmarks then report wall time only.
func cpuTime() time.Duration { return 0 }
