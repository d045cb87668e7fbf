//go:build wharf_testhooks

package main

import (
	"fmt"
	"os"
	"time"
)

// Built only with -tags wharf_testhooks, which wharf's own tests use to
// build the binaries they run: WHARF_TEST_NOW (RFC 3339) is the clock that
// decides which waivers have expired. It may only be later than the real
// time, so it can only make a waiver expire sooner, never revive one.
func init() {
	v := os.Getenv("WHARF_TEST_NOW")
	if v == "" {
		return
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil || t.Before(time.Now()) {
		fmt.Fprintf(os.Stderr, "wharf: WHARF_TEST_NOW %q: want an RFC 3339 time later than now\n", v)
		os.Exit(2)
	}
	testClock = func() time.Time { return t }
}
