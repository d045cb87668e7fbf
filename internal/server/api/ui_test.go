package api

import (
	"encoding/json"
	"html/template"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/server/catalog"
	"github.com/wharfhq/wharf/plugin"
)

// demoMarketplaceDir is the demo marketplace that wharf-server registers
// on first start.
func demoMarketplaceDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "demo-marketplace"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// newDemoEnv is a real server on 127.0.0.1 over a real bbolt file, with the
// real marketplace manager and the demo marketplace registered as `wharf
// serve` does on first start (a directory source under the name its
// marketplace.json declares).
func newDemoEnv(t testing.TB) *env {
	t.Helper()
	dataDir := t.TempDir()
	e := newEnv(t, func(d *Deps) {
		mgr := marketplace.NewManager(d.Store, marketplace.Options{Dir: filepath.Join(dataDir, "marketplaces")})
		d.Catalog = catalog.New(mgr)
		d.Verifier = TrustVerifier{}
	})
	dir := demoMarketplaceDir(t)
	m, _, err := plugin.ReadMarketplace(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "demo" {
		t.Fatalf("the demo marketplace is called %q; these tests expect demo", m.Name)
	}
	res := e.do("POST", "/v1/marketplaces", e.tokens[RoleAdmin], map[string]any{
		"name": m.Name, "source": map[string]string{"source": "directory", "path": dir}})
	if res.status != http.StatusCreated {
		t.Fatalf("add demo marketplace: %d %s", res.status, res.body)
	}
	return e
}

// uiClient is a browser stand-in: a cookie jar and no automatic redirects.
type uiClient struct {
	t    testing.TB
	base string
	c    *http.Client
	csrf string
}

type page struct {
	status   int
	location string
	header   http.Header
	body     string
}

func newUIClient(t testing.TB, base string) *uiClient {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &uiClient{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func (u *uiClient) send(req *http.Request) page {
	u.t.Helper()
	res, err := u.c.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		u.t.Fatal(err)
	}
	p := page{status: res.StatusCode, location: res.Header.Get("Location"), header: res.Header, body: string(raw)}
	if m := csrfRE.FindStringSubmatch(p.body); m != nil {
		u.csrf = m[1]
	}
	return p
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]*)"`)

func (u *uiClient) get(path string) page {
	u.t.Helper()
	req, err := http.NewRequest("GET", u.base+path, nil)
	if err != nil {
		u.t.Fatal(err)
	}
	return u.send(req)
}

// post submits a form; the CSRF field of the last page is added unless
// form sets it.
func (u *uiClient) post(path string, form url.Values) page {
	u.t.Helper()
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", u.csrf)
	}
	req, err := http.NewRequest("POST", u.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		u.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return u.send(req)
}

// signIn signs in with token through the form.
func (u *uiClient) signIn(token string) {
	u.t.Helper()
	if p := u.get("/ui/signin"); p.status != http.StatusOK {
		u.t.Fatalf("GET /ui/signin: %d", p.status)
	}
	p := u.post("/ui/signin", url.Values{"token": {token}, "next": {"/ui/"}})
	if p.status != http.StatusSeeOther || p.location != "/ui/" {
		u.t.Fatalf("sign in: %d to %q: %s", p.status, p.location, p.body)
	}
	u.get("/ui/") // picks up the session's CSRF token
}

func signedIn(t testing.TB, e *env, role Role) *uiClient {
	u := newUIClient(t, e.hs.URL)
	u.signIn(e.tokens[role])
	return u
}

func mustContain(t testing.TB, what string, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s: missing %q", what, w)
		}
	}
}

