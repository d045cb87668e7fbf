package main

import (
	"os"
	"path/filepath"

	"github.com/wharfhq/wharf/internal/core/settings"
)

// Tests never read the machine's real managed directory: in this test
// binary (and the script subprocesses it runs) the system managed
// directory is WHARF_TEST_SYSTEM_MANAGED_DIR, else a directory that does
// not exist. Binaries the tests build get the same through the
// wharf_testhooks build tag (internal/core/settings/testhook.go).
func init() {
	d := os.Getenv("WHARF_TEST_SYSTEM_MANAGED_DIR")
	if d == "" {
		d = filepath.Join(os.TempDir(), "wharf-test-no-system-managed-dir")
	}
	settings.SystemManagedDir = d
}
