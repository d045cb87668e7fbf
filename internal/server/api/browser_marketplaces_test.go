package api

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/server/catalog"
	"github.com/wharfhq/wharf/internal/testutil/gitserve"
)

// newGitHostEnv is a server with no marketplace, whose GitHub host is a
// git server on 127.0.0.1 serving the fixture marketplace as corp/market
// (so the shorthand corp/market reaches it). It returns the served
// repository's URL.
func newGitHostEnv(t *testing.T) (*env, *fixture, *gitMarket, string) {
	t.Helper()
	needGit(t)
	f := newFixture(t)
	root := t.TempDir()
	g := &gitMarket{t: t, work: f.root}
	mustGit(t, g.work, "init", "-q", "-b", "main")
	g.commit("v1")
	g.bare = filepath.Join(root, "corp", "market.git")
	mustGit(t, "", "clone", "-q", "--bare", g.work, g.bare)
	srv := gitserve.Start(t, root, gitserve.Options{HTTP: true})
	dataDir := t.TempDir()
	cfg := fetch.Config{AllowPrivate: true, GitHubHost: srv.URL}
	e := newEnv(t, func(d *Deps) {
		mgr := marketplace.NewManager(d.Store, marketplace.Options{Dir: filepath.Join(dataDir, "marketplaces"), Fetch: cfg})
		d.Catalog = catalog.New(mgr)
		d.Verifier = TrustVerifier{Keyring: f.keyring}
	})
	return e, f, g, srv.URL + "/corp/market.git"
}

