package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Event is one committed change to a key, as seen by a Watcher, or a
// progress mark (Progress set, Key empty).
type Event struct {
	Bucket string
	Key    string
	// Value is the new value; nil when Deleted.
	Value   []byte
	Deleted bool
	// Progress marks no change but a proof of freshness: every change to
	// Bucket committed before AsOf (on any replica) was delivered before
	// this event. A consumer whose cache follows the watch may trust it
	// as of AsOf, and no later.
	Progress bool
	AsOf     time.Time
}

// ProgressInterval is how often a healthy watch sends a progress mark
// (Event.Progress). A watch that sends none is silent: it may be stalled on
// a member that stopped, or cut off from the other members, and a consumer
// must not trust a cache it keeps.
const ProgressInterval = 200 * time.Millisecond

// Watcher is implemented by stores that can tell other parts of the process
// (and, for shared backends, other replicas) about committed changes, so that
// a token revocation or a policy change is noticed without polling.
//
// Watch delivers the changes to bucket committed after Watch returns, in
// commit order. Within one commit, changes come in key order, one per key
// (the key's final state in that commit). Between changes, a healthy watch
// sends progress marks about every ProgressInterval; a watch that cannot
// prove it has seen every commit sends none. The channel is closed when ctx ends,
// when the store is closed, or when the backend loses the watch; a consumer
// that needs the state then reads it again and calls Watch again. An event is
// a notification: a consumer that needs the current state reads it.
// Implementations are safe for concurrent use.
type Watcher interface {
	Watch(ctx context.Context, bucket string) (<-chan Event, error)
}

// CompareAndSwap replaces the value of bucket/key with next if its current
// value is old, in one Update. A nil old means the key must not exist; a nil
// next deletes the key. If the current value differs, nothing is written and
// the error wraps ErrConflict. Two concurrent swaps from the same old value
// (on any replica, for shared backends) end with exactly one winner.
func CompareAndSwap(s Store, bucket, key string, old, next []byte) error {
	return s.Update(func(tx Tx) error {
		cur, err := tx.Get(bucket, key)
		switch {
		case errors.Is(err, ErrNotFound):
			if old != nil {
				return fmt.Errorf("store: %s/%s: %w: it no longer exists", bucket, key, ErrConflict)
			}
		case err != nil:
			return err
		case old == nil:
			return fmt.Errorf("store: %s/%s: %w: it already exists", bucket, key, ErrConflict)
		case !bytes.Equal(cur, old):
			return fmt.Errorf("store: %s/%s: %w: it was changed by someone else; read it again", bucket, key, ErrConflict)
		}
		if next == nil {
			return tx.Delete(bucket, key)
		}
		return tx.Put(bucket, key, next)
	})
}

// changeSet collects the writes of one transaction so that watchers get each
// key's final state once, after the commit.
type changeSet struct {
	byKey map[[2]string]Event
}

func (c *changeSet) record(ev Event) {
	if c == nil {
		return
	}
	if c.byKey == nil {
		c.byKey = make(map[[2]string]Event)
	}
	c.byKey[[2]string{ev.Bucket, ev.Key}] = ev
}

func (c *changeSet) events() []Event {
	if c == nil || len(c.byKey) == 0 {
		return nil
	}
	out := make([]Event, 0, len(c.byKey))
	for _, ev := range c.byKey {
		out = append(out, ev)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Bucket != out[j].Bucket {
			return out[i].Bucket < out[j].Bucket
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// watchHub fans committed changes out to in-process watchers. Publishing
// never blocks a commit: each watcher has its own queue, drained by its own
// goroutine into the watcher's channel.
type watchHub struct {
	mu     sync.Mutex
	subs   map[*watchSub]struct{}
	closed chan struct{}
	once   sync.Once
	// commitMu is held by a committer from its commit until its changes
	// are published: a progress mark taken under it follows every change
	// committed before the mark's time.
	commitMu *sync.Mutex
}

type watchSub struct {
	bucket string
	mu     sync.Mutex
	queue  []Event
	wake   chan struct{}
}

func newWatchHub(commitMu *sync.Mutex) *watchHub {
	return &watchHub{subs: make(map[*watchSub]struct{}), closed: make(chan struct{}), commitMu: commitMu}
}

// mark queues a progress mark for s, after every change published so far.
// A mark still queued is moved forward rather than queued again, so a
// consumer that does not read cannot make the queue grow.
func (h *watchHub) mark(s *watchSub) {
	h.commitMu.Lock()
	defer h.commitMu.Unlock()
	ev := Event{Bucket: s.bucket, Progress: true, AsOf: time.Now()}
	s.mu.Lock()
	if n := len(s.queue); n > 0 && s.queue[n-1].Progress {
		s.queue[n-1] = ev
	} else {
		s.queue = append(s.queue, ev)
	}
	s.mu.Unlock()
}

func (h *watchHub) subscribe(ctx context.Context, bucket string) (<-chan Event, error) {
	if bucket == "" {
		return nil, errors.New("store: watch: empty bucket name")
	}
	select {
	case <-h.closed:
		return nil, errors.New("store: watch: the store is closed")
	default:
	}
	s := &watchSub{bucket: bucket, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	out := make(chan Event)
	go func() {
		defer close(out)
		defer func() {
			h.mu.Lock()
			delete(h.subs, s)
			h.mu.Unlock()
		}()
		tick := time.NewTicker(ProgressInterval)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				h.mark(s)
			default:
			}
			s.mu.Lock()
			if len(s.queue) == 0 {
				s.mu.Unlock()
				select {
				case <-s.wake:
					continue
				case <-tick.C:
					h.mark(s)
					continue
				case <-ctx.Done():
					return
				case <-h.closed:
					return
				}
			}
			ev := s.queue[0]
			s.queue[0] = Event{}
			s.queue = s.queue[1:]
			s.mu.Unlock()
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			case <-h.closed:
				return
			}
		}
	}()
	return out, nil
}

func (h *watchHub) publish(events []Event) {
	if len(events) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		added := false
		s.mu.Lock()
		for _, ev := range events {
			if ev.Bucket == s.bucket {
				ev.Value = bytes.Clone(ev.Value)
				s.queue = append(s.queue, ev)
				added = true
			}
		}
		s.mu.Unlock()
		if added {
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
	}
}

func (h *watchHub) close() {
	h.once.Do(func() { close(h.closed) })
}
