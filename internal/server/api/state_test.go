package api

import (
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/tokens"

	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
)

func TestTokenLifecycle(t *testing.T) {
	e := newEnv(t)
	admin := e.tokens[RoleAdmin]

	res := e.do("POST", "/v1/tokens", admin, map[string]string{"role": "ci", "note": "release pipeline"})
	var created struct {
		ID    string `json:"id"`
		Role  Role   `json:"role"`
		Token string `json:"token"`
	}
	res.json(t, &created)
	if res.status != 201 || created.Role != RoleCI || !strings.HasPrefix(created.Token, "wharf_") || res.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	if res := e.do("POST", "/v1/verify", created.Token, `{"digest": "x"}`); res.status != 400 {
		t.Fatalf("new ci token must authenticate: %d %s", res.status, res.body)
	}
	// The secret is never shown again, and not stored in clear.
	list := e.do("GET", "/v1/tokens", admin, nil)
	if strings.Contains(string(list.body), created.Token) || !strings.Contains(string(list.body), created.ID) {
		t.Fatalf("token list: %s", list.body)
	}
	e.st.View(func(r store.Reader) error {
		kvs, _ := r.List(tokens.Bucket, "")
		for _, kv := range kvs {
			if strings.Contains(string(kv.Value), created.Token) {
				t.Errorf("secret stored in clear in %s", kv.Key)
			}
		}
		return nil
	})

	if res := e.do("DELETE", "/v1/tokens/"+created.ID, admin, nil); res.status != 204 {
		t.Fatalf("delete: %d %s", res.status, res.body)
	}
	if res := e.do("POST", "/v1/verify", created.Token, `{}`); res.status != 401 {
		t.Fatalf("revoked token: %d %s", res.status, res.body)
	}
	// The last admin token cannot be deleted.
	var toks []Token
	e.do("GET", "/v1/tokens", admin, nil).json(t, &toks)
	var adminID string
	for _, tk := range toks {
		if tk.Role == RoleAdmin {
			adminID = tk.ID
		}
	}
	res = e.do("DELETE", "/v1/tokens/"+adminID, admin, nil)
	if res.status != 409 || !strings.Contains(res.apiError(t).Message, "last admin") {
		t.Fatalf("delete last admin: %d %s", res.status, res.body)
	}
}

func TestBootstrapToken(t *testing.T) {
	st, err := store.OpenBolt(t.TempDir()+"/state.db", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, _, err := EnsureAdminToken(st, "short", time.Now()); err == nil {
		t.Fatal("a short bootstrap token must be refused")
	}
	secret := "bootstrap-secret-0123456789abcdef"
	got, created, err := EnsureAdminToken(st, secret, time.Now())
	if err != nil || !created || got != secret {
		t.Fatalf("first start: %q %v %v", got, created, err)
	}
	got, created, err = EnsureAdminToken(st, "", time.Now())
	if err != nil || created || got != "" {
		t.Fatalf("second start must not create or reveal a token: %q %v %v", got, created, err)
	}
}

func TestAuditFiltersAndPages(t *testing.T) {
	e := newEnv(t)
	admin := e.tokens[RoleAdmin]
	for i := range 5 {
		e.putLayer("l"+strconv.Itoa(i), "*new", map[string]any{})
	}
	var all AuditPage
	e.do("GET", "/v1/audit", admin, nil).json(t, &all)
	// 1 bootstrap + 3 role tokens + 5 layers.
	if len(all.Entries) != 9 || all.Next != "" {
		t.Fatalf("all: %d entries next %q", len(all.Entries), all.Next)
	}
	// Pages of 2 over the policy changes only, following next.
	var seen []string
	for _, en := range auditPages(t, e, admin, "limit=2&action="+ActionPolicyPut, 5) {
		seen = append(seen, en.Object)
	}
	if strings.Join(seen, ",") != "l0,l1,l2,l3,l4" {
		t.Fatalf("paged policy changes: %v", seen)
	}
	var p AuditPage
	e.do("GET", "/v1/audit?actor=bootstrap", admin, nil).json(t, &p)
	if len(p.Entries) != 1 || p.Entries[0].Action != ActionTokenCreate {
		t.Fatalf("actor filter: %+v", p.Entries)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	e.do("GET", "/v1/audit?since="+future, admin, nil).json(t, &p)
	if len(p.Entries) != 0 {
		t.Fatalf("since the future: %+v", p.Entries)
	}
}

func TestRestartKeepsTokensLayersAudit(t *testing.T) {
	e := newEnv(t)
	e.putLayer("org", "*new", map[string]any{"modules": map[string]string{"risky.rego": denyRiskyModule}})
	a := newAgent(e)
	a.pull()
	before := snapshotState(e)
	keyBefore := a.key

	e.restart()

	for _, r := range Roles {
		if res := e.do("GET", "/v1/policy", e.tokens[r], nil); res.status != 200 {
			t.Fatalf("%s token after restart: %d %s", r, res.status, res.body)
		}
	}
	if after := snapshotState(e); after != before {
		t.Fatalf("state changed across restart:\n%s\n---\n%s", before, after)
	}
	// Same signing key, same ETag for the same policy: the agent's copy is
	// still current.
	if newAgent(e).key != keyBefore {
		t.Fatal("signing key changed across restart")
	}
	if st := a.pull(); st != 304 {
		t.Fatalf("agent after restart: %d, want 304", st)
	}
	if a.decide("risky@corp").Allowed {
		t.Fatal("policy lost")
	}
}

func TestRateLimitPerToken(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.RateLimit, d.RateBurst = 0.001, 3 })
	dev := e.tokens[RoleDeveloper]
	for i := range 3 {
		if res := e.do("GET", "/v1/policy", dev, nil); res.status != 200 {
			t.Fatalf("request %d within burst: %d", i, res.status)
		}
	}
	res := e.do("GET", "/v1/policy", dev, nil)
	if res.status != 429 || res.header.Get("Retry-After") == "" || res.apiError(t).Code != CodeRateLimited {
		t.Fatalf("over the limit: %d %v %s", res.status, res.header, res.body)
	}
	// Another token has its own bucket.
	if res := e.do("GET", "/v1/policy", e.tokens[RoleAgent], nil); res.status != 200 {
		t.Fatalf("other token: %d", res.status)
	}
}

