//go:build !wharf_testhooks

package main

import "time"

// testClock is the real clock (nil) in a release build: only a build with
// the wharf_testhooks tag reads a clock from the environment (see
// testhook_clock.go).
func testClock() (func() time.Time, error) { return nil, nil }
