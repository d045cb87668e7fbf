package tokens_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/tokens"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
)

// countingStore counts the read-write transactions that reach the store.
type countingStore struct {
	store.Store
	updates atomic.Int64
}

func (c *countingStore) Update(fn func(store.Tx) error) error {
	c.updates.Add(1)
	return c.Store.Update(fn)
}

func lastUsed(t *testing.T, st store.Store) map[string]time.Time {
	t.Helper()
	var m map[string]time.Time
	if err := st.View(func(r store.Reader) (err error) {
		m, err = tokens.LastUsed(r)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// A token's last use is recorded without a write per request: at most one
// write per token per interval, on every backend; replicas never move it
// backwards; it goes with the token.
func TestLastUse(t *testing.T) {
	storeharness.Run(t, "lastuse", func(t *testing.T, b *storeharness.Backend) {
		base := b.Open(t)
		st := &countingStore{Store: base}
		lu := tokens.NewLastUse(st, 5*time.Minute)
		t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)

		if wrote, err := lu.Seen("tok_a", t0); err != nil || !wrote {
			t.Fatalf("first use: wrote %v, %v", wrote, err)
		}
		// A burst of requests, concurrently, within the interval: no write.
		var wg sync.WaitGroup
		for i := 0; i < 200; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				if wrote, err := lu.Seen("tok_a", t0.Add(time.Duration(i)*time.Second)); err != nil || wrote {
					t.Errorf("use %d within the interval: wrote %v, %v", i, wrote, err)
				}
			}(i)
		}
		wg.Wait()
		if n := st.updates.Load(); n != 1 {
			t.Fatalf("%d store writes for 201 uses within 5 minutes, want 1", n)
		}
		if got := lastUsed(t, base)["tok_a"]; !got.Equal(t0) {
			t.Fatalf("recorded last use %v, want %v", got, t0)
		}
		// Another token is its own.
		if wrote, _ := lu.Seen("tok_b", t0.Add(time.Minute)); !wrote {
			t.Error("another token's first use was not written")
		}
		// Past the interval, the next use is written.
		t1 := t0.Add(5*time.Minute + time.Second)
		if wrote, err := lu.Seen("tok_a", t1); err != nil || !wrote {
			t.Fatalf("use past the interval: wrote %v, %v", wrote, err)
		}
		if n := st.updates.Load(); n != 3 {
			t.Errorf("%d store writes, want 3", n)
		}
		if got := lastUsed(t, base); !got["tok_a"].Equal(t1) || !got["tok_b"].Equal(t0.Add(time.Minute)) {
			t.Errorf("recorded %v", got)
		}

		// A replica that saw an older use does not move it backwards.
		other := tokens.NewLastUse(b.Again(t, base), 5*time.Minute)
		if _, err := other.Seen("tok_a", t0.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if got := lastUsed(t, base)["tok_a"]; !got.Equal(t1) {
			t.Errorf("a replica's older use moved the last use to %v", got)
		}
		t2 := t1.Add(time.Hour)
		if _, err := other.Seen("tok_a", t2); err != nil {
			t.Fatal(err)
		}
		if got := lastUsed(t, base)["tok_a"]; !got.Equal(t2) {
			t.Errorf("a replica's newer use: last use %v, want %v", got, t2)
		}

		if err := base.Update(func(tx store.Tx) error { return tokens.ForgetLastUse(tx, "tok_a") }); err != nil {
			t.Fatal(err)
		}
		if _, ok := lastUsed(t, base)["tok_a"]; ok {
			t.Error("the deleted token's last use is still recorded")
		}
	})
}

// A store that refuses writes is asked once per interval, not on every
// request; the write is tried again after the interval.
func TestLastUseFailedWrite(t *testing.T) {
	b := &failingStore{fail: true}
	lu := tokens.NewLastUse(b, time.Minute)
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	if wrote, err := lu.Seen("tok_a", t0); err == nil || wrote {
		t.Fatalf("failing store: wrote %v, %v", wrote, err)
	}
	for i := 1; i < 50; i++ {
		if wrote, err := lu.Seen("tok_a", t0.Add(time.Duration(i)*time.Second)); err != nil || wrote {
			t.Fatalf("use %d after a failed write: wrote %v, %v", i, wrote, err)
		}
	}
	if b.tries != 1 {
		t.Fatalf("the failing store was asked %d times within the interval, want 1", b.tries)
	}
	b.fail = false
	if wrote, err := lu.Seen("tok_a", t0.Add(time.Minute)); err != nil || !wrote {
		t.Fatalf("after the interval: wrote %v, %v", wrote, err)
	}
}

type failingStore struct {
	store.Store
	fail  bool
	tries int
}

func (f *failingStore) Update(fn func(store.Tx) error) error {
	f.tries++
	if f.fail {
		return store.ErrLocked
	}
	return nil
}