func TestConsolePagesRenderDemoData(t *testing.T) {
	e := newDemoEnv(t)
	u := signedIn(t, e, RoleAdmin)
	// One layer, so the policy list and the editor show a stored layer.
	if res := e.putLayer("org", "*new", map[string]any{"settings": map[string]any{"enabledPlugins": map[string]bool{"core-utils@demo": true}}, "rank": 10}); res.status != http.StatusCreated {
		t.Fatalf("put layer: %d %s", res.status, res.body)
	}
	cases := []struct {
		path  string
		wants []string
	}{
		{"/ui/", []string{"<h1>Plugin catalog</h1>", "6 matching plugins", "app-deploy", "v3.0.0", "meeting-notes", `value="demo"`, `value="security"`, `value="mcp"`, "forced on"}},
		{"/ui/?q=deploy", []string{"1 matching plugin", `data-plugin="app-deploy@demo"`}},
		{"/ui/?category=productivity", []string{"1 matching plugin", "meeting-notes"}},
		{"/ui/?tag=hooks", []string{"1 matching plugin", "secrets-vault"}},
		{"/ui/plugins/demo/app-deploy", []string{"<h1>app-deploy", "Deploy the application", "app-deploy:deploy", "app-deploy:rollout",
			`<svg id="dep-graph"`, `data-id="ci-runner@demo" data-depth="1"`, `data-id="secrets-vault@demo" data-depth="1"`, `data-id="core-utils@demo" data-depth="2"`,
			`data-from="ci-runner@demo" data-to="core-utils@demo"`, "unsigned", "allowed"}},
		{"/ui/plugins/demo/ci-runner", []string{"plugin:ci-runner:ci-logs", "ci-runner:ci-status", "ci-runner:ci-fixer", "MCP servers"}},
		{"/ui/plugins/demo/meeting-notes", []string{"meeting-notes:notes", "meeting-notes:action-items", "This plugin depends on no other plugin."}},
		{"/ui/admin/policy", []string{"<h1>Policy layers</h1>", `href="/ui/admin/policy/layers/org"`, "enabledPlugins"}},
		{"/ui/admin/policy/layers/org", []string{"Layer org", "Version 1, rank 10", "core-utils@demo", `id="settings"`}},
		{"/ui/admin/policy/layers/team", []string{"New layer team", "saving creates it", `id="rank"`}},
		{"/ui/admin/audit", []string{"<h1>Audit log</h1>", "marketplace.add", "policy.layer.put"}},
		{"/ui/admin/audit?action=policy.layer.put", []string{"policy.layer.put", `value="policy.layer.put" selected`}},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			p := u.get(c.path)
			if p.status != http.StatusOK {
				t.Fatalf("GET %s: %d\n%s", c.path, p.status, p.body)
			}
			if ct := p.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
				t.Errorf("Content-Type %q", ct)
			}
			if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
			mustContain(t, c.path, p.body, c.wants...)
			mustContain(t, c.path, p.body, `<a class="skip" href="#main">`, `<main id="main"`, "<h1>", `href="/ui/static/style.css"`)
		})
	}
	p := u.get("/ui/admin/audit?action=marketplace.add")
	if strings.Contains(p.body, `data-action="policy.layer.put"`) {
		t.Error("audit filter by action shows other actions")
	}
	css := u.get("/ui/static/style.css")
	if css.status != http.StatusOK || !strings.Contains(css.body, "prefers-color-scheme: dark") {
		t.Errorf("style.css: %d", css.status)
	}
}

func TestConsoleEveryLabelHasAnInput(t *testing.T) {
	e := newDemoEnv(t)
	u := signedIn(t, e, RoleAdmin)
	labelRE := regexp.MustCompile(`<label for="([^"]+)"`)
	controlRE := regexp.MustCompile(`<(input|select|textarea)\b[^>]*>`)
	idRE := regexp.MustCompile(`\bid="([^"]+)"`)
	typeRE := regexp.MustCompile(`\btype="([^"]+)"`)
	for _, path := range []string{"/ui/", "/ui/admin/policy", "/ui/admin/policy/layers/org", "/ui/admin/audit"} {
		body := u.get(path).body
		labels := map[string]bool{}
		for _, m := range labelRE.FindAllStringSubmatch(body, -1) {
			labels[m[1]] = true
		}
		for _, ctl := range controlRE.FindAllString(body, -1) {
			if m := typeRE.FindStringSubmatch(ctl); m != nil && m[1] == "hidden" {
				continue
			}
			id := idRE.FindStringSubmatch(ctl)
			if id == nil || !labels[id[1]] {
				t.Errorf("%s: control without a label: %s", path, ctl)
			}
		}
	}
}

