package policy

import (
	"context"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// One evaluation of a decision touches a handful of documents. OPA's
// default per-evaluation bookkeeping is sized for large queries: a tree of
// hash maps for the virtual-document cache, a store transaction opened and
// closed, and a goroutine that waits for the context to be cancelled. The
// pieces below do the same jobs for a small query; they change nothing OPA
// computes.

// evalCache implements topdown.VirtualCache: the values of rules already
// evaluated during one evaluation, in frames (OPA pushes one per `with`).
// A frame is a short list searched linearly, with a hash index once it
// grows.
type evalCache struct {
	frames []cacheFrame
}

type cacheFrame struct {
	entries []cacheEntry
	byHash  map[int][]int // entry indexes by ref hash, once entries is long
}

type cacheEntry struct {
	ref       ast.Ref
	value     *ast.Term
	undefined bool
}

const cacheLinear = 16

var _ topdown.VirtualCache = (*evalCache)(nil)

var evalCaches = sync.Pool{New: func() any { return &evalCache{} }}

func getEvalCache() *evalCache {
	c := evalCaches.Get().(*evalCache)
	c.Push()
	return c
}

// release empties the cache (dropping its terms) and returns it to the pool.
func (c *evalCache) release() {
	for i := range c.frames {
		f := &c.frames[i]
		clear(f.entries)
		f.entries = f.entries[:0]
		f.byHash = nil
	}
	c.frames = c.frames[:0]
	evalCaches.Put(c)
}

func (c *evalCache) Push() {
	if n := len(c.frames); n < cap(c.frames) {
		c.frames = c.frames[:n+1]
		return
	}
	c.frames = append(c.frames, cacheFrame{})
}

func (c *evalCache) Pop() {
	if n := len(c.frames); n > 0 {
		f := &c.frames[n-1]
		clear(f.entries)
		f.entries = f.entries[:0]
		f.byHash = nil
		c.frames = c.frames[:n-1]
	}
}

func (f *cacheFrame) find(ref ast.Ref) int {
	if f.byHash != nil {
		for _, i := range f.byHash[ref.Hash()] {
			if f.entries[i].ref.Equal(ref) {
				return i
			}
		}
		return -1
	}
	for i := range f.entries {
		if f.entries[i].ref.Equal(ref) {
			return i
		}
	}
	return -1
}

// Get follows topdown.VirtualCache: (nil, true) undefined, (value, false)
// defined, (nil, false) not cached.
func (c *evalCache) Get(ref ast.Ref) (*ast.Term, bool) {
	if len(c.frames) == 0 {
		return nil, false
	}
	f := &c.frames[len(c.frames)-1]
	i := f.find(ref)
	if i < 0 {
		return nil, false
	}
	e := f.entries[i]
	if e.undefined {
		return nil, true
	}
	return e.value, false
}

// Put records ref's value; nil records that ref is undefined.
func (c *evalCache) Put(ref ast.Ref, value *ast.Term) {
	if len(c.frames) == 0 {
		c.Push()
	}
	f := &c.frames[len(c.frames)-1]
	if i := f.find(ref); i >= 0 {
		// As OPA's cache: a value replaces a value, and undefined sticks.
		if value != nil {
			f.entries[i].value = value
		} else {
			f.entries[i].undefined = true
		}
		return
	}
	// OPA may reuse the slice of ref (not its terms) after the call.
	ref = append(ast.Ref(nil), ref...)
	f.entries = append(f.entries, cacheEntry{ref: ref, value: value, undefined: value == nil})
	switch n := len(f.entries); {
	case n == cacheLinear:
		f.byHash = make(map[int][]int, 2*n)
		for i := range f.entries {
			h := f.entries[i].ref.Hash()
			f.byHash[h] = append(f.byHash[h], i)
		}
	case n > cacheLinear:
		h := ref.Hash()
		f.byHash[h] = append(f.byHash[h], n-1)
	}
}

// Keys lists the refs of the top frame that hold a value.
func (c *evalCache) Keys() []ast.Ref {
	if len(c.frames) == 0 {
		return nil
	}
	f := &c.frames[len(c.frames)-1]
	keys := make([]ast.Ref, 0, len(f.entries))
	for _, e := range f.entries {
		if e.value != nil {
			keys = append(keys, e.ref)
		}
	}
	return keys
}

// evalSetup is what every evaluation of one compiled state shares: a read
// transaction on its store, which nothing ever writes (so holding it open
// blocks nobody), and a cancellation that never fires, used when the
// caller's context cannot be cancelled (its Done channel is nil) in place
// of a goroutine per evaluation watching it.
type evalSetup struct {
	fixed       []rego.EvalOption // transaction, no metrics
	fixedCancel []rego.EvalOption // the same plus the never-firing cancel
}

func newEvalSetup(ctx context.Context, store storage.Store) (*evalSetup, error) {
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return nil, err
	}
	s := &evalSetup{fixed: []rego.EvalOption{rego.EvalTransaction(txn), rego.EvalMetrics(noMetrics)}}
	s.fixedCancel = append(append([]rego.EvalOption(nil), s.fixed...), rego.EvalExternalCancel(topdown.NewCancel()))
	return s, nil
}

// options returns the options of one evaluation of input with cache.
func (s *evalSetup) options(ctx context.Context, input ast.Value, cache *evalCache, buf []rego.EvalOption) []rego.EvalOption {
	base := s.fixed
	if ctx.Done() == nil {
		base = s.fixedCancel
	}
	buf = append(buf[:0], base...)
	return append(buf, rego.EvalParsedInput(input), rego.EvalVirtualCache(cache))
}
