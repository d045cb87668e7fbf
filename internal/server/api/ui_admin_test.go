package api

import (
	"net/http"
	"net/url"
	"testing"
)

// The admin forms of the marketplaces, tokens and layers pages refuse
// every other role and any form without the session's CSRF token, and
// change nothing when they refuse.
func TestConsoleAdminFormsRefuse(t *testing.T) {
	e := newDemoEnv(t)
	mustStatus(t, e.do("PUT", "/v1/policy/layers/org", e.tokens[RoleAdmin], `{"rank": 10, "settings": {}}`, "If-None-Match: *"), 201)
	victim := e.createToken(RoleCI)
	var toks []Token
	e.do("GET", "/v1/tokens", e.tokens[RoleAdmin], nil).json(t, &toks)
	victimID := ""
	for _, tk := range toks {
		if tk.Role == RoleCI {
			victimID = tk.ID
		}
	}
	forms := map[string]url.Values{
		"/ui/admin/marketplaces":                   {"name": {"evil"}, "source": {"/tmp"}},
		"/ui/admin/marketplaces/demo/refresh":      {},
		"/ui/admin/marketplaces/demo/remove":       {},
		"/ui/admin/tokens":                         {"role": {"admin"}, "note": {"backdoor"}},
		"/ui/admin/tokens/" + victimID + "/revoke": {},
		"/ui/admin/policy/layers/org/restore":      {"seq": {"1"}, "version": {"1"}},
		"/ui/admin/policy/layers/org/delete":       {"version": {"1"}},
	}
	check := func(who string, u *uiClient, csrf *string) {
		t.Helper()
		for path, f := range forms {
			form := url.Values{}
			for k, v := range f {
				form[k] = v
			}
			if csrf != nil {
				form.Set("csrf", *csrf)
			}
			if p := u.post(path, form); p.status != http.StatusForbidden {
				t.Errorf("%s POST %s: %d", who, path, p.status)
			}
		}
	}
	for _, r := range []Role{RoleDeveloper, RoleCI, RoleAgent} {
		check(string(r), signedIn(t, e, r), nil)
	}
	admin := signedIn(t, e, RoleAdmin)
	for _, tok := range []string{"", "0123456789abcdef0123456789abcdef"} {
		check("admin with csrf "+tok, admin, &tok)
	}
	// Nothing changed.
	var ms []Marketplace
	e.do("GET", "/v1/marketplaces", e.tokens[RoleAdmin], nil).json(t, &ms)
	if len(ms) != 1 || ms[0].Name != "demo" {
		t.Errorf("marketplaces %+v", ms)
	}
	var after []Token
	e.do("GET", "/v1/tokens", e.tokens[RoleAdmin], nil).json(t, &after)
	for _, tk := range after {
		if tk.Note == "backdoor" {
			t.Error("a refused form created a token")
		}
	}
	if res := e.do("GET", "/v1/policy", victim, nil); res.status != http.StatusOK {
		t.Errorf("the ci token was revoked by a refused form: %d", res.status)
	}
	var org Layer
	e.do("GET", "/v1/policy/layers/org", e.tokens[RoleAdmin], nil).json(t, &org)
	if org.Version != 1 {
		t.Errorf("org is at version %d", org.Version)
	}
}
