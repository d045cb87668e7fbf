//go:build !unix

package resolver

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
