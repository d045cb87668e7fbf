//go:build wharf_testhooks

package settings

import (
	"os"
	"path/filepath"
)

// Built only with -tags wharf_testhooks, which wharf's own tests use to
// build the binaries they run: the system managed directory is then
// WHARF_TEST_SYSTEM_MANAGED_DIR, else a directory that does not exist, so
// tests never read the machine's. A release build has no way to move it.
func init() {
	d := os.Getenv("WHARF_TEST_SYSTEM_MANAGED_DIR")
	if d == "" {
		d = filepath.Join(os.TempDir(), "wharf-test-no-system-managed-dir")
	}
	SystemManagedDir = d
}
