package sessions_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/sessions"
	"github.com/wharfhq/wharf/internal/server/tokens"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
)

// The sessions' contract, on every backend: Open returns a fresh, empty
// store; Again returns another client of the same store (a replica).
func TestSessions(t *testing.T) {
	storeharness.Run(t, "sessions", func(t *testing.T, b *storeharness.Backend) {
		t.Run("StartReadEnd", func(t *testing.T) { testStartReadEnd(t, b) })
		t.Run("Expiry", func(t *testing.T) { testExpiry(t, b) })
		t.Run("RevokedTokenEndsIt", func(t *testing.T) { testRevoked(t, b) })
		t.Run("OldestEndsPastTheLimit", func(t *testing.T) { testLimit(t, b) })
		t.Run("CorruptRecordIsNamed", func(t *testing.T) { testCorrupt(t, b) })
	})
}

var t0 = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

// token stores a token of role in st.
func token(t *testing.T, st store.Store, role tokens.Role, expires *time.Time) *tokens.Record {
	t.Helper()
	id, err := tokens.NewID()
	if err != nil {
		t.Fatal(err)
	}
	secret, err := tokens.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	rec := tokens.Record{ID: id, Role: role, Hash: tokens.HashSecret(secret), CreatedAt: t0, CreatedBy: "test", ExpiresAt: expires}
	if err := st.Update(func(tx store.Tx) error { return tokens.Put(tx, rec) }); err != nil {
		t.Fatal(err)
	}
	return &rec
}

func start(t *testing.T, st store.Store, tok *tokens.Record, now time.Time) string {
	t.Helper()
	id, err := sessions.Start(st, tok, now)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func tokenOf(t *testing.T, st store.Store, id string, now time.Time) *tokens.Record {
	t.Helper()
	tok, err := sessions.Token(st, id, now)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func count(t *testing.T, st store.Store) int {
	t.Helper()
	var kvs []store.KV
	if err := st.View(func(r store.Reader) (err error) { kvs, err = r.List(sessions.Bucket, ""); return err }); err != nil {
		t.Fatal(err)
	}
	return len(kvs)
}

// A session names its token, on every replica; the store keeps neither
// the id nor the token's secret; an ended session, or an id that is not
// one, names none.
func testStartReadEnd(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	tok := token(t, st, tokens.RoleDeveloper, nil)
	id := start(t, st, tok, t0)
	if !strings.HasPrefix(id, sessions.IDPrefix) {
		t.Fatalf("session id %q", id)
	}
	other := b.Again(t, st)
	if got := tokenOf(t, other, id, t0.Add(time.Minute)); got == nil || got.ID != tok.ID || got.Role != tokens.RoleDeveloper {
		t.Fatalf("another replica reads the session as %+v", got)
	}
	err := st.View(func(r store.Reader) error {
		kvs, err := r.List(sessions.Bucket, "")
		for _, kv := range kvs {
			if strings.Contains(kv.Key+string(kv.Value), id) {
				t.Errorf("the store keeps the session id: %s %s", kv.Key, kv.Value)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "wsess", "tok_" + id, id + "x", sessions.IDPrefix + strings.Repeat("a", 200)} {
		if got := tokenOf(t, st, bad, t0); got != nil {
			t.Fatalf("id %q names %+v", bad, got)
		}
	}
	if err := sessions.End(other, id); err != nil {
		t.Fatal(err)
	}
	if got := tokenOf(t, st, id, t0.Add(time.Minute)); got != nil {
		t.Fatalf("an ended session names %+v", got)
	}
}

// A session ends after Lifetime, or when its token expires if sooner (the
// token is then still returned while the session lives: the caller says
// it expired); expired sessions are dropped by the next sign-in.
func testExpiry(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	long := token(t, st, tokens.RoleAdmin, nil)
	soon := t0.Add(time.Hour)
	short := token(t, st, tokens.RoleCI, &soon)
	a := start(t, st, long, t0)
	c := start(t, st, short, t0)
	if tokenOf(t, st, a, t0.Add(sessions.Lifetime-time.Second)) == nil {
		t.Fatal("a session ended before its lifetime")
	}
	if got := tokenOf(t, st, a, t0.Add(sessions.Lifetime)); got != nil {
		t.Fatalf("a session outlived its lifetime: %+v", got)
	}
	if got := tokenOf(t, st, c, soon.Add(-time.Second)); got == nil || got.ID != short.ID {
		t.Fatalf("the short token's session before it expires: %+v", got)
	}
	if got := tokenOf(t, st, c, soon); got != nil {
		t.Fatalf("a session outlived its token: %+v", got)
	}
	if n := count(t, st); n != 2 {
		t.Fatalf("%d sessions stored, want 2", n)
	}
	start(t, st, long, t0.Add(sessions.Lifetime))
	if n := count(t, st); n != 1 {
		t.Fatalf("after a sign-in past both expiries, %d sessions stored, want 1", n)
	}
}

// A revoked (deleted) token's sessions name nothing.
func testRevoked(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	token(t, st, tokens.RoleAdmin, nil) // the last admin stays
	dev := token(t, st, tokens.RoleDeveloper, nil)
	id := start(t, st, dev, t0)
	if err := b.Again(t, st).Update(func(tx store.Tx) error { _, err := tokens.Delete(tx, dev.ID); return err }); err != nil {
		t.Fatal(err)
	}
	if got := tokenOf(t, st, id, t0.Add(time.Minute)); got != nil {
		t.Fatalf("a revoked token's session names %+v", got)
	}
}

// Past MaxPerToken live sessions of one token, a sign-in ends the oldest;
// other tokens' sessions stay.
func testLimit(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	tok := token(t, st, tokens.RoleDeveloper, nil)
	other := token(t, st, tokens.RoleAdmin, nil)
	keep := start(t, st, other, t0)
	var ids []string
	for i := range sessions.MaxPerToken + 2 {
		ids = append(ids, start(t, st, tok, t0.Add(time.Duration(i)*time.Second)))
	}
	now := t0.Add(time.Hour)
	for i, id := range ids {
		if got := tokenOf(t, st, id, now); (got == nil) != (i < 2) {
			t.Fatalf("session %d of %d: %+v; the two oldest end, the others live", i, len(ids), got)
		}
	}
	if tokenOf(t, st, keep, now) == nil {
		t.Fatal("another token's session ended")
	}
	if n := count(t, st); n != sessions.MaxPerToken+1 {
		t.Fatalf("%d sessions stored, want %d", n, sessions.MaxPerToken+1)
	}
}

// A session record that does not decode fails the read, naming it, and is
// dropped by the next sign-in.
func testCorrupt(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	tok := token(t, st, tokens.RoleDeveloper, nil)
	id := start(t, st, tok, t0)
	err := st.Update(func(tx store.Tx) error { return tx.Put(sessions.Bucket, tokens.HashSecret(id), []byte("{")) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sessions.Token(st, id, t0); err == nil || !strings.Contains(err.Error(), "console session: corrupt record") {
		t.Fatalf("a corrupt session: %v", err)
	}
	start(t, st, tok, t0)
	if got := tokenOf(t, st, id, t0); got != nil {
		t.Fatalf("the corrupt session survived a sign-in: %+v", got)
	}
	if n := count(t, st); n != 1 {
		t.Fatalf("%d sessions stored, want 1", n)
	}
}
