package api

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// The browser tests drive Debian's Chromium headless against the real
// server. Without a Chromium they skip, except in CI (CI=true), where they
// fail: .ci/run installs it.

// findChromium returns the browser to drive: $WHARF_CHROMIUM, else chromium
// (or chromium-browser) on PATH, else /usr/bin/chromium.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("WHARF_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	msg := "no Chromium found (looked at $WHARF_CHROMIUM, chromium and chromium-browser on PATH, /usr/bin/chromium); install it with: apt-get install -y chromium"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// artifactsDir is where screenshots go: $WHARF_ARTIFACTS, else a temp dir.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("WHARF_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser is one headless Chromium with one tab.
type browser struct {
	t         *testing.T
	ctx       context.Context
	base      string
	artifacts string
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	exe := findChromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("headless", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// Containers have a small /dev/shm.
		chromedp.Flag("disable-dev-shm-usage", true),
		// Loopback only: every other host name fails to resolve.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.UserDataDir(t.TempDir()),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx, base: base, artifacts: artifactsDir(t)}
	// The first run starts the browser; it must not carry a timeout (that
	// would stop the browser with it).
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	t.Logf("browser %s; screenshots in %s", exe, b.artifacts)
	return b
}

// do runs steps with a deadline, so a page that never shows what a step
// waits for fails the test instead of hanging it.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

func evalJS[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func (b *browser) open(path string, waitFor chromedp.CSS) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.base+path), chromedp.WaitVisible(waitFor))
}

