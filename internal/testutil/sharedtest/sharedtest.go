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

// RealWorldDir returns the path of ../shared/realworld next to the
// repository's root (the directory of go.mod above the test's working
// directory). When it is absent the test skips, or fails when
// WHARF_REQUIRE_SHARED=1.
func RealWorldDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(RepoRoot(t), "..", "shared", "realworld")
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

// RepoRoot returns the repository's root: the nearest directory above the
// test's working directory that holds go.mod. Tests use it to reach docs/ and
// testdata/ without counting how deep their package sits.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's working directory")
		}
		dir = parent
	}
}
