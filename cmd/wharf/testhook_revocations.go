//go:build wharf_testhooks

package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/wharfhq/wharf/internal/core/policy"
)

// testRevocations, in a build with -tags wharf_testhooks (which wharf's
// own tests use to build the binaries they run), reads WHARF_TEST_REVOCATIONS
// (a JSON array of revocations): they stand in for the revocations a
// pulled policy bundle carries. A release build has no way to set them but
// the bundle (release_revocations.go).
func testRevocations() policy.Revocations {
	v := os.Getenv("WHARF_TEST_REVOCATIONS")
	if v == "" {
		return nil
	}
	var rs policy.Revocations
	if err := json.Unmarshal([]byte(v), &rs); err != nil {
		fmt.Fprintf(os.Stderr, "wharf: WHARF_TEST_REVOCATIONS: %v\n", err)
		os.Exit(2)
	}
	return rs
}
