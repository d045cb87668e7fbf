package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/server/catalog"
	"github.com/wharfhq/wharf/internal/server/etcdstore"
	"github.com/wharfhq/wharf/internal/testutil/etcdtest"
)

// These tests run wharf the way a scaled-out deployment does: a 3-member
// etcd cluster on loopback and three API replicas, each an in-process
// server on its own 127.0.0.1 listener with its own etcd client. The
// replicas' caches live for an hour (StateCacheTTL), so whatever reaches
// another replica in these tests reached it through the store's watch.

// TestEtcdMemberProcess hosts one etcd member in a child process for
// etcdtest.StartProcesses; run directly, it skips.
func TestEtcdMemberProcess(t *testing.T) { etcdtest.ServeMember(t) }

const (
	replicaCacheTTL = time.Hour
	// propagation is how soon a change made on one replica must be seen
	// on the others.
	propagation = time.Second
	// settle bounds the waits for things that have no latency promise
	// (cluster and replica start-up).
	settle = 30 * time.Second
)

const replicaAdminSecret = "wharf-replica-test-admin-secret"

// replica is one API server over the shared etcd cluster.
type replica struct {
	t      testing.TB
	name   string
	st     *etcdstore.Store
	srv    *Server
	url    string
	ln     *trackingListener
	cancel context.CancelFunc
	done   chan error
	client *http.Client
}

// trackingListener remembers accepted connections so that kill can cut
// them, as a crashed process would.
type trackingListener struct {
	net.Listener
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		c.Close()
		return nil, net.ErrClosed
	}
	l.conns[c] = struct{}{}
	return c, nil
}

func (l *trackingListener) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.Listener.Close()
	for c := range l.conns {
		c.Close()
	}
}

