package tokens

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
)

// Cache keeps known tokens in memory, under their secret's sha256, with a
// value V of the caller's beside each (the server keeps the token's rate
// limiter there). Unknown secrets are never cached, so guessing cannot
// fill it.
//
// Freshness: an entry is used while Fresh says so (the server's rule: while
// every watch of the store has proven, within a second, that it delivered
// every commit, else until the entry's expiry, TTL after it was read). The
// caller drops what a change makes stale (Drop, DropAll), from its own
// writes and from the store's watch events. A read that races a drop does
// not put the old record back: every drop bumps a generation, and a record
// read from the store is cached only if the generation did not move while
// it was read.
type Cache[V any] struct {
	st    store.Store
	ttl   time.Duration // < 0: never cache
	fresh func(exp, now time.Time) bool
	val   func(*Record) V

	mu  sync.RWMutex
	gen atomic.Uint64 // bumped under mu by every drop
	m   map[[sha256.Size]byte]Entry[V]
}

// Entry is a cached token.
type Entry[V any] struct {
	Rec     *Record // nil: no token has the secret
	Val     V
	Expires time.Time // when the entry must be read again, unless Fresh says otherwise
}

// MaxCached bounds the cache: past it, it starts again empty.
const MaxCached = 10000

// NewCache is a cache of st's tokens; fresh decides whether an entry that
// expires at exp may be used at now; val builds the value kept beside a
// record read from the store.
func NewCache[V any](st store.Store, ttl time.Duration, fresh func(exp, now time.Time) bool, val func(*Record) V) *Cache[V] {
	return &Cache[V]{st: st, ttl: ttl, fresh: fresh, val: val, m: map[[sha256.Size]byte]Entry[V]{}}
}

// Lookup returns the token for a secret (Rec nil when it is unknown): from
// memory while the entry is fresh, else from the store.
func (c *Cache[V]) Lookup(secret string, now time.Time) (Entry[V], error) {
	var buf [128]byte // a secret's bytes, without an allocation
	h := sha256.Sum256(append(buf[:0], secret...))
	c.mu.RLock()
	e, ok := c.m[h]
	c.mu.RUnlock()
	if ok && c.fresh(e.Expires, now) {
		return e, nil
	}
	return c.read(h, now)
}

// read reads the token whose secret hashes to h from the store and caches
// it.
func (c *Cache[V]) read(h [sha256.Size]byte, now time.Time) (Entry[V], error) {
	var rec *Record
	gen := c.gen.Load() // a drop seen while reading wins
	err := c.st.View(func(r store.Reader) (err error) {
		rec, err = ByHash(r, hex.EncodeToString(h[:]))
		return err
	})
	if err != nil || rec == nil {
		return Entry[V]{}, err
	}
	e := Entry[V]{Rec: rec, Val: c.val(rec), Expires: now.Add(c.ttl)}
	if c.ttl < 0 {
		return e, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() != gen {
		return e, nil
	}
	if len(c.m) >= MaxCached {
		clear(c.m)
	}
	c.m[h] = e
	return e, nil
}

// Drop forgets the token whose secret hashes to hash (hex); a hash this
// package did not write forgets every token.
func (c *Cache[V]) Drop(hash string) {
	var key [sha256.Size]byte
	n, err := hex.Decode(key[:], []byte(hash))
	if err != nil || n != len(key) {
		c.DropAll()
		return
	}
	c.mu.Lock()
	c.gen.Add(1)
	delete(c.m, key)
	c.mu.Unlock()
}

// DropAll forgets every token.
func (c *Cache[V]) DropAll() {
	c.mu.Lock()
	c.gen.Add(1)
	clear(c.m)
	c.mu.Unlock()
}

// Len is how many tokens are cached.
func (c *Cache[V]) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// Apply drops what one committed change of the tokens' buckets makes
// stale (a store watch event); it reports whether the event was of those
// buckets, and the id of a deleted token.
func (c *Cache[V]) Apply(ev store.Event) (deleted string, ok bool) {
	switch ev.Bucket {
	case IndexBucket:
		// Key is the secret's hash: a deleted (revoked) or rewritten index
		// entry must not be served from memory any more.
		c.Drop(ev.Key)
		return "", true
	case Bucket:
		if ev.Deleted {
			c.DropAll() // the record's hash is gone with it
			return ev.Key, true
		}
		var t Record
		if json.Unmarshal(ev.Value, &t) == nil && t.Hash != "" {
			c.Drop(t.Hash)
		} else {
			c.DropAll()
		}
		return "", true
	}
	return "", false
}