func TestMetricsAndHealth(t *testing.T) {
	e, _ := newCatalogEnv(t)
	e.putLayer("org", "*new", map[string]any{"settings": map[string]any{"enabledPlugins": map[string]bool{"risky@corp": false}}})
	e.do("GET", "/v1/plugins?q=deploy", e.tokens[RoleAgent], nil)
	e.do("GET", "/v1/plugins/corp/risky", e.tokens[RoleAgent], nil)
	e.do("GET", "/v1/plugins/corp/lint", e.tokens[RoleAgent], nil)
	e.do("GET", "/v1/plugins", "", nil)
	for _, p := range []string{"/healthz", "/readyz"} {
		if res := e.do("GET", p, "", nil); res.status != 200 {
			t.Fatalf("%s: %d", p, res.status)
		}
	}
	body := string(e.do("GET", "/metrics", e.tokens[RoleAdmin], nil).body)
	for _, want := range []string{
		`wharf_http_requests_total{code="200",method="GET",route="/v1/plugins"} 1`,
		`wharf_http_requests_total{code="401",method="GET",route="/v1/plugins"} 1`,
		`wharf_http_request_duration_seconds_count{method="GET",route="/v1/plugins/:marketplace/:name"} 2`,
		`wharf_policy_decisions_total{outcome="forced-off"} 1`,
		// lint@corp, and the marketplace add in newCatalogEnv.
		`wharf_policy_decisions_total{outcome="allowed"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestGracefulShutdown(t *testing.T) {
	st, err := store.OpenBolt(t.TempDir()+"/state.db", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := New(Deps{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, 5*time.Second) }()
	url := "http://" + ln.Addr().String()
	res, err := http.Get(url + "/healthz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", res, err)
	}
	res.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve after shutdown: %v", err)
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Fatal("server still answers after shutdown")
	}
}

// A log longer than one read step pages the same with a sparse filter, from
// any cursor: every matching entry once, in order.
func TestAuditPagesAcrossReadSteps(t *testing.T) {
	e := newEnv(t)
	admin := e.tokens[RoleAdmin]
	if err := e.st.Update(func(tx store.Tx) error {
		for i := range 300 {
			action := ActionMarketplaceUpdate
			if i%25 == 0 {
				action = ActionMarketplaceRemove
			}
			if err := audit.Append(tx, AuditEntry{Time: time.Now(), Action: action, Actor: "test", Object: "m" + strconv.Itoa(i)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, en := range auditPages(t, e, admin, "limit=5&action="+ActionMarketplaceRemove, 10) {
		seen = append(seen, en.Object)
	}
	want := []string{}
	for i := 0; i < 300; i += 25 {
		want = append(want, "m"+strconv.Itoa(i))
	}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Fatalf("paged removals: %v, want %v", seen, want)
	}
	// Unfiltered pages of 100 cover the whole log once.
	total := len(auditPages(t, e, admin, "limit=100", 10))
	var all int
	e.st.View(func(r store.Reader) error {
		kvs, _ := r.List(audit.Bucket, "")
		all = len(kvs)
		return nil
	})
	if total != all || all < 300 {
		t.Fatalf("pages held %d entries, the log %d", total, all)
	}
}

// auditPages reads GET /v1/audit?query page by page, following next, and
// returns every entry; more than maxPages pages fails the test.
func auditPages(t *testing.T, e *env, token, query string, maxPages int) []AuditEntry {
	t.Helper()
	var all []AuditEntry
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > maxPages {
			t.Fatal("pagination does not end")
		}
		var p AuditPage
		e.do("GET", "/v1/audit?"+query+"&cursor="+cursor, token, nil).json(t, &p)
		all = append(all, p.Entries...)
		if p.Next == "" {
			return all
		}
		cursor = p.Next
	}
}
