// Package follow keeps one server replica's caches in step with the
// other replicas' commits to a shared store (etcd), through the store's
// watch (store.Watcher), and decides how long a cached entry may be used.
//
// A Follower watches the buckets whose changes make a cache stale and
// hands every committed change to the caches (apply); when a watch is
// lost it drops every cache (dropAll) and sets the watch up again. Cached
// entries do not expire while every watch proves, by a progress mark
// (store.Event.Progress) younger than FreshBound, that it has delivered
// every commit made up to a moment ago: the hot paths then read no store.
// A watch that is up but silent (its etcd member stopped or was cut off)
// proves nothing: entries then live for their TTL, and no longer than
// FreshBound over a followed store, so a change made through another
// replica takes effect here within about FreshBound under any fault.
package follow

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
)

// FreshBound is how old the watches' last proof may be for the caches to
// be trusted without expiry: the bound on how long a change made through
// another replica may go unseen here (docs/production.md).
const FreshBound = time.Second

// Follower follows a store's watches for one replica. The zero value is
// not usable: see New.
type Follower struct {
	ttl time.Duration
	log *slog.Logger

	// watching counts the buckets whose watch is established.
	watching atomic.Int32
	// followed is how many buckets follow watches (0: the store has no
	// watch, or Follow was not called).
	followed atomic.Int32
	// proven[i] is the AsOf (UnixNano) of the last progress mark of the
	// i-th followed bucket's current watch; 0 while it has sent none.
	proven []atomic.Int64
	// readThrough counts entries refused because the watches had not
	// proven themselves recently.
	readThrough atomic.Uint64
}

// New is a follower for caches whose entries live for ttl when the
// watches prove nothing; log gets the watches' failures.
func New(ttl time.Duration, log *slog.Logger) *Follower {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Follower{ttl: ttl, log: log}
}

// Follow sets up a watch on every bucket when st is a store.Watcher (else
// it does nothing), and keeps them up until ctx ends: every committed
// change goes to apply, in commit order per bucket; dropAll is called
// when a watch is set up and when one is lost (what was committed
// meanwhile is unknown). The watches are established when Follow returns
// (or being retried in the background when the store refused one), so
// that a change committed after Follow returns is never missed. Call it
// once.
func (f *Follower) Follow(ctx context.Context, st store.Store, buckets []string, apply func(store.Event), dropAll func()) {
	w, ok := st.(store.Watcher)
	if !ok {
		return
	}
	f.proven = make([]atomic.Int64, len(buckets))
	f.followed.Store(int32(len(buckets)))
	for i, b := range buckets {
		ch, err := w.Watch(ctx, b)
		if err != nil {
			f.log.Warn("watch failed; caches fall back to their TTL until it is set up again", "bucket", b, "err", err)
		}
		go f.followBucket(ctx, w, b, &f.proven[i], ch, apply, dropAll)
	}
}

// Following is how many buckets are watched now.
func (f *Follower) Following() int { return int(f.watching.Load()) }

// Followed is how many buckets Follow follows (0: none, the store has no
// watch).
func (f *Follower) Followed() int { return int(f.followed.Load()) }

// ReadThrough counts the cached entries Fresh refused because the watches
// had not proven themselves recently.
func (f *Follower) ReadThrough() uint64 { return f.readThrough.Load() }

func (f *Follower) followBucket(ctx context.Context, w store.Watcher, bucket string, proven *atomic.Int64, ch <-chan store.Event, apply func(store.Event), dropAll func()) {
	backoff := 50 * time.Millisecond
	for {
		if ch != nil {
			// Anything committed between the loss of the previous watch and
			// this one is unseen: forget what the caches hold. Only then
			// may entries outlive their TTL (Fresh), once the new watch
			// proves itself.
			proven.Store(0)
			dropAll()
			f.watching.Add(1)
			for ev := range ch {
				if ev.Progress {
					// Every change before AsOf is applied: the caches
					// are as fresh as AsOf.
					proven.Store(ev.AsOf.UnixNano())
					continue
				}
				apply(ev)
			}
			f.watching.Add(-1)
			proven.Store(0)
			dropAll()
			backoff = 50 * time.Millisecond
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
		var err error
		ch, err = w.Watch(ctx, bucket)
		if err != nil {
			ch = nil
			if ctx.Err() == nil {
				f.log.Warn("watch failed; retrying", "bucket", bucket, "err", err)
			}
		}
	}
}

// Proof returns the oldest of the watches' last progress marks (zero when
// a watch is down or has proven nothing yet, or no store watch is
// followed).
func (f *Follower) Proof() time.Time {
	n := f.followed.Load()
	if n == 0 || f.watching.Load() != n {
		return time.Time{}
	}
	var oldest int64
	for i := range f.proven {
		p := f.proven[i].Load()
		if p == 0 {
			return time.Time{}
		}
		if oldest == 0 || p < oldest {
			oldest = p
		}
	}
	return time.Unix(0, oldest)
}

// Fresh reports whether a cache entry that expires at exp may be used at
// now. While every watch has proven within FreshBound that it delivered
// every commit, the watch invalidates entries and they do not expire;
// otherwise they live until exp, and over a followed (shared) store no
// longer than FreshBound after they were read. A zero exp is no entry.
func (f *Follower) Fresh(exp, now time.Time) bool {
	if exp.IsZero() {
		return false
	}
	if p := f.Proof(); !p.IsZero() && now.Sub(p) <= FreshBound {
		return true
	}
	if f.followed.Load() > 0 && f.ttl > FreshBound {
		// Other replicas write to this store: an entry read more than
		// FreshBound ago may miss their changes.
		exp = exp.Add(FreshBound - f.ttl)
	}
	if now.Before(exp) {
		return true
	}
	f.readThrough.Add(1)
	return false
}
