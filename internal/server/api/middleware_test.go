package api

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

// countingStore is a real bbolt store (whose watches the test can break)
// that counts reads of the token index: the token cache promises that a
// known token costs no store read per request while the watch is up.
type countingStore struct {
	*cuttableStore
	indexReads atomic.Int64
}

func (c *countingStore) View(fn func(store.Reader) error) error {
	return c.cuttableStore.View(func(r store.Reader) error { return fn(countingReader{r, c}) })
}

type countingReader struct {
	store.Reader
	c *countingStore
}

func (r countingReader) Get(bucket, key string) ([]byte, error) {
	if bucket == tokens.IndexBucket {
		r.c.indexReads.Add(1)
	}
	return r.Reader.Get(bucket, key)
}

// serveOver starts a server over st on 127.0.0.1 (as one replica) and waits
// until it follows the store.
func serveOver(t *testing.T, name string, st store.Store, ttl time.Duration) (*Server, *replica) {
	t.Helper()
	srv, err := New(Deps{Store: st, Policy: PolicyEngine, RateLimit: -1, StateCacheTTL: ttl})
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
	all := len(srv.followedBuckets())
	waitFor(t, settle, name+": watches set up", func() bool { return srv.Following() == all })
	return srv, &replica{t: t, name: name, url: "http://" + l.Addr().String(), client: &http.Client{Timeout: 10 * time.Second}}
}

// Two servers share one store, each with a token cache whose entries would
// expire after a nanosecond without a watch. While the watches are up a
// known token is served from memory (no store read per request), a
// revocation through one server is refused by it at once and by the other
// as soon as its watch reports it; with the watches down, every request
// reads the store again.
func TestTokenCacheFollowsTheWatch(t *testing.T) {
	b, err := store.OpenBolt(filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cs := &countingStore{cuttableStore: &cuttableStore{Bolt: b}}
	if _, _, err := EnsureAdminToken(cs, replicaAdminSecret, time.Now()); err != nil {
		t.Fatal(err)
	}
	srvA, a := serveOver(t, "a", cs, time.Nanosecond)
	srvB, bb := serveOver(t, "b", cs, time.Nanosecond)
	status := func(r *replica, secret string) int { return r.must("GET", "/v1/policy", secret, nil).status }

	id, secret := a.createToken(RoleDeveloper)
	for _, r := range []*replica{a, bb} {
		if st := status(r, secret); st != http.StatusOK { // read once, then cached
			t.Fatalf("%s: new token: %d", r.name, st)
		}
	}
	// The creation's watch events reach each server in their own time (late
	// on a loaded machine) and drop what it cached before them: wait for a
	// round of requests that reads nothing. Were tokens never served from
	// memory, this would time out.
	waitFor(t, settle, "the token's creation seen by both watches", func() bool {
		before := cs.indexReads.Load()
		for _, r := range []*replica{a, bb} {
			if st := status(r, secret); st != http.StatusOK {
				t.Fatalf("%s: new token: %d", r.name, st)
			}
		}
		return cs.indexReads.Load() == before
	})
	before := cs.indexReads.Load()
	for range 20 {
		for _, r := range []*replica{a, bb} {
			if st := status(r, secret); st != http.StatusOK {
				t.Fatalf("%s: known token: %d", r.name, st)
			}
		}
	}
	if n := cs.indexReads.Load() - before; n != 0 {
		t.Errorf("40 requests with a cached token read the token index %d times; want 0 while the watch is up", n)
	}

	// Revoked through b: b refuses at once, a when its watch reports it.
	if res := bb.must("DELETE", "/v1/tokens/"+id, replicaAdminSecret, nil); res.status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", res.status, res.body)
	}
	if st := status(bb, secret); st != http.StatusUnauthorized {
		t.Fatalf("b serves the token it revoked: %d", st)
	}
	waitFor(t, propagation, "a refuses the token revoked through b", func() bool { return status(a, secret) == http.StatusUnauthorized })
	if st := status(a, secret); st != http.StatusUnauthorized {
		t.Fatalf("a: revoked token: %d", st)
	}

	// Without a watch the entries live for their TTL only: every request
	// reads the store, and a revocation behind the servers applies at once.
	id, secret = a.createToken(RoleDeveloper)
	if st := status(a, secret); st != http.StatusOK {
		t.Fatalf("new token: %d", st)
	}
	cs.refuse.Store(true)
	cs.cut()
	waitFor(t, settle, "watches lost", func() bool { return srvA.Following() == 0 && srvB.Following() == 0 })
	before = cs.indexReads.Load()
	for range 5 {
		if st := status(a, secret); st != http.StatusOK {
			t.Fatalf("known token without a watch: %d", st)
		}
	}
	if n := cs.indexReads.Load() - before; n != 5 {
		t.Errorf("5 requests without a watch read the token index %d times; want 5 (entries expire after their TTL)", n)
	}
	revokeBehindTheServer(t, cs, id)
	if st := status(a, secret); st != http.StatusUnauthorized {
		t.Fatalf("a token revoked while the watch was down: %d", st)
	}
}

