package sharedtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingSharedSkipsOrFails runs a test binary from a temporary directory
// tree with no ../shared: it must skip by default and fail under
// WHARF_REQUIRE_SHARED=1.
func TestMissingSharedSkipsOrFails(t *testing.T) {
	if os.Getenv("SHAREDTEST_CHILD") == "1" {
		RealWorldDir(t)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "repo", "pkg")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "..", "go.mod"), []byte("module example.com/repo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(require string) (string, error) {
		cmd := exec.Command(exe, "-test.run=^TestMissingSharedSkipsOrFails$", "-test.v")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SHAREDTEST_CHILD=1", RequireEnv+"="+require)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("")
	if err != nil || !strings.Contains(out, "--- SKIP") || !strings.Contains(out, "lone clone") {
		t.Fatalf("without %s: want a skip with a message, got err=%v\n%s", RequireEnv, err, out)
	}
	out, err = run("1")
	if err == nil || !strings.Contains(out, "--- FAIL") {
		t.Fatalf("with %s=1: want a failure, got err=%v\n%s", RequireEnv, err, out)
	}
}
