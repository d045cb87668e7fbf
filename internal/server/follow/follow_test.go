package follow_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/follow"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
)

// The follower's contract, on every backend's real watch: Open returns a
// fresh, empty store; Again returns another client of the same store (a
// replica).
func TestFollow(t *testing.T) {
	storeharness.Run(t, "follow", func(t *testing.T, b *storeharness.Backend) {
		t.Run("AppliesOtherReplicasCommits", func(t *testing.T) { testApplies(t, b) })
		t.Run("ProvenWatchesKeepEntries", func(t *testing.T) { testProof(t, b) })
		t.Run("LostWatchDropsAndResumes", func(t *testing.T) { testLoss(t, b) })
	})
}

// waitFor polls cond until it holds, failing after a generous deadline
// (a bound on a hang, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 30s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// recorder is the caches' side: the changes applied and the drops.
type recorder struct {
	mu      sync.Mutex
	events  []store.Event
	dropped atomic.Int64
}

func (r *recorder) apply(ev store.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *recorder) drop() { r.dropped.Add(1) }

func (r *recorder) keys(bucket string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.events {
		if ev.Bucket == bucket {
			out = append(out, fmt.Sprintf("%s=%s", ev.Key, ev.Value))
		}
	}
	return out
}

func put(t *testing.T, st store.Store, bucket, key, val string) {
	t.Helper()
	if err := st.Update(func(tx store.Tx) error { return tx.Put(bucket, key, []byte(val)) }); err != nil {
		t.Fatal(err)
	}
}

// Every change another replica commits to a followed bucket is applied,
// in commit order; changes of other buckets are not; the caches are
// dropped once when each watch is set up.
func testApplies(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := follow.New(time.Minute, nil)
	var r recorder
	f.Follow(ctx, st, []string{"tokens", "settings"}, r.apply, r.drop)
	if f.Followed() != 2 {
		t.Fatalf("Followed = %d", f.Followed())
	}
	waitFor(t, "both watches up", func() bool { return f.Following() == 2 })
	if n := r.dropped.Load(); n != 2 {
		t.Fatalf("%d drops while setting up two watches, want 2", n)
	}
	other := b.Again(t, st)
	var want []string
	for i := range 20 {
		put(t, other, "tokens", fmt.Sprintf("k%d", i%3), fmt.Sprint(i))
		want = append(want, fmt.Sprintf("k%d=%d", i%3, i))
		put(t, other, "elsewhere", "x", fmt.Sprint(i))
	}
	put(t, other, "settings", "head", "last")
	waitFor(t, "the settings change applied", func() bool { return len(r.keys("settings")) == 1 })
	waitFor(t, "the token changes applied", func() bool { return len(r.keys("tokens")) == len(want) })
	if got := r.keys("tokens"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("applied %v, want %v", got, want)
	}
	if got := r.keys("elsewhere"); len(got) != 0 {
		t.Fatalf("changes of a bucket nobody follows were applied: %v", got)
	}
	if n := r.dropped.Load(); n != 2 {
		t.Fatalf("%d drops with the watches up, want 2", n)
	}
}

// While every watch has proven itself within FreshBound, an entry past its
// expiry may be used; without that proof an entry lives to its expiry, and
// over a followed store no longer than FreshBound after it was read; a
// zero expiry is no entry. Without Follow, the expiry alone decides.
func testProof(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	const ttl = time.Minute
	alone := follow.New(ttl, nil)
	read := time.Now()
	if !alone.Fresh(read.Add(ttl), read.Add(ttl/2)) || alone.Fresh(read.Add(ttl), read.Add(ttl)) {
		t.Fatal("without a watch, the TTL decides")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := follow.New(ttl, nil)
	var r recorder
	f.Follow(ctx, st, []string{"tokens", "settings"}, r.apply, r.drop)
	if f.Fresh(time.Time{}, time.Now()) {
		t.Fatal("a zero expiry is no entry")
	}
	waitFor(t, "both watches proven", func() bool { return !f.Proof().IsZero() })
	p := f.Proof()
	if !f.Fresh(p.Add(-time.Hour), p) || !f.Fresh(p.Add(-time.Hour), p.Add(follow.FreshBound)) {
		t.Fatal("an expired entry is refused although the watches proved themselves")
	}
	// An hour after the proof, it is older than FreshBound: the entry's
	// expiry decides, shortened to FreshBound after it was read.
	read = p.Add(time.Hour)
	before := f.ReadThrough()
	if !f.Fresh(read.Add(ttl), read.Add(follow.FreshBound/2)) {
		t.Fatal("an entry read a moment ago is refused")
	}
	if f.Fresh(read.Add(ttl), read.Add(2*follow.FreshBound)) {
		t.Fatal("over a followed store, an entry outlived FreshBound without the watches' proof")
	}
	if f.ReadThrough() != before+1 {
		t.Fatalf("read-throughs went from %d to %d for one refusal", before, f.ReadThrough())
	}
}

// cutter is a store whose watches the test can end (a member lost) and
// whose first watch of one bucket is refused.
type cutter struct {
	store.Store
	w       store.Watcher
	mu      sync.Mutex
	cancels []context.CancelFunc
	refuse  map[string]bool
}

func (c *cutter) Watch(ctx context.Context, bucket string) (<-chan store.Event, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refuse[bucket] {
		delete(c.refuse, bucket)
		return nil, errors.New("watch refused")
	}
	wctx, cancel := context.WithCancel(ctx)
	c.cancels = append(c.cancels, cancel)
	return c.w.Watch(wctx, bucket)
}

// cut ends every watch set up so far.
func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cancel := range c.cancels {
		cancel()
	}
	c.cancels = nil
}

// A watch refused at first is set up in the background; a lost watch
// drops every cache, proves nothing while down, and is set up again,
// dropping the caches once more; changes after that are applied.
func testLoss(t *testing.T, b *storeharness.Backend) {
	st := b.Open(t)
	c := &cutter{Store: st, w: st.(store.Watcher), refuse: map[string]bool{"settings": true}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := follow.New(time.Minute, nil)
	var r recorder
	f.Follow(ctx, c, []string{"tokens", "settings"}, r.apply, r.drop)
	waitFor(t, "the refused watch set up again", func() bool { return f.Following() == 2 })
	c.mu.Lock()
	refused := len(c.refuse) == 0
	c.mu.Unlock()
	if !refused {
		t.Fatal("the first watch of settings was not refused: the test proved nothing of the retry")
	}
	waitFor(t, "both watches proven", func() bool { return !f.Proof().IsZero() })
	drops := r.dropped.Load()
	c.cut()
	waitFor(t, "the watches set up after the loss", func() bool { return r.dropped.Load() >= drops+4 && f.Following() == 2 })
	put(t, b.Again(t, st), "settings", "head", "after")
	waitFor(t, "a change after the loss applied", func() bool { return len(r.keys("settings")) == 1 })
}
