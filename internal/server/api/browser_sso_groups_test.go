package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Single sign-on and group targeting together, with the groups coming
// from the provider's claims only: ada (platform-admins) signs in with
// `wharf login`'s device flow and, as admin, adds the marketplace, a
// channel for data-team, one for web and a layer for data-team that
// denies risky@corp. In Chromium ada lands as admin and sees both
// channels; bo (data-team) lands as developer, sees data-team's channel
// and not web's, and is shown risky@corp blocked by the data-team layer.
// The tokens bo's sign-ins made (the console session's and wharf
// login's) carry data-team from the ID token, and their bundles deny
// risky@corp; ada's and the organization's admin token's bundles allow
// it.
func TestBrowserSignInGroupsTargetPolicyAndChannels(t *testing.T) {
	e := newSSOEnv(t)
	ada := e.deviceLogin(t, "ada")
	if ada.Role != RoleAdmin || !slices.Equal(ada.Groups, []string{"platform-admins"}) {
		t.Fatalf("ada's login: %+v", ada)
	}
	send := func(method, path, body string, want int, hdr ...string) {
		t.Helper()
		req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+ada.Secret)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("ada %s %s: %d, want %d", method, path, resp.StatusCode, want)
		}
	}
	mkt, _ := json.Marshal(map[string]any{"name": "corp", "source": map[string]string{"source": "directory", "path": e.fx.root}})
	send(http.MethodPost, "/v1/marketplaces", string(mkt), http.StatusCreated)
	send(http.MethodPost, "/v1/channels", `{"name": "data-tools", "target": {"groups": ["data-team"]}}`, http.StatusCreated)
	send(http.MethodPost, "/v1/channels", `{"name": "web-tools", "target": {"groups": ["web"]}}`, http.StatusCreated)
	layer, _ := json.Marshal(map[string]any{"rank": 10, "target": map[string]any{"groups": []string{"data-team"}},
		"modules": map[string]string{"risky.rego": denyRiskyForData}})
	send(http.MethodPut, "/v1/policy/layers/data", string(layer), http.StatusCreated, "If-None-Match", "*")

	b := newBrowser(t, e.url)
	channels := func() []string {
		b.open("/ui/channels", "table.channels")
		return evalJS[[]string](b, `[...document.querySelectorAll("tr[data-channel]")].map(r => r.dataset.channel)`)
	}
	decision := func(id string) (string, string) {
		b.open("/ui/plugins/corp/"+id, ".badge")
		return evalJS[string](b, `document.querySelector(".badge").dataset.decision`), b.text("main")
	}

	b.ssoSignIn("ada")
	if who := b.text(".signout .who"); !strings.Contains(who, "ada@example.com") || !strings.Contains(who, "admin") {
		t.Fatalf("ada is signed in as %q", who)
	}
	if got := channels(); !slices.Contains(got, "data-tools") || !slices.Contains(got, "web-tools") {
		t.Fatalf("the admin's channels page lists %v", got)
	}
	if label, _ := decision("risky"); label != "allowed" {
		t.Fatalf("ada (not in data-team) is shown risky@corp %q", label)
	}
	b.signOutTo("#sso")

	b.ssoSignIn("bo")
	if who := b.text(".signout .who"); !strings.Contains(who, "bo@example.com") || !strings.Contains(who, "developer") {
		t.Fatalf("bo is signed in as %q", who)
	}
	if got := channels(); !slices.Contains(got, "data-tools") || slices.Contains(got, "web-tools") {
		t.Fatalf("bo's channels page lists %v; want data-tools and not web-tools", got)
	}
	b.screenshot("sso-data-team-channels")
	b.do("open web's channel by URL", chromedp.Navigate(e.url+"/ui/channels/web-tools"), chromedp.WaitVisible(chromedp.CSS("main")))
	if body := b.text("main"); strings.Contains(body, "web-tools.git") || !strings.Contains(body, `channel not found: "web-tools"`) {
		t.Fatalf("bo on web's channel page sees: %s", body)
	}
	label, page := decision("risky")
	if label != "blocked" || !strings.Contains(page, "not for the data team") {
		t.Fatalf("bo is shown risky@corp %q:\n%s", label, page)
	}
	b.screenshot("sso-data-team-blocked")
	if label, _ := decision("lint"); label != "allowed" {
		t.Fatalf("bo is shown lint@corp %q", label)
	}

	// The console session's token: data-team from the ID token, and the
	// bundle it would pull denies risky@corp.
	tokID := strings.Trim(b.text(".signout .who .muted"), "()")
	rec, err := e.srv.lookupTokenByID(tokID)
	if err != nil {
		t.Fatalf("bo's console token %q: %v", tokID, err)
	}
	if !slices.Equal(rec.Identity.Groups, []string{"data-team"}) || rec.Identity.Email != "bo@example.com" || rec.Identity.Subject != "bo" {
		t.Fatalf("bo's console token carries %+v", rec.Identity)
	}
	bun, err := e.srv.pol.Bundle(t.Context(), rec.Identity)
	if err != nil {
		t.Fatal(err)
	}
	consoleBundle, err := ReadBundle(bytes.NewReader(bun.Body), BundleKey{KeyID: e.srv.pol.KeyID(), Algorithm: BundleAlgorithm, PublicKey: e.srv.pol.PublicKeyPEM()})
	if err != nil {
		t.Fatal(err)
	}
	if d := offline(t, consoleBundle, "risky@corp"); d.Allowed {
		t.Fatalf("the bundle of bo's console token allows risky@corp: %+v", d)
	}

	// bo's wharf login: the same groups, the same refusal, over HTTP.
	bo := e.deviceLogin(t, "bo")
	if bo.Role != RoleDeveloper || !slices.Equal(bo.Groups, []string{"data-team"}) {
		t.Fatalf("bo's login: %+v", bo)
	}
	if d := offline(t, e.bundleOver(t, bo.Secret), "risky@corp"); d.Allowed || len(d.Reasons) == 0 || d.Reasons[0].Layer != "data" {
		t.Fatalf("the bundle of bo's wharf login allows risky@corp: %+v", d)
	}
	if d := offline(t, e.bundleOver(t, bo.Secret), "lint@corp"); !d.Allowed {
		t.Fatalf("the bundle of bo's wharf login refuses lint@corp: %+v", d)
	}
	var res ResolveResult
	call(t, http.MethodPost, e.url+"/v1/resolve", bo.Secret, `{"plugins": ["risky@corp"]}`, http.StatusOK, &res)
	if res.Allowed {
		t.Fatalf("the server resolves risky@corp as allowed for bo: %+v", res)
	}
	var list []ChannelSummary
	call(t, http.MethodGet, e.url+"/v1/channels", bo.Secret, "", http.StatusOK, &list)
	var names []string
	for _, c := range list {
		names = append(names, c.Name)
	}
	if !slices.Contains(names, "data-tools") || slices.Contains(names, "web-tools") {
		t.Fatalf("bo's login lists channels %v", names)
	}
	call(t, http.MethodGet, e.url+"/v1/channels/web-tools", bo.Secret, "", http.StatusNotFound, nil)

	// Everyone else: ada's login and the organization's admin token.
	for who, tok := range map[string]string{"ada's login": ada.Secret, "the admin token": e.admin} {
		if d := offline(t, e.bundleOver(t, tok), "risky@corp"); !d.Allowed {
			t.Fatalf("the bundle of %s refuses risky@corp: %+v", who, d)
		}
	}
	call(t, http.MethodPost, e.url+"/v1/resolve", ada.Secret, `{"plugins": ["risky@corp"]}`, http.StatusOK, &res)
	if !res.Allowed {
		t.Fatalf("the server resolves risky@corp as refused for ada: %+v", res)
	}
}
