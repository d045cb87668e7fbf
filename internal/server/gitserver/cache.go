package gitserver

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// packCacheBytes bounds the packs a Server keeps; a pack larger than a
// quarter of it is built for each request instead.
const packCacheBytes = 64 << 20

// packResult is what a fetch answers beyond the negotiation: the shallow
// update and the pack.
type packResult struct {
	shallow, unshallow []plumbing.Hash
	pack               []byte
	objects            int
}

// packCache keeps recent packs by what determines them, and makes
// concurrent identical requests (a team cloning the same commit) wait for
// one build instead of each building it. What a key names never changes:
// objects are content-addressed, and the refs that matter (tags, for
// include-tag) are part of the key.
type packCache struct {
	mu      sync.Mutex
	max     int64
	size    int64
	entries map[string]*cacheEntry
	lru     list.List // of *cacheEntry, most recent first; built entries only
	builds  int       // packs built, for tests
}

type cacheEntry struct {
	key  string
	done chan struct{}
	res  *packResult
	err  error
	elem *list.Element
}

func newPackCache(max int64) *packCache {
	return &packCache{max: max, entries: map[string]*cacheEntry{}}
}

// get returns the cached result for key, waiting for a build in progress,
// or builds it with build.
func (c *packCache) get(ctx context.Context, key string, build func() (*packResult, error)) (*packResult, error) {
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		e, ok := c.entries[key]
		if ok && e.res != nil {
			c.lru.MoveToFront(e.elem)
			c.mu.Unlock()
			return e.res, nil
		}
		if !ok || attempt > 2 {
			e = &cacheEntry{key: key, done: make(chan struct{})}
			if !ok {
				c.entries[key] = e
			}
			c.mu.Unlock()
			return c.build(e, !ok, build)
		}
		c.mu.Unlock()
		select {
		case <-e.done:
			if e.err == nil {
				return e.res, nil
			}
			// The build failed for its own request (a canceled client,
			// say): try again, building if nobody else is.
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (c *packCache) build(e *cacheEntry, owned bool, build func() (*packResult, error)) (*packResult, error) {
	res, err := build()
	c.mu.Lock()
	c.builds++
	c.mu.Unlock()
	if !owned {
		return res, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	defer close(e.done)
	e.res, e.err = res, err
	if err != nil || int64(len(res.pack)) > c.max/4 {
		delete(c.entries, e.key)
		if err == nil {
			e.res = res
		}
		return res, err
	}
	e.elem = c.lru.PushFront(e)
	c.size += int64(len(res.pack))
	for c.size > c.max {
		old := c.lru.Back().Value.(*cacheEntry)
		c.lru.Remove(old.elem)
		delete(c.entries, old.key)
		c.size -= int64(len(old.res.pack))
	}
	return res, nil
}

// cacheKey names a fetch's answer by everything that determines it.
func cacheKey(req *fetchRequest, ct cut, common []plumbing.Hash, tags []ref) string {
	h := sha256.New()
	list := func(label string, hs []plumbing.Hash) {
		s := slices.Clone(hs)
		slices.SortFunc(s, func(a, b plumbing.Hash) int { return slices.Compare(a[:], b[:]) })
		s = slices.Compact(s)
		fmt.Fprintf(h, "%s %d\n", label, len(s))
		for _, x := range s {
			h.Write(x[:])
		}
	}
	list("want", req.wants)
	list("common", common)
	list("shallow", req.shallows)
	list("not", ct.not)
	fmt.Fprintf(h, "depth %d relative %t since %d ofs %t tags %t\n", ct.depth, ct.relative, ct.since, req.ofsDelta, req.includeTag)
	if req.includeTag {
		for _, t := range tags {
			fmt.Fprintf(h, "%s %s %s\n", t.name, t.hash, t.peeled)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
