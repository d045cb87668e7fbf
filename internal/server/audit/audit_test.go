package audit_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/tokens"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
)

// The audit log's contract, on every backend (Open returns a fresh, empty
// store).
func TestAudit(t *testing.T) {
	storeharness.Run(t, "audit", func(t *testing.T, b *storeharness.Backend) { runContract(t, b.Open) })
}

func runContract(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("AppendCommitsWithItsChange", func(t *testing.T) { testAppendCommits(t, open(t)) })
	t.Run("PageFiltersAndPages", func(t *testing.T) { testPage(t, open(t)) })
	t.Run("CorruptEntryIsNamed", func(t *testing.T) { testCorrupt(t, open(t)) })
	t.Run("EntryNamesThePerson", func(t *testing.T) { testPerson(t, open(t)) })
}

// An entry whose actor is a person's token names the person (subject and
// email from the token's identity) as well as the token; a machine
// token's entry names none, and one that names a person keeps it.
func testPerson(t *testing.T, st store.Store) {
	person := tokens.Record{ID: "tok_ana", Role: tokens.RoleDeveloper, Hash: "h1",
		Identity: tokens.Identity{Subject: "ana-sub", Email: "ana@example.com", Groups: []string{"data-team"}}}
	machine := tokens.Record{ID: "tok_ci", Role: tokens.RoleCI, Hash: "h2"}
	err := st.Update(func(tx store.Tx) error {
		for _, r := range []tokens.Record{person, machine} {
			if err := tokens.Put(tx, r); err != nil {
				return err
			}
		}
		for _, e := range []audit.Entry{
			{Action: audit.ActionPolicyPut, Actor: person.ID, Object: "a"},
			{Action: audit.ActionPolicyPut, Actor: machine.ID, Object: "b"},
			{Action: audit.ActionAuthRefused, Actor: "", Object: "c"},
			{Action: audit.ActionPolicyPut, Actor: person.ID, Subject: "given", Object: "d"},
		} {
			if err := audit.Append(tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := audit.Page(st, audit.Filter{}, 0, 10)
	if err != nil || len(got) != 4 {
		t.Fatalf("Page = %+v %v", got, err)
	}
	want := [][2]string{{"ana-sub", "ana@example.com"}, {"", ""}, {"", ""}, {"given", ""}}
	for i, e := range got {
		if e.Subject != want[i][0] || e.Email != want[i][1] {
			t.Errorf("entry %s names %q %q, want %q", e.Object, e.Subject, e.Email, want[i])
		}
	}
}

// An entry appended in a transaction that fails is not written; the
// sequence numbers of those written grow.
func testAppendCommits(t *testing.T, st store.Store) {
	boom := errors.New("the change failed")
	err := st.Update(func(tx store.Tx) error {
		if err := audit.Append(tx, audit.Entry{Time: time.Now(), Action: audit.ActionTokenCreate, Actor: "tok_a", Object: "tok_x"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update: %v", err)
	}
	for i := range 3 {
		err := st.Update(func(tx store.Tx) error {
			return audit.Append(tx, audit.Entry{Time: time.Now(), Action: audit.ActionTokenCreate, Actor: "tok_a", Role: tokens.RoleAdmin, Object: fmt.Sprint(i)})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	got, next, err := audit.Page(st, audit.Filter{}, 0, 10)
	if err != nil || next != "" || len(got) != 3 {
		t.Fatalf("Page = %+v %q %v", got, next, err)
	}
	for i, e := range got {
		if e.Object != fmt.Sprint(i) || (i > 0 && e.Seq <= got[i-1].Seq) || e.Role != tokens.RoleAdmin {
			t.Fatalf("entry %d = %+v", i, e)
		}
	}
}

// A filter selects by action, actor and time; a page ends with the cursor
// of the next, which reads on from there.
func testPage(t *testing.T, st store.Store) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	err := st.Update(func(tx store.Tx) error {
		for i := range 10 {
			action, actor := audit.ActionPolicyPut, "tok_a"
			if i%2 == 1 {
				action, actor = audit.ActionAuthRefused, "anonymous"
			}
			if err := audit.Append(tx, audit.Entry{Time: t0.Add(time.Duration(i) * time.Hour), Action: action, Actor: actor, Object: fmt.Sprint(i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	objects := func(es []audit.Entry) string {
		var out []string
		for _, e := range es {
			out = append(out, e.Object)
		}
		return strings.Join(out, ",")
	}
	page, next, err := audit.Page(st, audit.Filter{Action: audit.ActionPolicyPut}, 0, 2)
	if err != nil || objects(page) != "0,2" || next == "" {
		t.Fatalf("first page: %s next %q %v", objects(page), next, err)
	}
	var after uint64
	fmt.Sscan(next, &after)
	page, next, err = audit.Page(st, audit.Filter{Action: audit.ActionPolicyPut}, after, 10)
	if err != nil || objects(page) != "4,6,8" || next != "" {
		t.Fatalf("second page: %s next %q %v", objects(page), next, err)
	}
	page, _, err = audit.Page(st, audit.Filter{Actor: "anonymous", Since: t0.Add(5 * time.Hour)}, 0, 10)
	if err != nil || objects(page) != "5,7,9" {
		t.Fatalf("anonymous since 05:00: %s %v", objects(page), err)
	}
}

// An entry that does not decode fails the read, naming its key.
func testCorrupt(t *testing.T, st store.Store) {
	err := st.Update(func(tx store.Tx) error { return tx.Put(audit.Bucket, audit.SeqKey(7), []byte("{not json")) })
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = audit.Page(st, audit.Filter{}, 0, 10)
	if err == nil || !strings.Contains(err.Error(), "audit entry "+audit.SeqKey(7)) {
		t.Fatalf("a corrupt entry: %v", err)
	}
}
