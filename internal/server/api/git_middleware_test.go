package api

import (
	"net/http"
	"strings"
	"testing"
)

// gitGet fetches the ref advertisement of a channel with the token as the
// basic password ("" for none).
func (e *env) gitGet(name, token string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.hs.URL+"/git/"+name+".git/info/refs?service=git-upload-pack", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.SetBasicAuth("wharf", token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// /git/ spends the token's rate budget like every API route.
func TestGitIsRateLimitedPerToken(t *testing.T) {
	needGit(t)
	// A budget of 10 that does not refill within the test.
	e, _ := newCatalogEnv(t, func(d *Deps) { d.RateLimit, d.RateBurst = 0.001, 10 })
	dev := e.tokens[RoleDeveloper]
	limited := 0
	for range 15 {
		res := e.gitGet("approved", dev)
		switch res.StatusCode {
		case http.StatusOK:
		case http.StatusTooManyRequests:
			limited++
			if res.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		default:
			t.Fatalf("git with a developer token: %d", res.StatusCode)
		}
	}
	if limited != 5 {
		t.Fatalf("15 git requests over a burst of 10: %d refused with 429; want 5", limited)
	}
	// Another token's budget is its own.
	if res := e.gitGet("approved", e.tokens[RoleAgent]); res.StatusCode != http.StatusOK {
		t.Fatalf("agent token after the developer's budget ran out: %d", res.StatusCode)
	}
}

// A refused git request is in the audit log, and git requests are counted
// in the metrics under their route.
func TestGitRefusalsAuditedAndCounted(t *testing.T) {
	needGit(t)
	e, _ := newCatalogEnv(t)
	if res := e.gitGet("approved", ""); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", res.StatusCode)
	}
	if res := e.gitGet("approved", "wharf_not-a-token"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unknown token: %d", res.StatusCode)
	}
	if res := e.gitGet("approved", e.tokens[RoleDeveloper]); res.StatusCode != http.StatusOK {
		t.Fatalf("developer token: %d", res.StatusCode)
	}
	var reasons []string
	for _, a := range refusals(t, e) {
		if a.Object == "GET /git/*" {
			reasons = append(reasons, a.Detail["reason"].(string))
		}
	}
	if len(reasons) != 2 || !strings.HasPrefix(reasons[0], "no token") || reasons[1] != "unknown or revoked token" {
		t.Fatalf("audited git refusals: %q; want the missing and the unknown token", reasons)
	}
	body := string(e.do("GET", "/metrics", e.tokens[RoleAdmin], nil).body)
	for _, want := range []string{
		`wharf_http_requests_total{code="401",method="GET",route="/git/*"} 2`,
		`wharf_http_requests_total{code="200",method="GET",route="/git/*"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