// The metrics count every request once, by route pattern, method and
// status, whether it matched a route (with any outcome), matched a path
// but not its method, or matched nothing; the console's requests too.
func TestMetricsCountEveryOutcome(t *testing.T) {
	e := newEnv(t)
	agent := e.tokens[RoleAgent]
	first := e.do("GET", "/v1/policy/bundle", agent, nil)
	if first.status != http.StatusOK {
		t.Fatalf("bundle: %d", first.status)
	}
	etag := first.header.Get("ETag")
	for range 3 {
		res := e.do("GET", "/v1/policy/bundle", agent, nil, "If-None-Match: "+etag)
		if res.status != http.StatusNotModified || res.header.Get("ETag") != etag || res.header.Get("Cache-Control") != "no-cache" {
			t.Fatalf("poll: %d %v", res.status, res.header)
		}
	}
	e.do("GET", "/v1/policy/bundle", "", nil)
	e.do("GET", "/v1/policy/bundle", "not-a-token", nil)
	e.do("GET", "/v1/audit", agent, nil)
	e.do("GET", "/no/such/route", "", nil)
	e.do("POST", "/healthz", "", nil)
	e.do("GET", "/ui/signin", "", nil)
	body := string(e.do("GET", "/metrics", e.tokens[RoleAdmin], nil).body)
	for _, want := range []string{
		`wharf_http_requests_total{code="200",method="GET",route="/v1/policy/bundle"} 1`,
		`wharf_http_requests_total{code="304",method="GET",route="/v1/policy/bundle"} 3`,
		`wharf_http_requests_total{code="401",method="GET",route="/v1/policy/bundle"} 2`,
		`wharf_http_request_duration_seconds_count{method="GET",route="/v1/policy/bundle"} 6`,
		`wharf_http_requests_total{code="403",method="GET",route="/v1/audit"} 1`,
		`wharf_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`wharf_http_requests_total{code="405",method="POST",route="/healthz"} 1`,
		`wharf_http_requests_total{code="200",method="GET",route="/ui/signin"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.b.String()), "\n")
}

// At info level every request is one JSON log line naming the route, the
// status and, once the token is known, who called.
func TestAccessLogOneLinePerRequest(t *testing.T) {
	var buf syncBuffer
	e := newEnv(t, func(d *Deps) {
		d.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	agent := e.do("GET", "/v1/policy/bundle", e.tokens[RoleAgent], nil)
	e.do("GET", "/v1/policy/bundle", e.tokens[RoleAgent], nil, "If-None-Match: "+agent.header.Get("ETag"))
	e.do("GET", "/v1/plugins/a/b", "", nil)
	var got []map[string]any
	for _, l := range buf.lines() {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == "request" && m["route"] != "/v1/tokens" {
			got = append(got, m)
		}
	}
	if len(got) != 3 {
		t.Fatalf("%d request lines, want 3: %v", len(got), got)
	}
	poll := got[1]
	if poll["status"] != float64(304) || poll["route"] != "/v1/policy/bundle" || poll["path"] != "/v1/policy/bundle" ||
		poll["method"] != "GET" || poll["role"] != "agent" || !strings.HasPrefix(poll["token"].(string), "tok_") {
		t.Errorf("poll line: %v", poll)
	}
	if _, ok := poll["duration_ms"].(float64); !ok {
		t.Errorf("poll line has no duration_ms: %v", poll)
	}
	anon := got[2]
	if anon["status"] != float64(401) || anon["route"] != "/v1/plugins/:marketplace/:name" || anon["path"] != "/v1/plugins/a/b" {
		t.Errorf("anonymous line: %v", anon)
	}
	if _, ok := anon["token"]; ok {
		t.Errorf("a request without a token logs one: %v", anon)
	}
}

// panickyCatalog is a catalog whose search panics.
type panickyCatalog struct{ Catalog }

func (panickyCatalog) Search(context.Context, SearchQuery) ([]PluginSummary, error) {
	panic("catalog index corrupt")
}

// A handler that panics answers 500 without its text, the server goes on,
// and the 500 is counted like any other answer.
func TestPanicIsA500AndCounted(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.Catalog = panickyCatalog{} })
	res := e.do("GET", "/v1/plugins?q=x", e.tokens[RoleAgent], nil)
	if res.status != http.StatusInternalServerError || strings.Contains(string(res.body), "corrupt") {
		t.Fatalf("panicking search: %d %s", res.status, res.body)
	}
	if res := e.do("GET", "/healthz", "", nil); res.status != http.StatusOK {
		t.Fatalf("after a panic: %d", res.status)
	}
	body := string(e.do("GET", "/metrics", e.tokens[RoleAdmin], nil).body)
	if want := `wharf_http_requests_total{code="500",method="GET",route="/v1/plugins"} 1`; !strings.Contains(body, want) {
		t.Errorf("metrics lack %s", want)
	}
}
