package api

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

// cuttableStore is a real bbolt store whose watches the test can break (as
// a lost etcd watch would be) and refuse to set up again for a while.
type cuttableStore struct {
	*store.Bolt
	refuse atomic.Bool
	mu     sync.Mutex
	cuts   []context.CancelFunc
}

func (c *cuttableStore) Watch(ctx context.Context, bucket string) (<-chan store.Event, error) {
	if c.refuse.Load() {
		return nil, errors.New("watch refused (test)")
	}
	wctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.cuts = append(c.cuts, cancel)
	c.mu.Unlock()
	return c.Bolt.Watch(wctx, bucket)
}

func (c *cuttableStore) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cancel := range c.cuts {
		cancel()
	}
	c.cuts = nil
}

// revokeBehindTheServer deletes a token straight in the store, as another
// replica would: the server under test learns of it only from the store.
func revokeBehindTheServer(t *testing.T, st store.Store, id string) {
	t.Helper()
	err := st.Update(func(tx store.Tx) error {
		raw, err := tx.Get(tokens.Bucket, id)
		if err != nil {
			return err
		}
		var rec tokens.Record
		if err := json.Unmarshal(raw, &rec); err != nil {
			return err
		}
		if err := tx.Delete(tokens.IndexBucket, rec.Hash); err != nil {
			return err
		}
		return tx.Delete(tokens.Bucket, id)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A server whose watch breaks drops what it cached, since changes made
// while it was blind would otherwise stay unseen for the cache's lifetime;
// it sets the watch up again on its own and goes on following.
func TestReplicaWatchLossDropsCachesAndResumes(t *testing.T) {
	b, err := store.OpenBolt(filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cs := &cuttableStore{Bolt: b}
	if _, _, err := EnsureAdminToken(cs, replicaAdminSecret, time.Now()); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Deps{Store: cs, Policy: PolicyEngine, RateLimit: -1, StateCacheTTL: replicaCacheTTL})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l, time.Second) }()
	defer func() { cancel(); <-done }()
	r := &replica{t: t, name: "server", url: "http://" + l.Addr().String(), client: &http.Client{Timeout: 10 * time.Second}}
	all := len(srv.followedBuckets())
	waitFor(t, settle, "watches set up", func() bool { return srv.Following() == all })

	accepted := func(secret string) bool {
		return r.must("GET", "/v1/policy", secret, nil).status == http.StatusOK
	}

	// Blind: the watches break and cannot be set up again for now.
	id, secret := r.createToken(RoleDeveloper)
	if !accepted(secret) { // cached for an hour from here
		t.Fatal("new token refused")
	}
	cs.refuse.Store(true)
	cs.cut()
	waitFor(t, settle, "watches lost", func() bool { return srv.Following() == 0 })
	revokeBehindTheServer(t, cs, id)
	if accepted(secret) {
		t.Fatal("a token revoked while the watch was down is still served from the cache")
	}

	// The watches come back by themselves and carry revocations again.
	cs.refuse.Store(false)
	waitFor(t, settle, "watches set up again", func() bool { return srv.Following() == all })
	id, secret = r.createToken(RoleDeveloper)
	if !accepted(secret) {
		t.Fatal("new token refused")
	}
	revokeBehindTheServer(t, cs, id)
	waitFor(t, propagation, "revocation seen through the resumed watch", func() bool { return !accepted(secret) })
}

// A server whose policy head lags the store (here it follows no watch and
// caches the head for an hour) serves the bundle the store holds, and
// answers 304 to that bundle's ETag: the full path compares If-None-Match
// again with what it read, so a client that got the ETag from another
// replica, or from this one a moment ago, is not sent the bytes again.
func TestBundle304WhenTheCachedHeadLags(t *testing.T) {
	b, err := store.OpenBolt(filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, _, err := EnsureAdminToken(b, replicaAdminSecret, time.Now()); err != nil {
		t.Fatal(err)
	}
	var rs []*replica
	for _, name := range []string{"lagging", "writer"} {
		srv, err := New(Deps{Store: b, Policy: PolicyEngine, RateLimit: -1, StateCacheTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptestServer(t, srv)
		rs = append(rs, &replica{t: t, name: name, url: hs.URL, client: hs.Client()})
	}
	lagging, writer := rs[0], rs[1]
	before := lagging.bundleETag() // caches the head
	body := map[string]any{"settings": map[string]any{"blockedMarketplaces": []map[string]string{{"source": "directory", "path": "/blocked"}}}}
	if res := writer.must("PUT", "/v1/policy/layers/org", replicaAdminSecret, body, "If-None-Match: *"); res.status/100 != 2 {
		t.Fatalf("put on %s: %d %s", writer.name, res.status, res.body)
	}
	current := writer.bundleETag()
	if current == before {
		t.Fatal("the policy put did not change the bundle ETag")
	}
	if got := lagging.bundleETag(); got != current {
		t.Fatalf("%s serves ETag %s, the store holds %s", lagging.name, got, current)
	}
	if st := lagging.must("GET", "/v1/policy/bundle", replicaAdminSecret, nil, "If-None-Match: "+current).status; st != http.StatusNotModified {
		t.Fatalf("%s answers %d to the ETag of the bundle it serves, want 304", lagging.name, st)
	}
}
