package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/toolpin"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

// Replicas. Several servers may share one store (etcd): each keeps caches in
// memory (known tokens, the policy head, the compiled policy and the bundle,
// both keyed by the head's version, the marketplace catalog) and learns of
// the other replicas' commits through the store's watch (store.Watcher):
//
//   - a token revoked anywhere is dropped from every replica's token cache
//     as soon as the revocation's watch event arrives;
//   - a policy change anywhere replaces every replica's cached head with the
//     committed one, so the compiled policy and the bundle follow it;
//   - cached tokens and the head do not expire while every watch proves,
//     by a progress mark (store.Event.Progress) younger than freshBound,
//     that it has delivered every commit made up to a moment ago: the hot
//     paths then read no store. A watch that is up but silent (its etcd
//     member stopped or was cut off) proves nothing: the caches then fall
//     back to Deps.StateCacheTTL, so a revoked token or a new policy takes
//     effect on every replica within about freshBound under any fault;
//   - when a watch is lost, every cache is dropped and the watch is set up
//     again.
//
// A read that races an invalidation must not put the old value back: the
// caches carry a generation, bumped under the cache's lock by every
// invalidation, and a value read from the store is cached only if the
// generation did not move while it was read.

// replicaState is the bookkeeping of the caches' invalidation.
type replicaState struct {
	headGen atomic.Uint64 // bumped under Server.headMu
	// watching counts the buckets whose watch is established (tests, readyz).
	watching atomic.Int32
	// followed is how many buckets follow watches (0: the store has no
	// watch, or Serve has not started following).
	followed atomic.Int32
	// proven[i] is the AsOf (UnixNano) of the last progress mark of the
	// i-th followed bucket's current watch; 0 while it has sent none.
	proven []atomic.Int64
	// readThrough counts cache lookups that went to the store because the
	// watches had not proven themselves recently (metrics).
	readThrough atomic.Uint64
}

// freshBound is how old the watches' last proof may be for the caches to
// be trusted without expiry: the bound on how long a change made through
// another replica may go unseen here (docs/production.md).
const freshBound = time.Second

// proof returns the oldest of the watches' last progress marks (zero when
// a watch is down or has proven nothing yet, or no store watch is
// followed).
func (s *Server) proof() time.Time {
	f := s.rep.followed.Load()
	if f == 0 || s.rep.watching.Load() != f {
		return time.Time{}
	}
	var oldest int64
	for i := range s.rep.proven {
		p := s.rep.proven[i].Load()
		if p == 0 {
			return time.Time{}
		}
		if oldest == 0 || p < oldest {
			oldest = p
		}
	}
	return time.Unix(0, oldest)
}

// fresh reports whether a cache entry that expires at exp may be used at
// now. While every watch has proven within freshBound that it delivered
// every commit, the watch invalidates entries and they do not expire;
// otherwise they live until exp, and over a watched (shared) store no
// longer than freshBound after they were read. A zero exp is no entry.
func (s *Server) fresh(exp, now time.Time) bool {
	if exp.IsZero() {
		return false
	}
	if p := s.proof(); !p.IsZero() && now.Sub(p) <= freshBound {
		return true
	}
	if s.rep.followed.Load() > 0 && s.deps.StateCacheTTL > freshBound {
		// Other replicas write to this store: an entry read more than
		// freshBound ago may miss their changes.
		exp = exp.Add(freshBound - s.deps.StateCacheTTL)
	}
	if now.Before(exp) {
		return true
	}
	s.rep.readThrough.Add(1)
	return false
}

// bucketBundle keeps the signed bundle of recent policy versions.
const bucketBundle = "api-bundle" // policy version → sharedBundle

// followedBuckets are the buckets follow watches.
func (s *Server) followedBuckets() []string {
	bs := []string{tokens.IndexBucket, tokens.Bucket, bucketSettings}
	if _, ok := s.deps.Catalog.(*MarketplaceCatalog); ok {
		bs = append(bs, marketplace.Bucket)
	}
	return bs
}

// follow sets up a watch on every bucket whose changes invalidate a cache,
// when the store is a store.Watcher, and keeps them up until ctx ends. The
// watches are established when follow returns (or being retried in the
// background when the store refused one), so that a change committed after
// follow returns is never missed.
func (s *Server) follow(ctx context.Context) {
	w, ok := s.deps.Store.(store.Watcher)
	if !ok {
		return
	}
	buckets := s.followedBuckets()
	s.rep.proven = make([]atomic.Int64, len(buckets))
	s.rep.followed.Store(int32(len(buckets)))
	for i, b := range buckets {
		ch, err := w.Watch(ctx, b)
		if err != nil {
			s.log.Warn("watch failed; caches fall back to their TTL until it is set up again", "bucket", b, "err", err)
		}
		go s.followBucket(ctx, w, b, &s.rep.proven[i], ch)
	}
}

// Following reports how many buckets this server currently watches.
func (s *Server) Following() int { return int(s.rep.watching.Load()) }

func (s *Server) followBucket(ctx context.Context, w store.Watcher, bucket string, proven *atomic.Int64, ch <-chan store.Event) {
	backoff := 50 * time.Millisecond
	for {
		if ch != nil {
			// Anything committed between the loss of the previous watch and
			// this one is unseen: forget what the caches hold. Only then
			// may entries outlive their TTL (fresh), once the new watch
			// proves itself.
			proven.Store(0)
			s.invalidateAll()
			s.rep.watching.Add(1)
			for ev := range ch {
				if ev.Progress {
					// Every change before AsOf is applied: the caches
					// are as fresh as AsOf.
					proven.Store(ev.AsOf.UnixNano())
					continue
				}
				s.apply(ev)
			}
			s.rep.watching.Add(-1)
			proven.Store(0)
			s.invalidateAll()
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
				s.log.Warn("watch failed; retrying", "bucket", bucket, "err", err)
			}
		}
	}
}

