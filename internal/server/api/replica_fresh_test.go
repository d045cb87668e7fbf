package api

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
)

// stallableStore is a real bbolt store whose watches the test can stall:
// they stay up but deliver nothing, neither changes nor progress marks, as
// a watch on an etcd member that was stopped (SIGSTOP) or cut off does.
type stallableStore struct {
	*store.Bolt
	stalled atomic.Bool
}

func (s *stallableStore) Watch(ctx context.Context, bucket string) (<-chan store.Event, error) {
	in, err := s.Bolt.Watch(ctx, bucket)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event)
	go func() {
		defer close(out)
		for ev := range in {
			for s.stalled.Load() {
				select {
				case <-ctx.Done():
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// serveStallable runs a Server over st on a listener and returns it as a
// replica, with a second server on the same store (not following any
// watch) that writes "behind" it, as another replica would.
func serveStallable(t *testing.T, st *stallableStore) (r, other *replica, srv *Server) {
	t.Helper()
	if _, _, err := EnsureAdminToken(st, replicaAdminSecret, time.Now()); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Deps{Store: st, Policy: PolicyEngine, RateLimit: -1, StateCacheTTL: replicaCacheTTL})
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
	t.Cleanup(func() { cancel(); <-done })
	r = &replica{t: t, name: "stalled", url: "http://" + l.Addr().String(), client: &http.Client{Timeout: 10 * time.Second}}
	all := len(srv.followedBuckets())
	waitFor(t, settle, "watches set up", func() bool { return srv.Following() == all })
	waitFor(t, settle, "watches proven", func() bool { return !srv.proof().IsZero() })
	writer, err := New(Deps{Store: st.Bolt, Policy: PolicyEngine, RateLimit: -1, StateCacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptestServer(t, writer)
	return r, &replica{t: t, name: "writer", url: hs.URL, client: hs.Client()}, srv
}

// A replica whose watch is up but silent must not trust its caches: a
// token deleted through another replica stops working there, and a policy
// changed through another replica reaches its bundle, while the watch
// still delivers nothing. (Before progress marks, the caches counted as
// fresh for as long as the watch was up: here, for ever.)
func TestReplicaStalledWatchReadsThrough(t *testing.T) {
	b, err := store.OpenBolt(filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	st := &stallableStore{Bolt: b}
	r, writer, srv := serveStallable(t, st)
	accepted := func(secret string) bool {
		return r.must("GET", "/v1/policy", secret, nil).status == http.StatusOK
	}
	id, secret := r.createToken(RoleDeveloper)
	if !accepted(secret) { // cached from here
		t.Fatal("new token refused")
	}
	before := r.bundleETag() // the head is cached from here

	st.stalled.Store(true)
	if srv.Following() != len(srv.followedBuckets()) {
		t.Fatal("a stalled watch should still count as up")
	}
	revokeBehindTheServer(t, b, id)
	body := map[string]any{"settings": map[string]any{"blockedMarketplaces": []map[string]string{{"source": "directory", "path": "/blocked"}}}}
	if res := writer.must("PUT", "/v1/policy/layers/org", replicaAdminSecret, body, "If-None-Match: *"); res.status != http.StatusCreated {
		t.Fatalf("put through the other replica: %d %s", res.status, res.body)
	}
	waitFor(t, settle, "deleted token refused by the replica whose watch is stalled", func() bool { return !accepted(secret) })
	waitFor(t, settle, "new policy served by the replica whose watch is stalled", func() bool { return r.bundleETag() != before })
	if st := r.must("GET", "/v1/policy/bundle", replicaAdminSecret, nil, "If-None-Match: "+before).status; st == http.StatusNotModified {
		t.Fatal("the stalled replica answers 304 to the old bundle's ETag")
	}
	metrics := string(r.must("GET", "/metrics", replicaAdminSecret, nil).body)
	for _, want := range []string{"wharf_cache_read_through_total ", "wharf_store_watch_lag_seconds "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	var ready Readiness
	r.must("GET", "/readyz", "", nil).json(t, &ready)
	if ready.WatchLagSeconds == nil || (*ready.WatchLagSeconds >= 0 && *ready.WatchLagSeconds < 0.5) {
		t.Errorf("readyz watch lag = %v with the watch stalled, want unproven (-1) or old", ready.WatchLagSeconds)
	}

	// Resumed, the watch proves itself again and carries deletions.
	st.stalled.Store(false)
	id, secret = r.createToken(RoleDeveloper)
	if !accepted(secret) {
		t.Fatal("new token refused")
	}
	revokeBehindTheServer(t, b, id)
	waitFor(t, settle, "revocation seen through the resumed watch", func() bool { return !accepted(secret) })
}

// healthStore is a bbolt store that reports the health of store servers it
// does not have, and whose reads can be made to hang.
type healthStore struct {
	*store.Bolt
	health []store.EndpointHealth
	hang   chan struct{} // reads block while it is open
}

func (h *healthStore) Health() []store.EndpointHealth { return h.health }

func (h *healthStore) View(fn func(store.Reader) error) error {
	if h.hang != nil {
		<-h.hang
	}
	return h.Bolt.View(fn)
}

// /readyz names the store endpoints that fail their checks, stays ready
// while the store answers, and answers 503 within its own deadline when
// the store does not.
func TestReadyzNamesUnhealthyEndpointsAndAnswersInTime(t *testing.T) {
	b, err := store.OpenBolt(filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	hs := &healthStore{Bolt: b, health: []store.EndpointHealth{
		{Endpoint: "127.0.0.1:2379", Healthy: true},
		{Endpoint: "127.0.0.1:2381", Healthy: false, Error: "context deadline exceeded"},
	}}
	srv, err := New(Deps{Store: hs, RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptestServer(t, srv)
	r := &replica{t: t, name: "r", url: ts.URL, client: ts.Client()}
	res := r.must("GET", "/readyz", "", nil)
	var ready Readiness
	res.json(t, &ready)
	if res.status != http.StatusOK || len(ready.Store) != 2 || ready.Store[1].Healthy || ready.Store[1].Endpoint != "127.0.0.1:2381" {
		t.Fatalf("readyz with one unhealthy member: %d %s", res.status, res.body)
	}

	hs.hang = make(chan struct{})
	defer close(hs.hang)
	res = r.must("GET", "/readyz", "", nil)
	ae := res.apiError(t)
	if res.status != http.StatusServiceUnavailable || !strings.Contains(ae.Message, "no answer within") || !strings.Contains(ae.Message, "127.0.0.1:2381 (context deadline exceeded)") {
		t.Fatalf("readyz with a hanging store: %d %s", res.status, res.body)
	}
}
