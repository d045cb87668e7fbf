package store_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/store/storetest"
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

func TestBoltOnUseContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return store.OpenBoltOnUse(filepath.Join(t.TempDir(), "state.db"), store.Options{}, nil)
	})
}

// An OnUse store holds the file only during transactions: between them
// another opener gets it at once; during one, it waits and times out.
func TestBoltOnUseHoldsTheFileOnlyInTransactions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	wrapped := errors.New("wrapped")
	s := store.OpenBoltOnUse(path, store.Options{LockTimeout: 100 * time.Millisecond}, func(err error) error {
		return fmt.Errorf("%w: %w", wrapped, err)
	})
	if err := s.Update(func(tx store.Tx) error { return tx.Put("b", "k", []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	other := func() error {
		b, err := store.OpenBolt(path, store.Options{LockTimeout: 100 * time.Millisecond})
		if err == nil {
			b.Close()
		}
		return err
	}
	if err := other(); err != nil {
		t.Fatalf("between transactions the file is free: %v", err)
	}
	err := s.View(func(r store.Reader) error {
		// Nested and overlapping transactions share the open file.
		return s.View(func(store.Reader) error { return other() })
	})
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("during a transaction another opener must wait: %v", err)
	}
	// While another process holds the file, a transaction fails with the
	// wrapped ErrLocked.
	b, err := store.OpenBolt(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = s.View(func(store.Reader) error { return nil })
	if !errors.Is(err, store.ErrLocked) || !errors.Is(err, wrapped) {
		t.Fatalf("err = %v, want the wrapped ErrLocked", err)
	}
}