// apply invalidates what one committed change makes stale.
func (s *Server) apply(ev store.Event) {
	if deleted, ok := s.toks.Apply(ev); ok {
		if deleted != "" {
			s.forgetLimiter(deleted)
		}
		return
	}
	switch ev.Bucket {
	case bucketSettings:
		if ev.Key != keyPolicyHead {
			return
		}
		var h policyHead
		if ev.Deleted || json.Unmarshal(ev.Value, &h) != nil {
			s.dropHead()
			return
		}
		// Events come in commit order: the last one is the current head.
		s.headMu.Lock()
		s.rep.headGen.Add(1)
		s.headVal, s.headExp = h, time.Time{}
		if s.deps.StateCacheTTL > 0 {
			s.headExp = time.Now().Add(s.deps.StateCacheTTL)
		}
		s.publishHead()
		s.headMu.Unlock()
	case marketplace.Bucket:
		if mc, ok := s.deps.Catalog.(*MarketplaceCatalog); ok {
			mc.invalidate()
		}
	}
}

func (s *Server) dropHead() {
	s.headMu.Lock()
	s.rep.headGen.Add(1)
	s.headExp = time.Time{}
	s.publishHead()
	s.headMu.Unlock()
}

func (s *Server) invalidateAll() {
	s.toks.DropAll()
	s.dropHead()
	if mc, ok := s.deps.Catalog.(*MarketplaceCatalog); ok {
		mc.invalidate()
	}
}

// sharedBundle is the bundle of one policy version as first built by any
// replica. ECDSA signatures are randomized, so two replicas building the
// same policy would send different bytes under one strong ETag; instead the
// first build is kept in the store, under the policy version, and every
// replica serves those bytes.
type sharedBundle struct {
	Revision uint64 `json:"revision"`
	Body     []byte `json:"body"`
}

// errStaleBundle: the stored bundle of a policy version was built under an
// older revision than the head's.
var errStaleBundle = errors.New("stored policy bundle has an older revision")

// keptBundles is how many policy revisions back stored bundles are kept
// (a lagging replica may still ask for a recent one).
const keptBundles = 8

// bundleBytes returns the signed bundle for head: the stored one for head's
// version, else a new build that it stores unless another replica stored
// one first (then that one is returned).
func (s *Server) bundleBytes(head policyHead, layers []Layer, revs policy.Revocations, pins []toolpin.Pin) ([]byte, error) {
	stored := func(r store.Reader) ([]byte, error) {
		raw, err := r.Get(bucketBundle, head.Version)
		if err != nil {
			return nil, err
		}
		var sb sharedBundle
		if err := json.Unmarshal(raw, &sb); err != nil || len(sb.Body) == 0 {
			return nil, fmt.Errorf("stored policy bundle %s is corrupt (%v); delete key %s of bucket %s to rebuild it", head.Version, err, head.Version, bucketBundle)
		}
		if sb.Revision < head.Revision {
			// The policy came back to content it had before (a layer put
			// then deleted, a revocation lifted): the stored bundle of
			// that content carries an older revision, which clients
			// refuse as a rollback. Build it again under the new one.
			return nil, errStaleBundle
		}
		return sb.Body, nil
	}
	var body []byte
	err := s.deps.Store.View(func(r store.Reader) (err error) { body, err = stored(r); return err })
	if err == nil {
		return body, nil
	}
	if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, errStaleBundle) {
		return nil, err
	}
	built, err := buildBundle(head, layers, revs, pins, s.signer)
	if err != nil {
		return nil, err
	}
	next, err := json.Marshal(sharedBundle{Revision: head.Revision, Body: built})
	if err != nil {
		return nil, err
	}
	err = s.deps.Store.Update(func(tx store.Tx) error {
		b, err := stored(tx)
		if err == nil {
			body = b // another replica was first
			return nil
		}
		if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, errStaleBundle) {
			return err
		}
		body = built
		kvs, err := tx.List(bucketBundle, "")
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			var sb sharedBundle
			if json.Unmarshal(kv.Value, &sb) != nil || sb.Revision+keptBundles < head.Revision {
				if err := tx.Delete(bucketBundle, kv.Key); err != nil {
					return err
				}
			}
		}
		return tx.Put(bucketBundle, head.Version, next)
	})
	if err != nil {
		// E.g. a bundle larger than etcd's request limit: serve this
		// build (same ETag, other signature bytes) rather than nothing.
		s.log.Warn("policy bundle not shared through the store; replicas may send different signature bytes for it",
			"version", head.Version, "bytes", len(built), "err", err)
		return built, nil
	}
	return body, nil
}

// createSigningKey stores pemBytes as the bundle signing key unless the
// store has one, and returns the key in force: two replicas starting
// together end with the same key.
func createSigningKey(st store.Store, pemBytes []byte) ([]byte, error) {
	err := store.CompareAndSwap(st, bucketSettings, keySigningKey, nil, pemBytes)
	if err == nil {
		return pemBytes, nil
	}
	if !errors.Is(err, store.ErrConflict) {
		return nil, err
	}
	var cur []byte
	err = st.View(func(r store.Reader) (err error) {
		cur, err = r.Get(bucketSettings, keySigningKey)
		return err
	})
	if err != nil {
		return nil, err
	}
	if bytes.Equal(cur, pemBytes) {
		return pemBytes, nil
	}
	return cur, nil
}
