package requests_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/requests"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
)

// The queue's contract, on every backend.
func TestRequests(t *testing.T) {
	storeharness.Run(t, "requests", func(t *testing.T, b *storeharness.Backend) {
		t.Run("AskAnswerWaive", func(t *testing.T) { testAskAnswerWaive(t, b.Open(t)) })
		t.Run("OneTokenCannotFlood", func(t *testing.T) { testQuota(t, b.Open(t)) })
		t.Run("AnotherReplicaSeesTheAnswer", func(t *testing.T) {
			st := b.Open(t)
			testReplica(t, st, b.Again(t, st))
		})
		t.Run("WaiversInForce", func(t *testing.T) { testRefresh(t, b.Open(t)) })
		t.Run("CorruptRecordIsNamed", func(t *testing.T) { testCorrupt(t, b.Open(t)) })
	})
}

var t0 = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

func ask(t *testing.T, st store.Store, token, plugin string, at time.Time) (requests.Request, error) {
	t.Helper()
	id, err := requests.NewID()
	if err != nil || !requests.ValidID(id) {
		t.Fatalf("NewID = %q, %v", id, err)
	}
	q := requests.Request{ID: id, Plugin: plugin, Reason: "I need it for the release", Token: token, Role: "developer", Created: at}
	if err := requests.CheckNew(&q); err != nil {
		t.Fatal(err)
	}
	return q, st.Update(func(tx store.Tx) error { return requests.Create(tx, q) })
}

func respond(st store.Store, id string, a requests.Answer) (q requests.Request, err error) {
	err = st.Update(func(tx store.Tx) error { q, err = requests.Respond(tx, id, a); return err })
	return q, err
}

