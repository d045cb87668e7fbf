// Package claudetest serializes the tests that run the real claude CLI
// around the one machine-wide input they share: Claude Code's system
// managed settings (/etc/claude-code on Linux), which a channel test writes
// while `go test ./...` runs other packages' claude tests at the same time.
package claudetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gofrs/flock"
)

// LockFile is the lock, in the system's temporary directory, that every
// test running claude takes.
var LockFile = filepath.Join(os.TempDir(), "wharf-claude-managed-settings.lock")

// Lock holds the lock until the test ends: exclusive for a test that
// writes Claude Code's system managed settings, shared for a test that only
// runs claude (whose behaviour those settings change).
func Lock(t testing.TB, exclusive bool) {
	t.Helper()
	l := flock.New(LockFile)
	var err error
	if exclusive {
		err = l.Lock()
	} else {
		err = l.RLock()
	}
	if err != nil {
		t.Fatalf("lock %s: %v", LockFile, err)
	}
	t.Cleanup(func() { l.Unlock() })
}
