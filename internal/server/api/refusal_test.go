package api

import (
	"net/http"
	"testing"
	"time"
)

// refusals returns the auth.refused entries of the audit log.
func refusals(t *testing.T, e *env) []AuditEntry {
	t.Helper()
	var page AuditPage
	res := e.do("GET", "/v1/audit?limit=1000", e.tokens[RoleAdmin], nil)
	if res.status != http.StatusOK {
		t.Fatalf("audit: %d %s", res.status, res.body)
	}
	res.json(t, &page)
	var out []AuditEntry
	for _, a := range page.Entries {
		if a.Action == ActionAuthRefused {
			out = append(out, a)
		}
	}
	return out
}

func TestRefusalsAreAuditedRateLimited(t *testing.T) {
	ck := newClock()
	e := newEnv(t, func(d *Deps) { d.Now = ck.now })
	const n = 50
	for range n {
		if res := e.do("GET", "/v1/plugins", "wharf_not-a-token", nil); res.status != http.StatusUnauthorized {
			t.Fatalf("unknown token: %d", res.status)
		}
	}
	got := refusals(t, e)
	if len(got) != refusalBurst {
		t.Fatalf("%d refusals from one address wrote %d audit entries; want the burst of %d", n, len(got), refusalBurst)
	}
	a := got[0]
	if a.Actor != "anonymous" || a.Object != "GET /v1/plugins" || a.Detail["status"] != float64(401) || a.Detail["client"] != "127.0.0.1" {
		t.Errorf("entry: %+v", a)
	}
	// A minute later the next refusal is written with the count of those
	// left out.
	ck.advance(time.Minute)
	e.do("GET", "/v1/plugins", "wharf_not-a-token", nil)
	got = refusals(t, e)
	if len(got) != refusalBurst+1 || got[len(got)-1].Detail["suppressed"] != float64(n-refusalBurst) {
		t.Fatalf("after a minute: %d entries, last %+v; want suppressed=%d", len(got), got[len(got)-1], n-refusalBurst)
	}

	// A 403 names the token that was refused, on its own route's budget.
	if res := e.do("GET", "/v1/tokens", e.tokens[RoleDeveloper], nil); res.status != http.StatusForbidden {
		t.Fatalf("developer lists tokens: %d", res.status)
	}
	got = refusals(t, e)
	last := got[len(got)-1]
	if last.Detail["status"] != float64(403) || last.Role != RoleDeveloper || last.Actor == "anonymous" || last.Object != "GET /v1/tokens" {
		t.Fatalf("403 entry: %+v", last)
	}
}
