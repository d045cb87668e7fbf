package api

import (
	"context"
	"time"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/catalog"
	"github.com/wharfhq/wharf/internal/server/policystate"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

// Replicas. Several servers may share one store (etcd): each keeps caches in
// memory (known tokens, the policy head with the compiled policy and the
// bundle keyed by it, the marketplace catalog) and learns of the other
// replicas' commits through the store's watch, which package follow
// follows for it, deciding also how long a cached entry may be used:
//
//   - a token revoked anywhere is dropped from every replica's token cache
//     as soon as the revocation's watch event arrives;
//   - a policy change anywhere replaces every replica's cached head with the
//     committed one, so the compiled policy and the bundle follow it;
//   - when a watch is lost, every cache is dropped and the watch is set up
//     again.

// proof returns the oldest of the watches' last progress marks (zero when
// a watch is down or has proven nothing yet, or no store watch is
// followed).
func (s *Server) proof() time.Time { return s.rep.Proof() }

// followedBuckets are the buckets follow watches.
func (s *Server) followedBuckets() []string {
	bs := []string{tokens.IndexBucket, tokens.Bucket, policystate.SettingsBucket}
	if _, ok := s.deps.Catalog.(*catalog.Marketplaces); ok {
		bs = append(bs, marketplace.Bucket)
	}
	return bs
}

// follow sets up a watch on every bucket whose changes invalidate a cache,
// when the store is a store.Watcher, and keeps them up until ctx ends
// (follow.Follower.Follow).
func (s *Server) follow(ctx context.Context) {
	s.rep.Follow(ctx, s.deps.Store, s.followedBuckets(), s.apply, s.invalidateAll)
}

// Following reports how many buckets this server currently watches.
func (s *Server) Following() int { return s.rep.Following() }

// apply invalidates what one committed change makes stale.
func (s *Server) apply(ev store.Event) {
	if deleted, ok := s.toks.Apply(ev); ok {
		if deleted != "" {
			s.forgetLimiter(deleted)
		}
		return
	}
	if s.pol.Apply(ev) {
		return
	}
	switch ev.Bucket {
	case marketplace.Bucket:
		if mc, ok := s.deps.Catalog.(*catalog.Marketplaces); ok {
			mc.Invalidate()
		}
	}
}

func (s *Server) invalidateAll() {
	s.toks.DropAll()
	s.pol.DropHead()
	if mc, ok := s.deps.Catalog.(*catalog.Marketplaces); ok {
		mc.Invalidate()
	}
}
