package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
)

// startHeap lets the heap grow to goal bytes before the first garbage
// collection, then restores the runtime's defaults. A command that starts
// an agent session (or lists, or installs) allocates a few megabytes and
// exits: with the defaults (a first collection at 4 MB, then at twice the
// live heap) it ran several collections, each marking the whole live heap
// (the compiled policy, the catalog), which at 200 installed plugins cost
// more CPU than the load itself. A long-running process (agent serve,
// a hook loop) pays one collection at goal and is then collected as usual.
// This is what the Go compiler does for its own start
// (cmd/compile/internal/base.AdjustStartingHeap). GOGC or GOMEMLIMIT in the
// environment are the user's choice and leave it off.
func startHeap(goal int64) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(goal)
	// The sentinel is unreachable from the start: the first collection
	// finds it and runs its cleanup, which puts the defaults back. (It
	// holds a pointer so that it is not put in a tiny block with other
	// objects, which could keep it alive.)
	sentinel := &struct{ p *int }{new(int)}
	runtime.AddCleanup(sentinel, func(struct{}) {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	}, struct{}{})
}
