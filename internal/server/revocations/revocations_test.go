package revocations_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/revocations"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
)

// The revocations' contract, on every backend (Open returns a fresh, empty
// store).
func TestRevocations(t *testing.T) {
	storeharness.Run(t, "revocations", func(t *testing.T, b *storeharness.Backend) { runContract(t, b.Open) })
}

func runContract(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("RevokeReadLift", func(t *testing.T) { testRevokeReadLift(t, open(t)) })
	t.Run("History", func(t *testing.T) { testHistory(t, open(t)) })
	t.Run("CorruptRecordIsNamed", func(t *testing.T) { testCorrupt(t, open(t)) })
}

func revocation(t *testing.T, plugin string, created time.Time) policy.Revocation {
	t.Helper()
	id, err := revocations.NewID()
	if err != nil || !revocations.ValidID(id) {
		t.Fatalf("NewID = %q, %v", id, err)
	}
	return policy.Revocation{ID: id, Plugin: plugin, Version: "1.0.0", Reason: "leaks tokens", By: "tok_a", Created: created}
}

// Active revocations are read oldest first; one lifted is gone, and reading
// it by id is *NotFoundError.
func testRevokeReadLift(t *testing.T, st store.Store) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	late, early := revocation(t, "b@corp", t0.Add(time.Hour)), revocation(t, "a@corp", t0)
	err := st.Update(func(tx store.Tx) error {
		if err := revocations.Put(tx, late); err != nil {
			return err
		}
		return revocations.Put(tx, early)
	})
	if err != nil {
		t.Fatal(err)
	}
	var active policy.Revocations
	if err := st.View(func(r store.Reader) (err error) { active, err = revocations.Active(r); return err }); err != nil {
		t.Fatal(err)
	}
	if len(active) != 2 || active[0].ID != early.ID || active[1].ID != late.ID {
		t.Fatalf("active = %+v, want the earlier first", active)
	}
	if err := st.Update(func(tx store.Tx) error { return revocations.Lift(tx, early.ID) }); err != nil {
		t.Fatal(err)
	}
	var nf *revocations.NotFoundError
	err = st.View(func(r store.Reader) error { _, err := revocations.Get(r, early.ID); return err })
	if !errors.As(err, &nf) || nf.ID != early.ID || !strings.Contains(err.Error(), "GET /v1/revocations") {
		t.Fatalf("a lifted revocation read by id: %v", err)
	}
	var got policy.Revocation
	if err := st.View(func(r store.Reader) (err error) { got, err = revocations.Get(r, late.ID); return err }); err != nil || got.Plugin != "b@corp" {
		t.Fatalf("Get(%s) = %+v, %v", late.ID, got, err)
	}
}

// Every revocation made or lifted is in the history, in order, paged.
func testHistory(t *testing.T, st store.Store) {
	rv := revocation(t, "a@corp", time.Now().UTC())
	for i, action := range []string{revocations.ActionRevoke, revocations.ActionLift, revocations.ActionRevoke} {
		err := st.Update(func(tx store.Tx) error {
			return revocations.AppendHistory(tx, revocations.HistoryEntry{Time: time.Now().UTC(), Action: action, Revocation: rv, Revision: uint64(i + 1), Actor: "tok_a"})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	page, next, err := revocations.History(st, 0, 2)
	if err != nil || len(page) != 2 || next == "" || page[0].Action != revocations.ActionRevoke || page[1].Action != revocations.ActionLift {
		t.Fatalf("first page = %+v next %q %v", page, next, err)
	}
	var after uint64
	fmt.Sscan(next, &after)
	page, next, err = revocations.History(st, after, 2)
	if err != nil || len(page) != 1 || next != "" || page[0].Revision != 3 {
		t.Fatalf("second page = %+v next %q %v", page, next, err)
	}
}

// A record that does not decode fails the read, naming it.
func testCorrupt(t *testing.T, st store.Store) {
	if err := st.Update(func(tx store.Tx) error { return tx.Put(revocations.Bucket, "r-00000000000000ff", []byte("{")) }); err != nil {
		t.Fatal(err)
	}
	err := st.View(func(r store.Reader) error { _, err := revocations.Active(r); return err })
	if err == nil || !strings.Contains(err.Error(), "revocation r-00000000000000ff: corrupt record") {
		t.Fatalf("a corrupt revocation: %v", err)
	}
}
