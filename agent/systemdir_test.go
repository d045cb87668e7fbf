package agent

import (
	"os"
	"path/filepath"

	"github.com/wharfhq/wharf/internal/core/settings"
)

// Tests never read the machine's real managed directory: in this test
// binary the system managed directory is one that does not exist, unless
// a test points it at its own (systemManaged).
func init() {
	settings.SystemManagedDir = filepath.Join(os.TempDir(), "wharf-test-no-system-managed-dir")
}