// screenshot saves the whole page as <name>.png in the artifacts dir.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		b.t.Fatalf("screenshot %s is not a PNG", name)
	}
	if err := os.WriteFile(filepath.Join(b.artifacts, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func (b *browser) text(sel chromedp.CSS) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func (b *browser) signIn(token string) {
	b.t.Helper()
	b.open("/ui/", "#token") // redirected to the sign-in form
	b.do("sign in",
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS(".plugins")))
}

func (b *browser) signOut() {
	b.t.Helper()
	b.do("sign out", chromedp.Click(chromedp.CSS(".signout button")), chromedp.WaitVisible(chromedp.CSS("#token")))
}

func TestBrowserConsoleFlows(t *testing.T) {
	e := newDemoEnv(t)
	b := newBrowser(t, e.hs.URL)

	// Sign in.
	b.open("/ui/", "#token")
	if loc := evalJS[string](b, "location.pathname"); loc != "/ui/signin" {
		t.Fatalf("unauthenticated catalog went to %s", loc)
	}
	b.screenshot("signin")
	b.signIn(e.tokens[RoleAdmin])
	if n := evalJS[int](b, `document.querySelectorAll(".plugin").length`); n != 6 {
		t.Fatalf("catalog lists %d plugins, want 6", n)
	}
	b.screenshot("catalog")

	// The first Tab reaches the skip link, which moves focus to the content.
	b.do("tab", chromedp.KeyEvent("\t"))
	if cls := evalJS[string](b, "document.activeElement.className"); cls != "skip" {
		t.Errorf("first Tab focuses %q, want the skip link", cls)
	}

	// Search finds a plugin.
	b.do("search",
		chromedp.SendKeys(chromedp.CSS("#q"), "deploy"),
		chromedp.Submit(chromedp.CSS("#q")),
		chromedp.WaitVisible(chromedp.CSS(`#results[data-count="1"]`)))
	if got := b.text(".plugin h3 a"); got != "app-deploy" {
		t.Fatalf("search found %q", got)
	}
	b.screenshot("catalog-search")

	// Its detail shows the components and the dependency graph.
	b.do("open detail", chromedp.Click(chromedp.CSS(".plugin h3 a")), chromedp.WaitVisible(chromedp.CSS("#dep-graph")))
	comps := evalJS[string](b, `document.querySelector('section[aria-labelledby="components-h"]').innerText`)
	for _, want := range []string{"app-deploy:deploy", "app-deploy:rollout"} {
		if !strings.Contains(comps, want) {
			t.Errorf("components %q lack %s", comps, want)
		}
	}
	nodes := evalJS[[]string](b, `[...document.querySelectorAll("#dep-graph g.node")].map(n => n.dataset.id)`)
	if strings.Join(nodes, " ") != "app-deploy@demo ci-runner@demo secrets-vault@demo core-utils@demo" {
		t.Errorf("graph nodes %v", nodes)
	}
	if n := evalJS[int](b, `document.querySelectorAll("#dep-graph line.edge").length`); n != 4 {
		t.Errorf("graph has %d edges, want 4 (a diamond)", n)
	}
	// The graph is drawn: the boxes have a size on screen.
	if w := evalJS[float64](b, `document.querySelector("#dep-graph g.node rect").getBoundingClientRect().width`); w < 100 {
		t.Errorf("graph node is %v px wide", w)
	}
	b.screenshot("plugin-detail")
	// The graph's nodes are links a keyboard reaches and follows.
	b.do("keyboard into the graph",
		chromedp.Focus(chromedp.CSS(`#dep-graph a[href="/ui/plugins/demo/core-utils"]`)),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`#dep-graph g.node-root[data-id="core-utils@demo"]`)))

	// An admin blocks the demo marketplace: preview first, then save.
	b.open("/ui/admin/policy", "#layer")
	b.screenshot("policy")
	b.do("new layer",
		chromedp.SendKeys(chromedp.CSS("#layer"), "org"),
		chromedp.Submit(chromedp.CSS("#layer")),
		chromedp.WaitVisible(chromedp.CSS("#settings")))
	b.screenshot("policy-editor")
	b.do("edit",
		chromedp.SetValue(chromedp.CSS("#settings"), blockDemo),
		chromedp.SetValue(chromedp.CSS("#rank"), "10"),
		chromedp.Click(chromedp.CSS("#preview")),
		chromedp.WaitVisible(chromedp.CSS("#impact")))
	changed := evalJS[[]string](b, `[...document.querySelectorAll("#impact tbody tr")].map(r => r.dataset.plugin + " " + r.cells[1].innerText.trim().toLowerCase() + " > " + r.cells[2].innerText.trim().toLowerCase())`)
	if len(changed) != 6 {
		t.Fatalf("impact preview lists %v, want the 6 demo plugins", changed)
	}
	for _, row := range changed {
		if !strings.HasSuffix(row, "allowed > blocked") {
			t.Errorf("impact row %q", row)
		}
	}
	// One reason, one group, counted; Save comes before the list.
	groups := evalJS[[]string](b, `[...document.querySelectorAll("#impact .impact-group")].map(g => g.dataset.count + " " + g.querySelector("summary").innerText.replace(/\s+/g, " ").trim().toLowerCase())`)
	if len(groups) != 1 || !strings.HasPrefix(groups[0], "6 6 plugins: allowed → blocked") || !strings.Contains(groups[0], "blockedmarketplaces") {
		t.Errorf("impact groups %q", groups)
	}
	if above := evalJS[bool](b, `document.querySelector("#save").getBoundingClientRect().bottom <= document.querySelector("#impact table").getBoundingClientRect().top`); !above {
		t.Error("the Save button is not above the impact list")
	}
	b.screenshot("policy-impact-preview")
	if n := evalJS[int](b, `document.querySelectorAll(".badge-blocked").length`); n == 0 {
		t.Error("preview shows no blocked badge")
	}
	b.do("save", chromedp.Click(chromedp.CSS("#save")), chromedp.WaitVisible(chromedp.CSS(".msg-ok")))
	b.open("/ui/", ".plugins")
	blocked := evalJS[int](b, `document.querySelectorAll('.plugin [data-decision="blocked"]').length`)
	if blocked != 6 {
		t.Errorf("after saving, %d plugins show blocked, want 6", blocked)
	}
	b.screenshot("catalog-blocked")
	b.open("/ui/plugins/demo/secrets-vault", "#dep-graph")
	if reasons := b.text(".decision .reasons"); !strings.Contains(reasons, "blockedMarketplaces") {
		t.Errorf("detail reasons %q", reasons)
	}
	b.open("/ui/admin/audit", "table.audit")
	if n := evalJS[int](b, `document.querySelectorAll('tr[data-action="policy.layer.put"]').length`); n != 1 {
		t.Errorf("audit shows %d policy writes", n)
	}
	b.screenshot("audit")

	// Narrow screen, dark scheme.
	b.do("narrow dark",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
			return err
		}))
	b.open("/ui/", ".plugins")
	if over := evalJS[bool](b, `document.documentElement.scrollWidth > window.innerWidth + 1`); over {
		t.Error("the catalog scrolls sideways on a 390 px screen")
	}
	if bg := evalJS[string](b, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(15, 19, 24)" {
		t.Errorf("dark scheme background %s", bg)
	}
	b.screenshot("catalog-narrow-dark")
	b.do("wide light",
		chromedp.EmulateViewport(1280, 900),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{})
			return err
		}))

	// A developer cannot open the admin pages.
	b.signOut()
	b.signIn(e.tokens[RoleDeveloper])
	if n := evalJS[int](b, `document.querySelectorAll('a[href="/ui/admin/policy"]').length`); n != 0 {
		t.Error("a developer sees the admin navigation")
	}
	b.open("/ui/admin/policy", ".status-code")
	if h := b.text("h1"); h != "Not allowed" {
		t.Errorf("developer on the policy page sees %q", h)
	}
	if code := b.text(".status-code"); code != "HTTP 403" {
		t.Errorf("status line %q", code)
	}
	b.screenshot("forbidden")
}