func TestConsoleSignIn(t *testing.T) {
	e := newDemoEnv(t)
	u := newUIClient(t, e.hs.URL)

	p := u.get("/ui/plugins/demo/lint-kit")
	if p.status != http.StatusSeeOther || p.location != "/ui/signin?next=%2Fui%2Fplugins%2Fdemo%2Flint-kit" {
		t.Fatalf("unauthenticated page: %d to %q", p.status, p.location)
	}
	if p := u.get("/"); p.status != http.StatusFound || p.location != "/ui/" {
		t.Errorf("GET /: %d to %q", p.status, p.location)
	}
	u.get("/ui/signin")
	if p := u.post("/ui/signin", url.Values{"token": {"wharf_not-a-token"}}); p.status != http.StatusUnauthorized || !strings.Contains(p.body, "unknown or was revoked") {
		t.Errorf("unknown token: %d %s", p.status, p.body)
	}
	// A form posted without the sign-in form's value (another site's form).
	if p := u.post("/ui/signin", url.Values{"token": {e.tokens[RoleDeveloper]}, "csrf": {"forged"}}); p.status != http.StatusForbidden || !strings.Contains(p.body, "did not come from this site") {
		t.Errorf("forged sign-in: %d", p.status)
	}
	u.get("/ui/signin")
	p = u.post("/ui/signin", url.Values{"token": {e.tokens[RoleDeveloper]}, "next": {"/ui/plugins/demo/lint-kit"}})
	if p.status != http.StatusSeeOther || p.location != "/ui/plugins/demo/lint-kit" {
		t.Fatalf("sign in: %d to %q", p.status, p.location)
	}
	var session *http.Cookie
	for _, line := range p.header.Values("Set-Cookie") {
		ck, err := http.ParseSetCookie(line)
		if err == nil && ck.Name == sessionCookie {
			session = ck
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/ui" {
		t.Fatalf("session cookie: %+v", session)
	}
	p = u.get("/ui/plugins/demo/lint-kit")
	mustContain(t, "detail", p.body, "Signed in as <strong>developer</strong>", "lint-kit:lint")
	// A redirect target off the console is ignored.
	u2 := newUIClient(t, e.hs.URL)
	u2.get("/ui/signin")
	if p := u2.post("/ui/signin", url.Values{"token": {e.tokens[RoleDeveloper]}, "next": {"//evil.example/"}}); p.location != "/ui/" {
		t.Errorf("next //evil.example/ redirected to %q", p.location)
	}

	if p := u.post("/ui/signout", url.Values{}); p.status != http.StatusSeeOther || p.location != "/ui/signin" {
		t.Fatalf("sign out: %d to %q", p.status, p.location)
	}
	if p := u.get("/ui/"); p.status != http.StatusSeeOther {
		t.Errorf("after sign-out: %d", p.status)
	}
}

func TestConsoleRevokedTokenEndsSession(t *testing.T) {
	e := newDemoEnv(t)
	u := signedIn(t, e, RoleDeveloper)
	var list []Token
	e.do("GET", "/v1/tokens", e.tokens[RoleAdmin], nil).json(t, &list)
	for _, tok := range list {
		if tok.Role == RoleDeveloper {
			if res := e.do("DELETE", "/v1/tokens/"+tok.ID, e.tokens[RoleAdmin], nil); res.status != http.StatusNoContent {
				t.Fatalf("revoke: %d %s", res.status, res.body)
			}
		}
	}
	if p := u.get("/ui/"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, "/ui/signin") {
		t.Errorf("revoked session: %d to %q", p.status, p.location)
	}
}

func TestConsoleAdminPagesRefuseOtherRoles(t *testing.T) {
	e := newDemoEnv(t)
	for _, r := range []Role{RoleDeveloper, RoleCI, RoleAgent} {
		u := signedIn(t, e, r)
		for _, path := range []string{"/ui/admin/policy", "/ui/admin/policy/layers/org", "/ui/admin/audit"} {
			p := u.get(path)
			if p.status != http.StatusForbidden {
				t.Errorf("%s GET %s: %d", r, path, p.status)
			}
			mustContain(t, string(r)+" "+path, p.body, "<h1>Not allowed</h1>", "for the admin role", "signed in with a "+string(r)+" token")
		}
		p := u.post("/ui/admin/policy/layers/org/save", url.Values{"version": {"0"}, "rank": {"10"}, "settings": {`{"blockedMarketplaces": ["*"]}`}})
		if p.status != http.StatusForbidden {
			t.Errorf("%s save: %d", r, p.status)
		}
		if strings.Contains(u.get("/ui/").body, `href="/ui/admin/policy"`) {
			t.Errorf("%s sees the admin navigation", r)
		}
	}
	var ep EffectivePolicy
	e.do("GET", "/v1/policy", e.tokens[RoleAdmin], nil).json(t, &ep)
	if len(ep.Layers) != 0 {
		t.Fatalf("a non-admin wrote a layer: %+v", ep.Layers)
	}
}

func TestConsoleRefusesFormsWithoutCSRF(t *testing.T) {
	e := newDemoEnv(t)
	u := signedIn(t, e, RoleAdmin)
	form := url.Values{"version": {"0"}, "rank": {"10"}, "settings": {`{"blockedMarketplaces": ["*"]}`}}
	for _, tok := range []string{"", "0123456789abcdef0123456789abcdef"} {
		form.Set("csrf", tok)
		p := u.post("/ui/admin/policy/layers/org/save", form)
		if p.status != http.StatusForbidden || !strings.Contains(p.body, "CSRF") {
			t.Errorf("csrf %q: %d", tok, p.status)
		}
	}
	// The token of another session does not fit this one.
	other := newUIClient(t, e.hs.URL)
	other.signIn(e.createToken(RoleAdmin))
	form.Set("csrf", other.csrf)
	if p := u.post("/ui/admin/policy/layers/org/save", form); p.status != http.StatusForbidden {
		t.Errorf("another session's csrf: %d", p.status)
	}
	var ep EffectivePolicy
	e.do("GET", "/v1/policy", e.tokens[RoleAdmin], nil).json(t, &ep)
	if len(ep.Layers) != 0 {
		t.Fatalf("a forged form wrote a layer: %+v", ep.Layers)
	}
}

// blockDemo blocks the demo marketplace by its directory path.
const blockDemo = `{"blockedMarketplaces": [{"source": "pathPattern", "pathPattern": "demo-marketplace$"}]}`

func TestConsoleImpactPreviewThenSave(t *testing.T) {
	e := newDemoEnv(t)
	u := signedIn(t, e, RoleAdmin)
	u.get("/ui/admin/policy/layers/org")
	form := url.Values{"version": {"0"}, "rank": {"10"}, "settings": {blockDemo}}
	p := u.post("/ui/admin/policy/layers/org/preview", form)
	if p.status != http.StatusOK {
		t.Fatalf("preview: %d %s", p.status, p.body)
	}
	mustContain(t, "preview", p.body, "6 of 6 catalog plugins would change decision", `id="save"`)
	for _, id := range []string{"app-deploy@demo", "ci-runner@demo", "core-utils@demo", "lint-kit@demo", "meeting-notes@demo", "secrets-vault@demo"} {
		mustContain(t, "preview", p.body, `<tr data-plugin="`+id+`">`)
	}
	mustContain(t, "preview", p.body, "org/blockedMarketplaces")
	// The preview wrote nothing.
	var ep EffectivePolicy
	e.do("GET", "/v1/policy", e.tokens[RoleAdmin], nil).json(t, &ep)
	if len(ep.Layers) != 0 {
		t.Fatalf("preview saved: %+v", ep.Layers)
	}
	if strings.Contains(u.get("/ui/").body, ">blocked<") {
		t.Fatal("catalog shows a block before saving")
	}

	p = u.post("/ui/admin/policy/layers/org/save", form)
	if p.status != http.StatusSeeOther || p.location != "/ui/admin/policy/layers/org?saved=1" {
		t.Fatalf("save: %d to %q: %s", p.status, p.location, p.body)
	}
	mustContain(t, "after save", u.get(p.location).body, "Saved. The layer is now at version 1.")
	e.do("GET", "/v1/policy", e.tokens[RoleAdmin], nil).json(t, &ep)
	if len(ep.Layers) != 1 || ep.Layers[0].Name != "org" || ep.Layers[0].Rank != 10 || !strings.Contains(string(ep.Layers[0].Settings), "demo-marketplace$") {
		t.Fatalf("saved policy: %+v", ep.Layers)
	}
	cat := u.get("/ui/?decision=blocked")
	mustContain(t, "catalog", cat.body, "6 matching plugins", `data-decision="blocked"`)
	if n := strings.Count(cat.body, `data-decision="blocked"`); n != 6 {
		t.Errorf("%d plugins shown blocked, want 6", n)
	}
	mustContain(t, "allowed filter", u.get("/ui/?decision=allowed").body, "No matching plugins")
	mustContain(t, "detail", u.get("/ui/plugins/demo/lint-kit").body, `<strong>org</strong> / <code>blockedMarketplaces</code>`)
	// The save went through the API: history and audit name the admin.
	var page AuditPage
	e.do("GET", "/v1/audit?action=policy.layer.put", e.tokens[RoleAdmin], nil).json(t, &page)
	if len(page.Entries) != 1 || page.Entries[0].Object != "org" || page.Entries[0].Role != RoleAdmin {
		t.Fatalf("audit: %+v", page.Entries)
	}
	// Opening a blocked plugin's page is a denied decision, audited like the API's.
	e.do("GET", "/v1/audit?action=decision.deny", e.tokens[RoleAdmin], nil).json(t, &page)
	if len(page.Entries) != 1 || page.Entries[0].Object != "lint-kit@demo" {
		t.Fatalf("denials audited: %+v", page.Entries)
	}
}

func TestConsoleImpactShowsForcedStates(t *testing.T) {
	e := newDemoEnv(t)
	u := signedIn(t, e, RoleAdmin)
	u.get("/ui/admin/policy/layers/org")
	p := u.post("/ui/admin/policy/layers/org/preview", url.Values{"version": {"0"}, "rank": {"10"},
		"settings": {`{"enabledPlugins": {"lint-kit@demo": false, "core-utils@demo": true}}`}})
	if p.status != http.StatusOK {
		t.Fatalf("preview: %d %s", p.status, p.body)
	}
	mustContain(t, "preview", p.body, "2 of 6 catalog plugins would change decision", "forced off", "forced on",
		`<tr data-plugin="lint-kit@demo">`, `<tr data-plugin="core-utils@demo">`)
	if strings.Contains(p.body, `<tr data-plugin="app-deploy@demo">`) {
		t.Error("an unchanged plugin is listed")
	}
}

func TestConsoleSaveWithStaleVersionShowsConflict(t *testing.T) {
	e := newDemoEnv(t)
	if res := e.putLayer("org", "*new", map[string]any{"settings": map[string]any{}}); res.status != http.StatusCreated {
		t.Fatalf("put: %d %s", res.status, res.body)
	}
	u := signedIn(t, e, RoleAdmin)
	u.get("/ui/admin/policy/layers/org")
	form := url.Values{"version": {"1"}, "rank": {"100"}, "settings": {blockDemo}}
	if p := u.post("/ui/admin/policy/layers/org/preview", form); p.status != http.StatusOK {
		t.Fatalf("preview: %d %s", p.status, p.body)
	}
	// Another admin changes the layer meanwhile.
	if res := e.putLayer("org", `"1"`, map[string]any{"settings": map[string]any{"disableSideloadFlags": true}}); res.status != http.StatusOK {
		t.Fatalf("concurrent put: %d %s", res.status, res.body)
	}
	p := u.post("/ui/admin/policy/layers/org/save", form)
	if p.status != http.StatusConflict {
		t.Fatalf("stale save: %d %s", p.status, p.body)
	}
	mustContain(t, "conflict", p.body, `id="conflict"`, "the layer is at version 2, not the one you sent")
	var l Layer
	e.do("GET", "/v1/policy/layers/org", e.tokens[RoleAdmin], nil).json(t, &l)
	if l.Version != 2 || strings.Contains(string(l.Settings), "blocked") {
		t.Fatalf("stale save overwrote: %+v", l)
	}
}

func TestConsoleEditorValidation(t *testing.T) {
	e := newDemoEnv(t)
	u := signedIn(t, e, RoleAdmin)
	u.get("/ui/admin/policy/layers/org")
	cases := []struct {
		name, settings, rank string
		status               int
		want                 string
	}{
		{"syntax", "{\n  \"blockedMarketplaces\": [\n}", "10", 422, "line 3, column 1"},
		{"not an object", `["x"]`, "10", 422, "settings must be a JSON object"},
		{"trailing data", `{} {}`, "10", 422, "exactly one JSON object"},
		{"rank", `{}`, "-5", 422, "rank -5 must be between 0 and 1000000"},
		{"rank text", `{}`, "high", 422, "rank &#34;high&#34; is not a whole number"},
		{"unknown key warns", `{"blockedMarketplace": []}`, "10", 200, "blockedMarketplace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := u.post("/ui/admin/policy/layers/org/preview", url.Values{"version": {"0"}, "rank": {c.rank}, "settings": {c.settings}})
			if p.status != c.status {
				t.Fatalf("status %d, want %d: %s", p.status, c.status, p.body)
			}
			mustContain(t, c.name, p.body, c.want)
			if c.status != 200 {
				mustContain(t, c.name, p.body, `id="errors"`, `aria-invalid="true"`)
				if strings.Contains(p.body, `id="save"`) {
					t.Error("invalid settings offer a save button")
				}
				// The text typed is kept for fixing.
				mustContain(t, c.name, p.body, strings.ReplaceAll(c.settings, `"`, "&#34;"))
			} else {
				mustContain(t, c.name, p.body, `id="warnings"`)
			}
		})
	}
	if p := u.get("/ui/admin/policy/edit?layer=Bad-Name"); p.status != http.StatusBadRequest {
		t.Errorf("bad layer name: %d", p.status)
	}
	if p := u.get("/ui/admin/policy/edit?layer=team_web"); p.status != http.StatusSeeOther || p.location != "/ui/admin/policy/layers/team_web" {
		t.Errorf("new layer: %d to %q", p.status, p.location)
	}
}

