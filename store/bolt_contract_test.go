package store_test

import (
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/store"
	"github.com/wharfhq/wharf/store/storetest"
)

// TestBoltContract runs the backend contract against a real bbolt file.
func TestBoltContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		b, err := store.OpenBolt(filepath.Join(t.TempDir(), "state.db"), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	})
}
