package api

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/wharfhq/wharf/internal/server/tokens"
)

// ssoSignIn signs the browser in through the provider as user: the
// console's "Sign in with" link, the provider's login page, and back.
func (b *browser) ssoSignIn(user string) {
	b.t.Helper()
	b.open("/ui/", "#sso") // redirected to the sign-in page
	b.do("sign in with the provider",
		chromedp.Click(chromedp.CSS("#sso")),
		chromedp.WaitVisible(chromedp.CSS("#username")),
		chromedp.SendKeys(chromedp.CSS("#username"), user),
		chromedp.Click(chromedp.CSS("#submit")),
		chromedp.WaitVisible(chromedp.CSS(".signout .who")))
}

// Chromium signs in through the OpenID provider on loopback: a user in
// platform-admins lands as admin (admin pages in the navigation, the
// audit log names them); a user in data-team lands as developer and sees
// no admin pages (and is refused one by URL); signing out revokes the
// session's token.
func TestBrowserSingleSignOn(t *testing.T) {
	e := newSSOEnv(t)
	b := newBrowser(t, e.url)

	b.open("/ui/", "#sso")
	if got := b.text("#sso"); got != "Sign in with Test IdP" {
		t.Fatalf("sign-in button %q", got)
	}
	b.screenshot("sso-signin")
	b.ssoSignIn("ada")
	if who := b.text(".signout .who"); !strings.Contains(who, "ada@example.com") || !strings.Contains(who, "admin") {
		t.Fatalf("ada is signed in as %q", who)
	}
	if n := evalJS[int](b, `document.querySelectorAll('nav a[href="/ui/admin/policy"]').length`); n != 1 {
		t.Fatalf("ada's navigation has %d policy links", n)
	}
	b.open("/ui/admin/audit", "table")
	users := evalJS[string](b, `[...document.querySelectorAll("tbody .user")].map(e => e.innerText).join(" ")`)
	if !strings.Contains(users, "ada@example.com") {
		t.Fatalf("the audit log names %q", users)
	}
	b.screenshot("sso-admin-audit")
	tokID := strings.Trim(b.text(".signout .who .muted"), "()")
	if _, err := e.srv.lookupTokenByID(tokID); err != nil {
		t.Fatalf("the session's token %q: %v", tokID, err)
	}
	b.signOutTo("#sso")
	if _, err := e.srv.lookupTokenByID(tokID); err == nil {
		t.Fatalf("the token %s of a signed-out single sign-on session is still valid", tokID)
	}

	b.ssoSignIn("bo")
	if who := b.text(".signout .who"); !strings.Contains(who, "bo@example.com") || !strings.Contains(who, "developer") {
		t.Fatalf("bo is signed in as %q", who)
	}
	if n := evalJS[int](b, `document.querySelectorAll('nav a[href^="/ui/admin/"]').length`); n != 0 {
		t.Fatalf("a developer's navigation has %d admin links", n)
	}
	b.screenshot("sso-developer")
	b.do("open an admin page by URL", chromedp.Navigate(e.url+"/ui/admin/policy"), chromedp.WaitVisible(chromedp.CSS("main")))
	if h := b.text("main h1"); h != "Not allowed" {
		t.Fatalf("a developer on an admin page sees %q", h)
	}
}

func (s *Server) lookupTokenByID(id string) (tokenRecord, error) {
	var rec tokenRecord
	err := s.deps.Store.View(func(r storeReader) (err error) { rec, err = tokens.Get(r, id); return err })
	return rec, err
}

func (b *browser) signOutTo(waitFor string) {
	b.t.Helper()
	b.open("/ui/", ".signout button")
	b.do("sign out", chromedp.Click(chromedp.CSS(".signout button")), chromedp.WaitVisible(chromedp.CSS(waitFor)))
}