func TestConsoleErrorPages(t *testing.T) {
	e := newDemoEnv(t)
	u := signedIn(t, e, RoleDeveloper)
	cases := []struct {
		path   string
		status int
		want   string
	}{
		{"/ui/plugins/demo/no-such-plugin", 404, "no-such-plugin"},
		{"/ui/plugins/nowhere/lint-kit", 404, "nowhere"},
		{"/ui/no/such/page", 404, "There is no console page at /ui/no/such/page."},
		{"/ui/?decision=maybe", 400, "decision &#34;maybe&#34; must be allowed or blocked"},
	}
	for _, c := range cases {
		p := u.get(c.path)
		if p.status != c.status || !strings.HasPrefix(p.header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: %d %s", c.path, p.status, p.header.Get("Content-Type"))
		}
		mustContain(t, c.path, p.body, c.want, "<h1>")
	}
	// The API under /v1 still answers JSON.
	res := e.do("GET", "/v1/plugins/demo/nope", e.tokens[RoleDeveloper], nil)
	var w struct {
		Error APIError `json:"error"`
	}
	if json.Unmarshal(res.body, &w) != nil || w.Error.Status != 404 {
		t.Errorf("/v1 404: %s", res.body)
	}
}

func TestConsoleAuditFilters(t *testing.T) {
	e := newDemoEnv(t)
	u := signedIn(t, e, RoleAdmin)
	p := u.get("/ui/admin/audit?since=yesterday")
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "is not a date (2026-12-03)") {
		t.Errorf("bad since: %d", p.status)
	}
	for i := 0; i < auditPageSize+5; i++ {
		e.createToken(RoleCI)
	}
	p = u.get("/ui/admin/audit?action=token.create")
	if n := strings.Count(p.body, `data-action="token.create"`); n != auditPageSize {
		t.Fatalf("first page has %d entries, want %d", n, auditPageSize)
	}
	next := regexp.MustCompile(`href="(/ui/admin/audit\?[^"]+)" rel="next"`).FindStringSubmatch(p.body)
	if next == nil {
		t.Fatal("no next link")
	}
	var all AuditPage
	e.do("GET", "/v1/audit?action=token.create&limit=1000", e.tokens[RoleAdmin], nil).json(t, &all)
	p = u.get(strings.ReplaceAll(next[1], "&amp;", "&"))
	if n := strings.Count(p.body, `data-action="token.create"`); n != len(all.Entries)-auditPageSize {
		t.Errorf("second page has %d entries, want %d", n, len(all.Entries)-auditPageSize)
	}
	if strings.Contains(p.body, `rel="next"`) {
		t.Error("last page has a next link")
	}
}

