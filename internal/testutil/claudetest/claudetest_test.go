package claudetest

import (
	"path/filepath"
	"testing"

	"github.com/gofrs/flock"
)

// While a test holds the shared lock, a writer cannot take it; readers can.
// The test uses a lock file of its own: the machine-wide one may be held by
// other packages' claude tests running at the same time.
func TestWriterWaitsForReaders(t *testing.T) {
	machineWide := LockFile
	LockFile = filepath.Join(t.TempDir(), "claude.lock")
	t.Cleanup(func() { LockFile = machineWide })
	t.Run("reader", func(t *testing.T) {
		Lock(t, false)
		w := flock.New(LockFile)
		if ok, err := w.TryLock(); err != nil || ok {
			t.Fatalf("a writer took the lock while a reader held it (ok %v, err %v)", ok, err)
		}
		r := flock.New(LockFile)
		if ok, err := r.TryRLock(); err != nil || !ok {
			t.Fatalf("a second reader could not share the lock (ok %v, err %v)", ok, err)
		}
		r.Unlock()
	})
	w := flock.New(LockFile)
	if ok, err := w.TryLock(); err != nil || !ok {
		t.Fatalf("the lock was not released when the test ended (ok %v, err %v)", ok, err)
	}
	w.Unlock()
}
