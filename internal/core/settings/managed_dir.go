package settings

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// SystemManagedDir is the system's managed settings directory, where an
// administrator puts the policy every user of the machine gets. In a
// release build it is the same on every run: neither the environment, a
// flag nor a file moves it, so a user cannot drop it (WHARF_MANAGED_DIR and
// --managed-dir only add a directory read after it). Like Claude Code's
// managed settings:
//
//	Linux and others  /etc/wharf
//	macOS             /Library/Application Support/wharf
//	Windows           C:\Program Files\wharf
//
// Only two kinds of binary read it from WHARF_TEST_SYSTEM_MANAGED_DIR
// instead (else a directory that does not exist, so no test reads the
// machine's): Go test binaries, and binaries built with the
// wharf_testhooks tag, which wharf's own tests build. It is a function,
// not a variable, so no code can reassign it.
func SystemManagedDir() string {
	if testHooks || testing.Testing() {
		if d := os.Getenv("WHARF_TEST_SYSTEM_MANAGED_DIR"); d != "" {
			return d
		}
		return filepath.Join(os.TempDir(), "wharf-test-no-system-managed-dir")
	}
	return systemManagedDir(runtime.GOOS)
}

func systemManagedDir(goos string) string {
	switch goos {
	case "darwin", "ios":
		return "/Library/Application Support/wharf"
	case "windows":
		return `C:\Program Files\wharf`
	}
	return DefaultManagedDir
}