func TestConsolePluginSignaturesAndMissingDependencies(t *testing.T) {
	e, f := newCatalogEnv(t)
	u := signedIn(t, e, RoleDeveloper)
	p := u.get("/ui/plugins/corp/deploy")
	if p.status != http.StatusOK {
		t.Fatalf("deploy: %d %s", p.status, p.body)
	}
	mustContain(t, "signed plugin", p.body, strings.ReplaceAll(template.HTMLEscapeString(f.deployW1), "+", "&#43;"), "signed: 1 of 1 signatures valid and by a trusted key",
		`data-id="lint@corp" data-depth="1"`, "deploy:ship", "deploy:rollback")
	p = u.get("/ui/plugins/corp/broken")
	if p.status != http.StatusOK {
		t.Fatalf("broken: %d %s", p.status, p.body)
	}
	mustContain(t, "missing dependency", p.body, `<g class="node node-missing" data-id="ghost@corp"`,
		`ghost@corp <span class="badge badge-missing">missing</span>`, "unsigned")
	if strings.Contains(p.body, `href="/ui/plugins/corp/ghost"`) {
		t.Error("a missing dependency is linked")
	}
}

// FuzzSafeNext: whatever a sign-in link carries as next, the redirect stays
// on a console page of this server.
func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/ui/", "/ui/plugins/demo/x?q=1", "//evil.example/", "/ui/\\evil", "https://evil.example/ui/", "/ui/\r\nSet-Cookie: x", "", "/uix"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := safeNext(next)
		if got != "/ui/" && got != next {
			t.Fatalf("safeNext(%q) = %q: neither the input nor the catalog", next, got)
		}
		u, err := url.Parse(got)
		if err != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(u.Path, "/ui/") || strings.ContainsAny(got, "\\\r\n") {
			t.Fatalf("safeNext(%q) = %q leaves the console", next, got)
		}
	})
}
