//go:build wharf_testhooks

package main

import (
	"fmt"
	"os"
	"time"
)

// testClock, in a build with -tags wharf_testhooks (which wharf's own tests
// use to build the binaries they run), reads WHARF_TEST_NOW (RFC 3339):
// the clock that decides which waivers have expired. It may only be later
// than the real time, so it can only make a waiver expire sooner, never
// revive one. nil means the real clock.
func testClock() (func() time.Time, error) {
	v := os.Getenv("WHARF_TEST_NOW")
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil || t.Before(time.Now()) {
		return nil, fmt.Errorf("WHARF_TEST_NOW %q: want an RFC 3339 time later than now", v)
	}
	return func() time.Time { return t }, nil
}
