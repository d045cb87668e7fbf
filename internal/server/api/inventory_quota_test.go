package api

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

// fleetToken creates an agent token that may report machines machines (a
// fleet sharing one token, as an admin sets it up).
func (e *env) fleetToken(machines int) string {
	e.t.Helper()
	res := e.do("POST", "/v1/tokens", e.tokens[RoleAdmin], map[string]any{"role": "agent", "maxMachines": machines})
	if res.status != http.StatusCreated {
		e.t.Fatalf("create fleet token: %d %s", res.status, res.body)
	}
	var out struct {
		Token
		Secret string `json:"token"`
	}
	res.json(e.t, &out)
	if out.MaxMachines != machines {
		e.t.Fatalf("created token's maxMachines = %d, want %d", out.MaxMachines, machines)
	}
	return out.Secret
}

// An agent token reports one machine unless an admin says otherwise; a
// new machine id past the quota is refused with a message saying what to
// do, audited, and stores nothing.
func TestInventoryMachineQuota(t *testing.T) {
	e := newEnv(t)
	agent := e.tokens[RoleAgent]
	mustStatus(t, e.report(agent, invReport(1, invPlugin("a@corp", "1.0.0", fakeDigest("a")))), 200)
	// The same machine, changed: still one machine.
	mustStatus(t, e.report(agent, invReport(1, invPlugin("a@corp", "1.1.0", fakeDigest("a1")))), 200)
	for n := 2; n <= 4; n++ {
		res := e.report(agent, invReport(n, invPlugin("flood@corp", "1.0.0", fakeDigest("f"))))
		mustStatus(t, res, http.StatusForbidden)
		if ae := res.apiError(t); ae.Code != CodeQuotaExceeded || ae.Field != "id" || !strings.Contains(ae.Message, "may report 1 machine") {
			t.Fatalf("machine %d: %+v", n, ae)
		}
	}
	mustStatus(t, e.do("GET", "/v1/inventory/machines/"+machineN(2), e.tokens[RoleAdmin], nil), 404)
	mustStatus(t, e.do("GET", "/v1/inventory/plugins/corp/flood", e.tokens[RoleAdmin], nil), 200)
	var pm PluginMachines
	e.do("GET", "/v1/inventory/plugins/corp/flood", e.tokens[RoleAdmin], nil).json(t, &pm)
	if len(pm.Machines) != 0 {
		t.Fatalf("refused reports reached the index: %+v", pm.Machines)
	}
	audited := 0
	for _, a := range refusals(t, e) {
		if strings.HasPrefix(a.Detail["reason"].(string), "inventory quota") {
			audited++
		}
	}
	if audited != 3 {
		t.Fatalf("%d quota refusals audited, want 3", audited)
	}
	// An admin's fleet token reports as many as it says.
	fleet := e.fleetToken(3)
	for n := 10; n < 13; n++ {
		mustStatus(t, e.report(fleet, invReport(n)), 200)
	}
	mustStatus(t, e.report(fleet, invReport(13)), http.StatusForbidden)
	// The token list shows each token's quota.
	var list []Token
	e.do("GET", "/v1/tokens", e.tokens[RoleAdmin], nil).json(t, &list)
	for _, tok := range list {
		want := tokens.DefaultMachines
		switch {
		case tok.Role == RoleAgent && tok.MaxMachines == 3:
			continue
		case tok.Role == RoleAgent:
			want = 1
		}
		if tok.MaxMachines != want || tok.MaxPlugins != max(inventory.MaxPlugins, want*tokens.DefaultPluginsPerMachine) {
			t.Errorf("token %s (%s): quota %d machines %d plugins", tok.ID, tok.Role, tok.MaxMachines, tok.MaxPlugins)
		}
	}
}