// startReplicas starts n replicas over the cluster under prefix, all at
// once (so they race to create the signing key), and waits until each
// follows the store's watch.
func startReplicas(t testing.TB, endpoints []string, prefix string, n int, opts ...replicaOption) []*replica {
	t.Helper()
	rs := make([]*replica, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs[i], errs[i] = startReplica(t, endpoints, prefix, fmt.Sprintf("r%d", i), opts...)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	if _, _, err := EnsureAdminToken(rs[0].st, replicaAdminSecret, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		want := len(r.srv.followedBuckets())
		waitFor(t, settle, r.name+" follows the store", func() bool { return r.srv.Following() == want })
	}
	return rs
}

// replicaOption adds to a replica's Deps; dir is the replica's own data
// directory.
type replicaOption func(d *Deps, dir string)

// withReplicaCatalog gives the replica the real marketplace catalog over
// the shared store, with its clones in the replica's own directory and a
// snapshot that would live for an hour.
func withReplicaCatalog(d *Deps, dir string) {
	mc := catalog.New(marketplace.NewManager(d.Store, marketplace.Options{Dir: filepath.Join(dir, "marketplaces")}))
	mc.TTL = replicaCacheTTL
	d.Catalog = mc
}

func startReplica(t testing.TB, endpoints []string, prefix, name string, opts ...replicaOption) (*replica, error) {
	st, err := etcdstore.Open(endpoints, etcdstore.Options{Prefix: prefix, RequestTimeout: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	d := Deps{Store: st, Policy: PolicyEngine, RateLimit: -1, StateCacheTTL: replicaCacheTTL}
	for _, o := range opts {
		o(&d, t.TempDir())
	}
	srv, err := New(d)
	if err != nil {
		st.Close()
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		st.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{t: t, name: name, st: st, srv: srv, url: "http://" + l.Addr().String(), cancel: cancel, done: make(chan error, 1),
		ln:     &trackingListener{Listener: l, conns: map[net.Conn]struct{}{}},
		client: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	go func() { r.done <- srv.Serve(ctx, r.ln, 5*time.Second) }()
	t.Cleanup(r.stop)
	return r, nil
}

// kill stops the replica the way a crash would: its connections are cut
// mid-request and its etcd client goes away.
func (r *replica) kill() {
	r.ln.cut()
	r.st.Close()
	r.cancel()
}

func (r *replica) stop() {
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
	}
	r.ln.cut()
	r.st.Close()
	r.client.CloseIdleConnections()
}

// call sends a request; a transport error is returned, not fatal, since a
// replica may be dead on purpose.
func (r *replica) call(method, path, token string, body any, headers ...string) (resp, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return resp{}, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, r.url+path, rd)
	if err != nil {
		return resp{}, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	res, err := r.client.Do(req)
	if err != nil {
		return resp{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return resp{}, err
	}
	return resp{status: res.StatusCode, header: res.Header, body: raw}, nil
}

// must is call for a replica that is expected to answer.
func (r *replica) must(method, path, token string, body any, headers ...string) resp {
	r.t.Helper()
	res, err := r.call(method, path, token, body, headers...)
	if err != nil {
		r.t.Fatalf("%s: %s %s: %v", r.name, method, path, err)
	}
	return res
}

func (r *replica) createToken(role Role) (id, secret string) {
	r.t.Helper()
	res := r.must("POST", "/v1/tokens", replicaAdminSecret, map[string]string{"role": string(role)})
	if res.status != http.StatusCreated {
		r.t.Fatalf("%s: create %s token: %d %s", r.name, role, res.status, res.body)
	}
	var out createTokenResponse
	res.json(r.t, &out)
	return out.ID, out.Secret
}

func (r *replica) bundleETag() string {
	r.t.Helper()
	res := r.must("GET", "/v1/policy/bundle", replicaAdminSecret, nil)
	if res.status != http.StatusOK {
		r.t.Fatalf("%s: bundle: %d %s", r.name, res.status, res.body)
	}
	return res.header.Get("ETag")
}

// waitFor polls cond until it holds or the bound passes.
func waitFor(t testing.TB, bound time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if cond() {
			return time.Since(start)
		}
		if time.Since(start) > bound {
			t.Fatalf("%s: not within %s", what, bound)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func layerVersion(t testing.TB, res resp) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.Trim(res.header.Get("ETag"), `"`), 10, 64)
	if err != nil {
		t.Fatalf("layer ETag %q: %v", res.header.Get("ETag"), err)
	}
	return v
}

// readAudit reads the whole audit log through one replica.
func (r *replica) readAudit() []AuditEntry {
	r.t.Helper()
	var all []AuditEntry
	cursor := ""
	for {
		path := "/v1/audit?limit=1000"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		res := r.must("GET", path, replicaAdminSecret, nil)
		if res.status != http.StatusOK {
			r.t.Fatalf("%s: audit: %d %s", r.name, res.status, res.body)
		}
		var page AuditPage
		res.json(r.t, &page)
		all = append(all, page.Entries...)
		if page.Next == "" {
			return all
		}
		cursor = page.Next
	}
}

// checkTotalOrder requires audit sequence numbers 1, 2, 3... with no gap
// and no repeat.
func checkTotalOrder(t testing.TB, entries []AuditEntry) {
	t.Helper()
	for i, e := range entries {
		if e.Seq != uint64(i+1) {
			t.Fatalf("audit entry %d has seq %d: the log has a gap or a repeat", i, e.Seq)
		}
	}
}

// Two admins on different replicas who read the same layer version and
// both write: exactly one write per version wins, every other one gets 412
// with the version it lost to, and the audit log records exactly the
// winners, in one order that every replica reports alike.
func TestReplicasEtcdConcurrentPolicyPuts(t *testing.T) {
	c := etcdtest.Start(t, 3)
	rs := startReplicas(t, c.Endpoints(), "/puts", 3)
	if k0, k1, k2 := rs[0].srv.BundleKeyID(), rs[1].srv.BundleKeyID(), rs[2].srv.BundleKeyID(); k0 != k1 || k1 != k2 {
		t.Fatalf("replicas that started together sign with different keys: %s %s %s", k0, k1, k2)
	}

	res := rs[0].must("PUT", "/v1/policy/layers/org", replicaAdminSecret, map[string]any{"rank": 10, "settings": map[string]any{}}, "If-None-Match: *")
	if res.status != http.StatusCreated {
		t.Fatalf("create layer: %d %s", res.status, res.body)
	}
	version := layerVersion(t, res)
	const rounds, writersPerReplica = 4, 2
	wins := 0
	for round := range rounds {
		type outcome struct {
			writer int
			res    resp
			err    error
		}
		out := make(chan outcome, len(rs)*writersPerReplica)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range len(rs) * writersPerReplica {
			r := rs[w%len(rs)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := map[string]any{"settings": map[string]any{"blockedMarketplaces": []map[string]string{
					{"source": "directory", "path": fmt.Sprintf("/blocked/round%d/writer%d", round, w)}}}}
				<-start
				res, err := r.call("PUT", "/v1/policy/layers/org", replicaAdminSecret, body, fmt.Sprintf(`If-Match: "%d"`, version))
				out <- outcome{w, res, err}
			}()
		}
		close(start)
		wg.Wait()
		close(out)
		var winners []int
		for o := range out {
			if o.err != nil {
				t.Fatalf("round %d writer %d: %v", round, o.writer, o.err)
			}
			switch o.res.status {
			case http.StatusOK:
				winners = append(winners, o.writer)
				if got := layerVersion(t, o.res); got != version+1 {
					t.Fatalf("round %d: winner wrote version %d, want %d", round, got, version+1)
				}
			case http.StatusPreconditionFailed:
				ae := o.res.apiError(t)
				if ae.Code != CodeVersionConflict || ae.Current != strconv.FormatUint(version+1, 10) {
					t.Fatalf("round %d writer %d: 412 should name the winning version %d: %s", round, o.writer, version+1, o.res.body)
				}
			default:
				t.Fatalf("round %d writer %d: %d %s", round, o.writer, o.res.status, o.res.body)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d writes of version %d succeeded (writers %v), want exactly one", round, len(winners), version, winners)
		}
		version++
		wins++
	}

	// Every replica reports the same log, and it holds exactly the winners.
	logs := make([][]AuditEntry, len(rs))
	for i, r := range rs {
		logs[i] = r.readAudit()
		checkTotalOrder(t, logs[i])
	}
	puts := 0
	for _, e := range logs[0] {
		if e.Action == ActionPolicyPut {
			puts++
		}
	}
	if puts != 1+wins {
		t.Fatalf("audit has %d policy puts, want %d (the create and one per round)", puts, 1+wins)
	}
	for i := 1; i < len(rs); i++ {
		a, _ := json.Marshal(logs[0])
		b, _ := json.Marshal(logs[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("replica %s reports a different audit log than %s", rs[i].name, rs[0].name)
		}
	}
	// And the layer every replica serves is the last winner's version.
	for _, r := range rs {
		res := r.must("GET", "/v1/policy/layers/org", replicaAdminSecret, nil)
		if got := layerVersion(t, res); got != version {
			t.Fatalf("%s serves layer version %d, want %d", r.name, got, version)
		}
	}
}

// A token created on replica A and used on B and C (so that they cache
// it), then revoked on B, is refused on C within a second although C's
// cache would keep it for an hour.
func TestReplicasEtcdTokenRevocation(t *testing.T) {
	c := etcdtest.Start(t, 3)
	rs := startReplicas(t, c.Endpoints(), "/tokens", 3)
	a, b, cc := rs[0], rs[1], rs[2]

	// Control: a server over the same store that does not follow the
	// watch. It keeps the revoked token for its cache's hour, which shows
	// that the others' caches are real and that the watch is what empties
	// them.
	ctl, err := New(Deps{Store: a.st, Policy: PolicyEngine, RateLimit: -1, StateCacheTTL: replicaCacheTTL})
	if err != nil {
		t.Fatal(err)
	}
	ctlHS := httptestServer(t, ctl)
	control := &replica{t: t, name: "control", url: ctlHS.URL, client: ctlHS.Client()}

	for round := range 3 {
		id, secret := a.createToken(RoleDeveloper)
		for _, r := range []*replica{a, b, cc, control} {
			for range 3 {
				if res := r.must("GET", "/v1/policy", secret, nil); res.status != http.StatusOK {
					t.Fatalf("round %d: new token on %s: %d %s", round, r.name, res.status, res.body)
				}
			}
		}
		if res := b.must("DELETE", "/v1/tokens/"+id, replicaAdminSecret, nil); res.status != http.StatusNoContent {
			t.Fatalf("revoke on %s: %d %s", b.name, res.status, res.body)
		}
		for _, r := range []*replica{b, cc, a} {
			took := waitFor(t, propagation, fmt.Sprintf("round %d: revoked token refused on %s", round, r.name), func() bool {
				return r.must("GET", "/v1/policy", secret, nil).status == http.StatusUnauthorized
			})
			t.Logf("round %d: revocation on %s seen on %s after %s", round, b.name, r.name, took.Round(time.Millisecond))
		}
		if res := control.must("GET", "/v1/policy", secret, nil); res.status != http.StatusOK {
			t.Fatalf("control server without a watch: %d (its cache should still hold the token)", res.status)
		}
	}
}

// A policy change on A gives B and C A's bundle ETag within a second, and
// all three send the same bytes signed with the same key.
func TestReplicasEtcdBundleETag(t *testing.T) {
	c := etcdtest.Start(t, 3)
	rs := startReplicas(t, c.Endpoints(), "/bundle", 3)
	for _, r := range rs {
		r.bundleETag() // cache the initial head everywhere
	}
	keys := map[string]bool{}
	for _, r := range rs {
		var k BundleKey
		r.must("GET", "/v1/policy/bundle/key", replicaAdminSecret, nil).json(t, &k)
		keys[k.KeyID+k.PublicKey] = true
	}
	if len(keys) != 1 {
		t.Fatalf("replicas publish %d different bundle keys", len(keys))
	}
	ifMatch := "If-None-Match: *"
	for round := range 4 {
		writer := rs[round%len(rs)]
		body := map[string]any{"rank": 10, "modules": map[string]string{"risky.rego": denyRiskyModule},
			"settings": map[string]any{"blockedMarketplaces": []map[string]string{{"source": "directory", "path": fmt.Sprintf("/blocked/%d", round)}}}}
		res := writer.must("PUT", "/v1/policy/layers/org", replicaAdminSecret, body, ifMatch)
		if res.status/100 != 2 {
			t.Fatalf("round %d: put on %s: %d %s", round, writer.name, res.status, res.body)
		}
		ifMatch = "If-Match: " + res.header.Get("ETag")
		var wr LayerWriteResult
		res.json(t, &wr)
		want := writer.bundleETag()
		if want != bundleETag(wr.PolicyVersion) {
			t.Fatalf("round %d: %s serves ETag %s right after its own write of %s", round, writer.name, want, wr.PolicyVersion)
		}
		var bodies [][]byte
		for _, r := range rs {
			took := waitFor(t, propagation, fmt.Sprintf("round %d: %s serves the new bundle", round, r.name), func() bool {
				return r.bundleETag() == want
			})
			t.Logf("round %d: write on %s seen on %s after %s", round, writer.name, r.name, took.Round(time.Millisecond))
			res := r.must("GET", "/v1/policy/bundle", replicaAdminSecret, nil)
			if got := res.header.Get("ETag"); got != want {
				t.Fatalf("round %d: %s went back to ETag %s", round, r.name, got)
			}
			bodies = append(bodies, res.body)
			// A client holding the ETag from another replica gets 304 here.
			if st := r.must("GET", "/v1/policy/bundle", replicaAdminSecret, nil, "If-None-Match: "+want).status; st != http.StatusNotModified {
				t.Fatalf("round %d: %s answers %d to the current ETag", round, r.name, st)
			}
		}
		for i := 1; i < len(bodies); i++ {
			if !bytes.Equal(bodies[0], bodies[i]) {
				t.Fatalf("round %d: %s and %s send different bytes under ETag %s", round, rs[0].name, rs[i].name, want)
			}
		}
		var k BundleKey
		rs[1].must("GET", "/v1/policy/bundle/key", replicaAdminSecret, nil).json(t, &k)
		bp, err := ReadBundle(bytes.NewReader(bodies[0]), k)
		if err != nil {
			t.Fatalf("round %d: bundle does not verify with the shared key: %v", round, err)
		}
		if bp.Version != wr.PolicyVersion {
			t.Fatalf("round %d: bundle holds policy %s, want %s", round, bp.Version, wr.PolicyVersion)
		}
	}
}

// A marketplace added through one replica is listed and searchable on the
// others within a second, and one removed through another replica is gone
// from all of them, although each replica's catalog snapshot would live for
// an hour.
func TestReplicasEtcdCatalog(t *testing.T) {
	c := etcdtest.Start(t, 3)
	rs := startReplicas(t, c.Endpoints(), "/catalog", 3, withReplicaCatalog)
	f := newFixture(t)
	listed := func(r *replica) bool {
		res := r.must("GET", "/v1/marketplaces", replicaAdminSecret, nil)
		if res.status != http.StatusOK {
			t.Fatalf("%s: list marketplaces: %d %s", r.name, res.status, res.body)
		}
		var ms []Marketplace
		res.json(t, &ms)
		for _, m := range ms {
			if m.Name == "corp" {
				return true
			}
		}
		return false
	}
	for _, r := range rs {
		if listed(r) { // and the empty catalog is now cached
			t.Fatalf("%s lists corp before it was added", r.name)
		}
	}
	res := rs[0].must("POST", "/v1/marketplaces", replicaAdminSecret, map[string]any{
		"name": "corp", "source": map[string]string{"source": "directory", "path": f.root}})
	if res.status != http.StatusCreated {
		t.Fatalf("add marketplace on %s: %d %s", rs[0].name, res.status, res.body)
	}
	for _, r := range rs[1:] {
		took := waitFor(t, propagation, r.name+" lists the marketplace added on "+rs[0].name, func() bool { return listed(r) })
		t.Logf("added on %s, listed on %s after %s", rs[0].name, r.name, took.Round(time.Millisecond))
		res := r.must("GET", "/v1/plugins?q=deploy", replicaAdminSecret, nil)
		if res.status != http.StatusOK || !strings.Contains(string(res.body), "deploy@corp") {
			t.Fatalf("%s: search after the add: %d %s", r.name, res.status, res.body)
		}
	}
	if res := rs[1].must("DELETE", "/v1/marketplaces/corp", replicaAdminSecret, nil); res.status/100 != 2 {
		t.Fatalf("remove on %s: %d %s", rs[1].name, res.status, res.body)
	}
	for _, r := range []*replica{rs[0], rs[2]} {
		waitFor(t, propagation, r.name+" forgets the marketplace removed on "+rs[1].name, func() bool { return !listed(r) })
	}
}

// ack is one write a client saw succeed.
type ack struct {
	kind   string // "token" or "policy"
	id     string // token id, or layer name
	secret string // token secret
	ver    uint64 // layer version
	via    string // replica that acknowledged it
}

// Writes keep coming (token creations and policy puts, each audited) while
// one etcd member (the leader, a separate process) is killed with SIGKILL
// and one replica crashes. Afterwards every acknowledged write is readable
// from every surviving replica: the token is listed and accepted, the layer
// version is in the history, both are in the audit log, and the log has
// one gap-free order that both survivors report alike.
func TestReplicasEtcdSurviveMemberAndReplicaLoss(t *testing.T) {
	c := etcdtest.StartProcesses(t, 3, "TestEtcdMemberProcess")
	rs := startReplicas(t, c.Endpoints(), "/ha", 3)
	victim := rs[2]
	survivors := rs[:2]

	const (
		workersPerReplica = 2
		load              = 3 * time.Second // writes go on at least this long after the kills
		afterKills        = 12              // and until this many more were acknowledged
		maxWritesEach     = 400             // bounds the load on a fast machine
	)
	var (
		mu       sync.Mutex
		acks     []ack
		failures int
		firstErr error
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range len(rs) * workersPerReplica {
		r := rs[w%len(rs)]
		layer := fmt.Sprintf("w%d", w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var version uint64 // last acknowledged version of this worker's layer
			for i := 0; i < maxWritesEach; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var a ack
				var res resp
				var err error
				if i%2 == 0 {
					res, err = r.call("POST", "/v1/tokens", replicaAdminSecret, map[string]string{"role": "agent", "note": layer})
					if err == nil && res.status == http.StatusCreated {
						var out createTokenResponse
						if err = json.Unmarshal(res.body, &out); err == nil {
							a = ack{kind: "token", id: out.ID, secret: out.Secret, via: r.name}
						}
					}
				} else {
					pre := "If-None-Match: *"
					if version > 0 {
						pre = fmt.Sprintf(`If-Match: "%d"`, version)
					}
					body := map[string]any{"rank": 50, "settings": map[string]any{"blockedMarketplaces": []map[string]string{{"source": "directory", "path": fmt.Sprintf("/%s/%d", layer, i)}}}}
					res, err = r.call("PUT", "/v1/policy/layers/"+layer, replicaAdminSecret, body, pre)
					switch {
					case err == nil && res.status/100 == 2:
						version = version + 1
						if v, perr := strconv.ParseUint(strings.Trim(res.header.Get("ETag"), `"`), 10, 64); perr == nil {
							version = v
						}
						a = ack{kind: "policy", id: layer, ver: version, via: r.name}
					case err == nil && res.status == http.StatusPreconditionFailed:
						// An earlier write that failed in flight was applied
						// after all: continue from the current version.
						var ae struct{ Error APIError }
						if json.Unmarshal(res.body, &ae) == nil {
							version, _ = strconv.ParseUint(ae.Error.Current, 10, 64)
						}
					}
				}
				mu.Lock()
				if a.kind != "" {
					acks = append(acks, a)
				} else {
					failures++
					if firstErr == nil {
						if err == nil {
							err = fmt.Errorf("%s: %d %s", r.name, res.status, res.body)
						}
						firstErr = err
					}
				}
				mu.Unlock()
				if a.kind == "" {
					time.Sleep(20 * time.Millisecond) // no hot loop against a dead replica
				}
			}
		}()
	}

	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acks)
	}
	// Let the load run a little, then crash the etcd leader and a replica.
	waitFor(t, settle, "first writes acknowledged", func() bool { return count() >= 10 })
	leader := c.Leader()
	before := count()
	c.Stop(leader)
	victim.kill()
	t.Logf("killed etcd member %s (leader) and replica %s after %d acknowledged writes", c.Members[leader].Name, victim.name, before)
	killedAt := time.Now()
	waitFor(t, settle, fmt.Sprintf("%d writes acknowledged by the survivors after the kills", afterKills), func() bool {
		return count()-before >= afterKills && time.Since(killedAt) >= load
	})
	close(stop)
	wg.Wait()
	after := count()
	t.Logf("%d writes acknowledged (%d after the kills), %d not (first: %v)", after, after-before, failures, firstErr)

	for _, r := range survivors {
		var listed []Token
		res := r.must("GET", "/v1/tokens", replicaAdminSecret, nil)
		if res.status != http.StatusOK {
			t.Fatalf("%s: list tokens: %d %s", r.name, res.status, res.body)
		}
		res.json(t, &listed)
		tokens := map[string]bool{}
		for _, tk := range listed {
			tokens[tk.ID] = true
		}
		audit := r.readAudit()
		checkTotalOrder(t, audit)
		audited := map[string]bool{}
		for _, e := range audit {
			switch e.Action {
			case ActionTokenCreate:
				audited["token "+e.Object] = true
			case ActionPolicyPut:
				lv, _ := e.Detail["layerVersion"].(float64)
				audited[fmt.Sprintf("policy %s %d", e.Object, uint64(lv))] = true
			}
		}
		var hist HistoryPage
		res = r.must("GET", "/v1/policy/history?limit=1000", replicaAdminSecret, nil)
		res.json(t, &hist)
		if hist.Next != "" {
			t.Fatalf("%s: policy history has more than one page; raise the test's limit", r.name)
		}
		inHistory := map[string]bool{}
		for _, h := range hist.Entries {
			inHistory[fmt.Sprintf("%s %d", h.Layer, h.LayerVersion)] = true
		}
		for i, a := range acks {
			switch a.kind {
			case "token":
				if !tokens[a.id] || !audited["token "+a.id] {
					t.Fatalf("%s: token %s acknowledged by %s is lost (listed %v, audited %v)", r.name, a.id, a.via, tokens[a.id], audited["token "+a.id])
				}
				if i%5 == 0 { // the secret works too (a sample: each is a request)
					if st := r.must("GET", "/v1/policy/bundle/key", a.secret, nil).status; st != http.StatusOK {
						t.Fatalf("%s: token %s acknowledged by %s is refused: %d", r.name, a.id, a.via, st)
					}
				}
			case "policy":
				k := fmt.Sprintf("%s %d", a.id, a.ver)
				if !inHistory[k] || !audited["policy "+k] {
					t.Fatalf("%s: layer %s version %d acknowledged by %s is lost (history %v, audit %v)", r.name, a.id, a.ver, a.via, inHistory[k], audited["policy "+k])
				}
			}
		}
	}
	a0, a1 := survivors[0].readAudit(), survivors[1].readAudit()
	j0, _ := json.Marshal(a0)
	j1, _ := json.Marshal(a1)
	if !bytes.Equal(j0, j1) {
		t.Fatalf("the surviving replicas report different audit logs (%d vs %d entries)", len(a0), len(a1))
	}
	// The writes went on: the layer every worker wrote is at a version no
	// lower than the last one acknowledged for it.
	last := map[string]uint64{}
	for _, a := range acks {
		if a.kind == "policy" && a.ver > last[a.id] {
			last[a.id] = a.ver
		}
	}
	names := make([]string, 0, len(last))
	for n := range last {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		res := survivors[1].must("GET", "/v1/policy/layers/"+n, replicaAdminSecret, nil)
		if got := layerVersion(t, res); got < last[n] {
			t.Fatalf("layer %s is at version %d, below the acknowledged %d", n, got, last[n])
		}
	}
}
