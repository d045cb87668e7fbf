package storeharness_test

import (
	"errors"
	"testing"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
)

// Every Open is a store of its own, and Again reaches the same data as the
// store it was given, on both backends.
func TestOpenIsFreshAndAgainShares(t *testing.T) {
	ran := map[string]bool{}
	storeharness.Run(t, "harness", func(t *testing.T, b *storeharness.Backend) {
		ran[b.Name] = true
		one := b.Open(t)
		if err := one.Update(func(tx store.Tx) error { return tx.Put("things", "k", []byte("v")) }); err != nil {
			t.Fatal(err)
		}
		two := b.Open(t)
		err := two.View(func(r store.Reader) error { _, err := r.Get("things", "k"); return err })
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a second Open sees the first one's key: Get = %v, want ErrNotFound", err)
		}
		var got []byte
		if err := b.Again(t, one).View(func(r store.Reader) (err error) { got, err = r.Get("things", "k"); return err }); err != nil || string(got) != "v" {
			t.Fatalf("Again(one): Get = %q, %v; want \"v\"", got, err)
		}
	})
	if !ran["bolt"] || !ran["etcd"] {
		t.Fatalf("backends run: %v, want bolt and etcd", ran)
	}
}