func waivers(t *testing.T, st store.Store, now time.Time) []string {
	t.Helper()
	var out []string
	err := st.View(func(r store.Reader) error {
		ws, err := requests.Waivers(r, now)
		for _, w := range ws {
			out = append(out, w.Plugin)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A request is pending, then approved until a date (a waiver in force
// until then, expired after) or denied; an approval can be withdrawn by
// denying it, a denial is final; each token sees its own.
func testAskAnswerWaive(t *testing.T, st store.Store) {
	a, err := ask(t, st, "tok_dev", "tool@corp", t0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ask(t, st, "tok_dev", "other@corp", t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ask(t, st, "tok_dev2", "tool@corp", t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	var mine []requests.Request
	if err := st.View(func(r store.Reader) (err error) { mine, err = requests.Of(r, "tok_dev"); return err }); err != nil {
		t.Fatal(err)
	}
	if len(mine) != 2 || mine[0].ID != a.ID || mine[1].ID != b.ID || mine[0].Status(t0) != requests.StatusPending {
		t.Fatalf("tok_dev's requests = %+v", mine)
	}
	if got := waivers(t, st, t0); len(got) != 0 {
		t.Fatalf("waivers before any approval: %v", got)
	}
	until := t0.Add(30 * 24 * time.Hour)
	q, err := respond(st, a.ID, requests.Answer{Status: requests.StatusApproved, Until: &until, Note: "for the migration", By: "tok_admin", At: t0.Add(time.Hour)})
	if err != nil || q.Answer == nil || q.Status(t0) != requests.StatusApproved {
		t.Fatalf("approve: %+v %v", q, err)
	}
	if _, err := respond(st, b.ID, requests.Answer{Status: requests.StatusDenied, Note: "use deploy@corp", By: "tok_admin", At: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got := waivers(t, st, t0.Add(2*time.Hour)); strings.Join(got, ",") != "tool@corp" {
		t.Fatalf("waivers while approved = %v", got)
	}
	if got := waivers(t, st, until); len(got) != 0 {
		t.Fatalf("waivers at the date = %v, want none", got)
	}
	var got requests.Request
	if err := st.View(func(r store.Reader) (err error) { got, err = requests.Get(r, a.ID); return err }); err != nil {
		t.Fatal(err)
	}
	if got.Status(until) != requests.StatusExpired || got.Answer.Note != "for the migration" || got.Answer.By != "tok_admin" {
		t.Fatalf("request after its date: %+v status %s", got, got.Status(until))
	}
	// A denial is final; an approval can still be withdrawn.
	var answered *requests.AnsweredError
	if _, err := respond(st, b.ID, requests.Answer{Status: requests.StatusApproved, By: "tok_admin", At: t0}); !errors.As(err, &answered) || !strings.Contains(err.Error(), "already denied") {
		t.Fatalf("approving a denied request: %v", err)
	}
	if _, err := respond(st, a.ID, requests.Answer{Status: requests.StatusDenied, Note: "withdrawn", By: "tok_admin", At: t0.Add(3 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got := waivers(t, st, t0.Add(4*time.Hour)); len(got) != 0 {
		t.Fatalf("a withdrawn approval is still a waiver: %v", got)
	}
	var nf *requests.NotFoundError
	if _, err := respond(st, "q-00000000000000ff", requests.Answer{Status: requests.StatusDenied, By: "x", At: t0}); !errors.As(err, &nf) {
		t.Fatalf("answering an unknown request: %v", err)
	}
}

// A token asking twice for one plugin while the first is pending gets
// *DuplicateError; past MaxPendingPerToken pending, *QuotaError; another
// token is not affected.
func testQuota(t *testing.T, st store.Store) {
	first, err := ask(t, st, "tok_dev", "p0@corp", t0)
	if err != nil {
		t.Fatal(err)
	}
	var dup *requests.DuplicateError
	if _, err := ask(t, st, "tok_dev", "p0@corp", t0); !errors.As(err, &dup) || dup.Existing.ID != first.ID {
		t.Fatalf("asking twice: %v", err)
	}
	for i := 1; i < requests.MaxPendingPerToken; i++ {
		if _, err := ask(t, st, "tok_dev", fmt.Sprintf("p%d@corp", i), t0); err != nil {
			t.Fatal(err)
		}
	}
	var quota *requests.QuotaError
	if _, err := ask(t, st, "tok_dev", "one-more@corp", t0); !errors.As(err, &quota) || !strings.Contains(err.Error(), "unanswered requests") {
		t.Fatalf("over the quota: %v", err)
	}
	if _, err := ask(t, st, "tok_other", "one-more@corp", t0); err != nil {
		t.Fatalf("another token: %v", err)
	}
	// An answer frees a place.
	if _, err := respond(st, first.ID, requests.Answer{Status: requests.StatusDenied, By: "tok_admin", At: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := ask(t, st, "tok_dev", "one-more@corp", t0); err != nil {
		t.Fatalf("after an answer: %v", err)
	}
}

// Refresh keeps the waivers the policy carries: it reports a change only
// when they change, and drops an approval past its date.
func testRefresh(t *testing.T, st store.Store) {
	refresh := func(now time.Time) (changed bool, ws []string) {
		t.Helper()
		err := st.Update(func(tx store.Tx) (err error) { changed, err = requests.Refresh(tx, now); return err })
		if err != nil {
			t.Fatal(err)
		}
		err = st.View(func(r store.Reader) error {
			in, err := requests.InForce(r)
			for _, w := range in {
				ws = append(ws, w.Plugin+"/"+w.By)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return changed, ws
	}
	if changed, ws := refresh(t0); changed || len(ws) != 0 {
		t.Fatalf("empty queue: changed %v, %v", changed, ws)
	}
	q, err := ask(t, st, "tok_dev", "tool@corp", t0)
	if err != nil {
		t.Fatal(err)
	}
	until := t0.Add(time.Hour)
	if _, err := respond(st, q.ID, requests.Answer{Status: requests.StatusApproved, Until: &until, By: "tok_admin", At: t0}); err != nil {
		t.Fatal(err)
	}
	if changed, ws := refresh(t0); !changed || strings.Join(ws, ",") != "tool@corp/tok_admin" {
		t.Fatalf("after the approval: changed %v, %v", changed, ws)
	}
	if changed, _ := refresh(t0.Add(time.Minute)); changed {
		t.Fatal("a refresh with nothing new reported a change")
	}
	if changed, ws := refresh(until); !changed || len(ws) != 0 {
		t.Fatalf("after the date: changed %v, %v", changed, ws)
	}
}

// An answer written through one client is what another reads.
func testReplica(t *testing.T, a, b store.Store) {
	q, err := ask(t, a, "tok_dev", "tool@corp", t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := respond(b, q.ID, requests.Answer{Status: requests.StatusApproved, By: "tok_admin", At: t0}); err != nil {
		t.Fatal(err)
	}
	if got := waivers(t, a, t0); strings.Join(got, ",") != "tool@corp" {
		t.Fatalf("the other replica's approval: %v", got)
	}
}

func testCorrupt(t *testing.T, st store.Store) {
	if err := st.Update(func(tx store.Tx) error { return tx.Put(requests.Bucket, "q-00000000000000ee", []byte("{")) }); err != nil {
		t.Fatal(err)
	}
	err := st.View(func(r store.Reader) error { _, err := requests.All(r); return err })
	if err == nil || !strings.Contains(err.Error(), "request q-00000000000000ee: corrupt record") {
		t.Fatalf("a corrupt request: %v", err)
	}
}

// Hostile input is refused naming the field.
func TestCheckNewAndAnswer(t *testing.T) {
	for _, c := range []struct {
		name  string
		q     requests.Request
		field string
	}{
		{"not an id", requests.Request{Plugin: "tool", Reason: "x"}, "plugin"},
		{"path in the id", requests.Request{Plugin: "../x@corp", Reason: "x"}, "plugin"},
		{"no reason", requests.Request{Plugin: "tool@corp", Reason: "  "}, "reason"},
		{"long reason", requests.Request{Plugin: "tool@corp", Reason: strings.Repeat("a", requests.MaxReasonLen+1)}, "reason"},
		{"control characters", requests.Request{Plugin: "tool@corp", Reason: "hi\x1b[31m"}, "reason"},
		{"bad utf-8", requests.Request{Plugin: "tool@corp", Reason: "\xff"}, "reason"},
		{"bad machine", requests.Request{Plugin: "tool@corp", Reason: "x", Machine: "a b"}, "machine"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var fe *requests.FieldError
			if err := requests.CheckNew(&c.q); !errors.As(err, &fe) || fe.Field != c.field {
				t.Fatalf("err = %v, want a FieldError on %s", err, c.field)
			}
		})
	}
	past := t0.Add(-time.Hour)
	var fe *requests.FieldError
	if err := requests.CheckAnswer(&requests.Answer{Status: requests.StatusApproved, Until: &past}, t0); !errors.As(err, &fe) || fe.Field != "until" {
		t.Fatalf("a date in the past: %v", err)
	}
	future := t0.Add(time.Hour)
	if err := requests.CheckAnswer(&requests.Answer{Status: requests.StatusDenied, Until: &future}, t0); !errors.As(err, &fe) || fe.Field != "until" {
		t.Fatalf("a denial with a date: %v", err)
	}
	if err := requests.CheckAnswer(&requests.Answer{Status: requests.StatusDenied, Note: strings.Repeat("n", requests.MaxNoteLen+1)}, t0); !errors.As(err, &fe) || fe.Field != "note" {
		t.Fatalf("a long note: %v", err)
	}
}

// CheckNew never panics and accepts only what it can store.
func FuzzCheckNew(f *testing.F) {
	f.Add("tool@corp", "need it", "host-1")
	f.Add("", "", "")
	f.Add("a@b@c", "\x00", "../../etc")
	f.Fuzz(func(t *testing.T, plugin, reason, machine string) {
		q := requests.Request{Plugin: plugin, Reason: reason, Machine: machine}
		if err := requests.CheckNew(&q); err != nil {
			return
		}
		if !strings.Contains(q.Plugin, "@") || q.Reason == "" || len(q.Reason) > requests.MaxReasonLen {
			t.Fatalf("accepted %+v", q)
		}
	})
}
