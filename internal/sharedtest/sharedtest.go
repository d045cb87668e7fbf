// Package sharedtest finds the real-world marketplaces that live next to the
// repository (../shared/realworld) for tests that read them.
//
// A clone with nothing beside it has no ../shared: such tests skip with a
// message saying so. CI sets WHARF_REQUIRE_SHARED=1, which turns the skip into
// a failure, so the tests cannot silently stop running there.
package sharedtest

import (
	"os"
	"path/filepath"
	"testing"
)

// RequireEnv is the environment variable that makes a missing ../shared a
// test failure instead of a skip.
const RequireEnv = "WHARF_REQUIRE_SHARED"

// RealWorldDir returns the path of ../shared/realworld as seen from a package
// directory depth levels below the repository root (1 for "plugin", 2 for
// "agent/hooks"). When it is absent the test skips, or fails when
// WHARF_REQUIRE_SHARED=1.
func RealWorldDir(t testing.TB, depth int) string {
	t.Helper()
	parts := []string{}
	for i := 0; i < depth+1; i++ {
		parts = append(parts, "..")
	}
	dir := filepath.Join(append(parts, "shared", "realworld")...)
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		msg := "real-world marketplaces not found at " + dir +
			" (they live in ../shared/realworld next to the repository; a lone clone has none)"
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s, and %s=1 requires them: %v", msg, RequireEnv, err)
		}
		t.Skip(msg)
	}
	return dir
}
