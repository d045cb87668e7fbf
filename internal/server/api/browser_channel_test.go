package api

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserChannelPage: a developer finds the channel in the console and
// sees the one command to run, the clone URL, the plugins and, for each
// plugin left out, why.
func TestBrowserChannelPage(t *testing.T) {
	needGit(t)
	e, _ := newCatalogEnv(t)
	if res := e.putLayer("org", "*new", map[string]any{"settings": map[string]any{"enabledPlugins": map[string]bool{"risky@corp": false}}}); res.status != 201 {
		t.Fatalf("put layer: %d %s", res.status, res.body)
	}
	b := newBrowser(t, e.hs.URL)
	b.signIn(e.tokens[RoleDeveloper])
	b.open("/ui/channels", `tr[data-channel="approved"]`)
	b.screenshot("channels")
	b.do("open the channel", chromedp.Click(chromedp.CSS(`tr[data-channel="approved"] a`)), chromedp.WaitVisible(chromedp.CSS("#command")))
	want := "claude plugin marketplace add " + strings.Replace(e.hs.URL, "http://", "http://wharf:<token>@", 1) + "/git/approved.git"
	if got := b.text("#command"); got != want {
		t.Fatalf("command %q, want %q", got, want)
	}
	if got := b.text("#clone-url"); got != e.hs.URL+"/git/approved.git" {
		t.Fatalf("clone URL %q", got)
	}
	if n := evalJS[int](b, `document.querySelectorAll("tr[data-entry]").length`); n != 2 {
		t.Fatalf("%d entries shown, want deploy and lint", n)
	}
	risky := b.text(`tr[data-left="risky@corp"]`)
	if !strings.Contains(risky, "denied") || !strings.Contains(risky, "policy layer org") {
		t.Fatalf("risky's row says %q; want denied by the org layer", risky)
	}
	if broken := b.text(`tr[data-left="broken@corp"]`); !strings.Contains(broken, "ghost@corp") {
		t.Fatalf("broken's row says %q; want its missing dependency", broken)
	}
	b.screenshot("channel")
}