// A token's machines list at most maxPlugins plugin ids together.
func TestInventoryPluginQuota(t *testing.T) {
	e := newEnv(t)
	res := e.do("POST", "/v1/tokens", e.tokens[RoleAdmin], map[string]any{"role": "agent", "maxMachines": 2, "maxPlugins": 3})
	mustStatus(t, res, 201)
	var tok struct {
		Secret string `json:"token"`
	}
	res.json(t, &tok)
	mustStatus(t, e.report(tok.Secret, invReport(1, invPlugin("a@corp", "1", ""), invPlugin("b@corp", "1", ""))), 200)
	res = e.report(tok.Secret, invReport(2, invPlugin("c@corp", "1", ""), invPlugin("d@corp", "1", "")))
	mustStatus(t, res, http.StatusForbidden)
	if ae := res.apiError(t); ae.Code != CodeQuotaExceeded || ae.Field != "plugins" || !strings.Contains(ae.Message, "may report 3 plugin ids") {
		t.Fatalf("plugins over the quota: %+v", ae)
	}
	mustStatus(t, e.report(tok.Secret, invReport(2, invPlugin("c@corp", "1", ""))), 200)
	for _, bad := range []map[string]any{{"role": "agent", "maxMachines": -1}, {"role": "agent", "maxPlugins": tokens.MaxQuotaPlugins + 1}} {
		res := e.do("POST", "/v1/tokens", e.tokens[RoleAdmin], bad)
		mustStatus(t, res, 400)
		if f := res.apiError(t).Field; f != "maxMachines" && f != "maxPlugins" {
			t.Fatalf("bad quota %v: field %q", bad, f)
		}
	}
}

// GET /v1/inventory/plugins and the fleet console page come in pages:
// following next visits every plugin once; a bad cursor is a 400.
func TestInventoryPluginsPaged(t *testing.T) {
	e := newEnv(t)
	fleet := e.fleetToken(1)
	var ps []inventory.Plugin
	for i := range 250 {
		ps = append(ps, invPlugin(fmt.Sprintf("p%03d@corp", i), "1.0.0", ""))
	}
	mustStatus(t, e.report(fleet, invReport(1, ps...)), 200)

	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		q := url.Values{"limit": {"100"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		res := e.do("GET", "/v1/inventory/plugins?"+q.Encode(), e.tokens[RoleCI], nil)
		mustStatus(t, res, 200)
		var page PluginInventoryList
		res.json(t, &page)
		if len(page.Plugins) > 100 {
			t.Fatalf("a page of %d with limit 100", len(page.Plugins))
		}
		for _, p := range page.Plugins {
			if seen[p.Plugin] {
				t.Fatalf("%s on two pages", p.Plugin)
			}
			seen[p.Plugin] = true
		}
		pages++
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	if len(seen) != 250 || pages != 3 {
		t.Fatalf("%d plugins in %d pages; want 250 in 3", len(seen), pages)
	}
	// Without a limit, the default page.
	var first PluginInventoryList
	e.do("GET", "/v1/inventory/plugins", e.tokens[RoleCI], nil).json(t, &first)
	if len(first.Plugins) != defaultPageSize || first.Next == "" {
		t.Fatalf("default page: %d plugins, next %q", len(first.Plugins), first.Next)
	}
	for _, bad := range []string{"cursor=nope", "cursor=" + url.QueryEscape("a b@corp"), "limit=0", "limit=100000"} {
		res := e.do("GET", "/v1/inventory/plugins?"+bad, e.tokens[RoleCI], nil)
		mustStatus(t, res, 400)
	}

	// The console's fleet page: a page of rows and a link to the next.
	u := signedIn(t, e, RoleAdmin)
	p := u.get("/ui/fleet")
	if n := strings.Count(p.body, "<tr data-plugin="); n != defaultPageSize {
		t.Fatalf("fleet page: %d rows, want %d", n, defaultPageSize)
	}
	next := regexpFind(t, p.body, `href="(/ui/fleet\?cursor=[^"]+)" rel="next"`)
	p = u.get(strings.ReplaceAll(next, "&amp;", "&"))
	if p.status != 200 || strings.Count(p.body, "<tr data-plugin=") != defaultPageSize || strings.Contains(p.body, `data-plugin="p000@corp"`) {
		t.Fatalf("second fleet page: %d", p.status)
	}
	if p := u.get("/ui/fleet?cursor=%20"); p.status != 400 {
		t.Fatalf("fleet page with a bad cursor: %d", p.status)
	}
}

// regexpFind returns the first group of re in s.
func regexpFind(t *testing.T, s, re string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in the page", re)
	}
	return m[1]
}
