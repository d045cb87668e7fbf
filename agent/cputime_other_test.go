//go:build !unix

package agent

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