// An admin adds marketplaces from a GitHub shorthand and a git URL, sees a
// refresh fail and the error stay until a refresh succeeds, and removes a
// marketplace after confirming.
func TestBrowserMarketplaces(t *testing.T) {
	e, f, g, gitURL := newGitHostEnv(t)
	b := newBrowser(t, e.hs.URL)
	// The catalog of an empty server has no plugin list to wait for.
	b.open("/ui/", "#token")
	b.do("sign in", chromedp.SendKeys(chromedp.CSS("#token"), e.tokens[RoleAdmin]), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("#results")))
	if n := evalJS[int](b, `document.querySelectorAll(".plugin").length`); n != 0 {
		t.Fatalf("an empty server's catalog lists %d plugins", n)
	}
	b.do("open marketplaces", chromedp.Click(chromedp.CSS(`a[href="/ui/admin/marketplaces"]`)), chromedp.WaitVisible(chromedp.CSS("#add-marketplace")))
	b.screenshot("marketplaces-empty")

	add := func(name, source, waitFor string) {
		b.t.Helper()
		b.do("add "+source,
			chromedp.SetValue(chromedp.CSS("#mkt-name"), name),
			chromedp.SetValue(chromedp.CSS("#mkt-source"), source),
			chromedp.Click(chromedp.CSS("#add")),
			chromedp.WaitVisible(chromedp.CSS(waitFor)))
	}
	// A relative directory is refused, naming the field.
	add("corp", "./market", "#add-error")
	if msg := b.text("#add-error"); !strings.Contains(msg, "absolute path") {
		t.Errorf("relative directory: %q", msg)
	}
	if inv := evalJS[string](b, `document.querySelector("#mkt-source").getAttribute("aria-invalid")`); inv != "true" {
		t.Errorf("the source field is not marked invalid (%q)", inv)
	}
	if v := evalJS[string](b, `document.querySelector("#mkt-name").value`); v != "corp" {
		t.Errorf("the form lost the name typed: %q", v)
	}

	// GitHub shorthand, fetched from the stand-in GitHub host.
	add("corp", "corp/market", `#marketplaces tr[data-marketplace="corp"]`)
	if msg := b.text(".msg-ok"); msg != "Added marketplace corp." {
		t.Errorf("after adding: %q", msg)
	}
	row := func(name string) []string {
		return evalJS[[]string](b, `[...document.querySelectorAll('#marketplaces tr[data-marketplace="`+name+`"] td')].map(c => c.innerText.trim())`)
	}
	if r := row("corp"); len(r) < 5 || r[1] != "corp/market" || r[2] != "4" || r[3] == "never" || r[4] != "none" {
		t.Fatalf("corp row %q", r)
	}
	// A git URL, under another name.
	add("mirror", gitURL, `#marketplaces tr[data-marketplace="mirror"]`)
	if r := row("mirror"); r[1] != gitURL || r[2] != "4" {
		t.Fatalf("mirror row %q", r)
	}
	b.open("/ui/", ".plugins")
	if n := evalJS[int](b, `document.querySelectorAll(".plugin").length`); n != 8 {
		t.Fatalf("catalog lists %d plugins, want 4 from each marketplace", n)
	}
	b.open("/ui/admin/marketplaces", "#marketplaces")
	b.screenshot("marketplaces")

	// The next commit breaks marketplace.json: the refresh fails, the
	// marketplace keeps its last good catalog, and the error stays on the
	// page.
	writeFile(t, filepath.Join(f.root, ".claude-plugin", "marketplace.json"), `{"name": "corp", "plugins": [`)
	g.commit("broken")
	b.do("refresh corp", chromedp.Click(chromedp.CSS(`tr[data-marketplace="corp"] button.refresh`)), chromedp.WaitVisible(chromedp.CSS(".msg-error")))
	t.Log(b.text("main"))
	if msg := b.text(".msg-error"); !strings.HasPrefix(msg, "Refreshing corp failed: ") {
		t.Errorf("failed refresh message %q", msg)
	}
	b.open("/ui/admin/marketplaces", "#marketplaces")
	if r := row("corp"); !strings.Contains(r[4], "failed") || r[2] != "4" {
		t.Fatalf("after a failed refresh the corp row is %q; want the error and the 4 plugins kept", r)
	}
	if r := row("mirror"); r[4] != "none" {
		t.Errorf("mirror shows corp's error: %q", r)
	}
	b.screenshot("marketplaces-refresh-error")
	mustGit(t, f.root, "checkout", "-q", "HEAD~1", "--", ".claude-plugin/marketplace.json")
	g.commit("fixed")
	b.do("refresh corp again", chromedp.Click(chromedp.CSS(`tr[data-marketplace="corp"] button.refresh`)), chromedp.WaitVisible(chromedp.CSS(".msg-ok")))
	if r := row("corp"); r[4] != "none" {
		t.Errorf("after a good refresh the corp row still shows %q", r[4])
	}

	// Remove asks first; cancelling keeps it.
	b.do("remove mirror", chromedp.Click(chromedp.CSS(`tr[data-marketplace="mirror"] a.remove`)), chromedp.WaitVisible(chromedp.CSS("#confirm-remove")))
	if h := b.text("h1"); h != "Remove marketplace mirror?" {
		t.Errorf("confirmation heading %q", h)
	}
	b.screenshot("marketplace-remove-confirm")
	b.do("cancel", chromedp.Click(chromedp.CSS(`main a[href="/ui/admin/marketplaces"]:not(.crumbs a)`)), chromedp.WaitVisible(chromedp.CSS("#marketplaces")))
	if n := evalJS[int](b, `document.querySelectorAll('tr[data-marketplace="mirror"]').length`); n != 1 {
		t.Fatal("cancelling removed the marketplace")
	}
	b.do("remove mirror", chromedp.Click(chromedp.CSS(`tr[data-marketplace="mirror"] a.remove`)), chromedp.WaitVisible(chromedp.CSS("#confirm-remove")))
	b.do("confirm", chromedp.Click(chromedp.CSS("#confirm-remove")), chromedp.WaitVisible(chromedp.CSS(".msg-ok")))
	if msg := b.text(".msg-ok"); msg != "Removed marketplace mirror." {
		t.Errorf("after removing: %q", msg)
	}
	if n := evalJS[int](b, `document.querySelectorAll('tr[data-marketplace="mirror"]').length`); n != 0 {
		t.Fatal("mirror is still listed")
	}
	// Each change is in the audit log.
	b.open("/ui/admin/audit", "table.audit")
	for action, want := range map[string]int{"marketplace.add": 2, "marketplace.update": 1, "marketplace.remove": 1} {
		if n := evalJS[int](b, `document.querySelectorAll('tr[data-action="`+action+`"]').length`); n != want {
			t.Errorf("audit shows %d %s, want %d", n, action, want)
		}
	}

	// A developer has no marketplaces page.
	b.signOut()
	b.signIn(e.tokens[RoleDeveloper]) // corp's plugins are in the catalog
	b.open("/ui/admin/marketplaces", ".status-code")
	if h := b.text("h1"); h != "Not allowed" {
		t.Errorf("developer on the marketplaces page sees %q", h)
	}
}

func TestMarketplaceSourceForm(t *testing.T) {
	for in, want := range map[string]string{
		"owner/repo":                            `{"source":"github","repo":"owner/repo"}`,
		"owner/repo@v2":                         `{"source":"github","repo":"owner/repo","ref":"v2"}`,
		"https://git.corp.example/m.git#main":   `{"source":"git","url":"https://git.corp.example/m.git","ref":"main"}`,
		"git@git.corp.example:it/m.git":         `{"source":"git","url":"git@git.corp.example:it/m.git"}`,
		"https://corp.example/marketplace.json": `{"source":"url","url":"https://corp.example/marketplace.json"}`,
		"/srv/marketplaces/corp":                `{"source":"directory","path":"/srv/marketplaces/corp"}`,
	} {
		got, err := marketplaceSource(in)
		if err != nil || string(got) != want {
			t.Errorf("%s: %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "./corp", "~/corp", "ftp://x/y", "not a source"} {
		if got, err := marketplaceSource(in); err == nil {
			t.Errorf("%q: accepted as %s", in, got)
		}
	}
}
