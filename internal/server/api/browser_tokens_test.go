package api

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// An admin creates a token with a role, a note and an expiry and sees its
// secret once; the token's use shows as "last used"; the admin revokes it
// after confirming, and it no longer signs in.
func TestBrowserTokens(t *testing.T) {
	e := newDemoEnv(t)
	b := newBrowser(t, e.hs.URL)
	b.signIn(e.tokens[RoleAdmin])
	b.do("open tokens", chromedp.Click(chromedp.CSS(`a[href="/ui/admin/tokens"]`)), chromedp.WaitVisible(chromedp.CSS("#create-token")))
	before := evalJS[int](b, `document.querySelectorAll("#tokens tbody tr").length`)

	// A bad expiry is refused, naming the field, keeping what was typed.
	b.do("bad expiry",
		chromedp.SetValue(chromedp.CSS("#tok-note"), "laptop of ana"),
		chromedp.SetValue(chromedp.CSS("#tok-expires"), "3 weeks"),
		chromedp.Click(chromedp.CSS("#create")),
		chromedp.WaitVisible(chromedp.CSS("#create-error")))
	if inv := evalJS[string](b, `document.querySelector("#tok-expires").getAttribute("aria-invalid")`); inv != "true" {
		t.Errorf("expires not marked invalid; error %q", b.text("#create-error"))
	}
	if v := evalJS[string](b, `document.querySelector("#tok-note").value`); v != "laptop of ana" {
		t.Errorf("the note typed was lost: %q", v)
	}

	b.do("create",
		chromedp.SetValue(chromedp.CSS("#tok-role"), "developer"),
		chromedp.SetValue(chromedp.CSS("#tok-expires"), "30d"),
		chromedp.Click(chromedp.CSS("#create")),
		chromedp.WaitVisible(chromedp.CSS("#created")))
	secret := evalJS[string](b, `document.querySelector("#secret").value`)
	id := evalJS[string](b, `document.querySelector("#created-h").innerText.split(" ")[1]`)
	if len(secret) < 20 || !strings.HasPrefix(id, "tok_") {
		t.Fatalf("created %q with secret %q", id, secret)
	}
	if got := b.text("#created"); !strings.Contains(got, "shown only this once") || !strings.Contains(got, "It expires at") {
		t.Errorf("created section %q", got)
	}
	row := func(id string) []string {
		return evalJS[[]string](b, `[...document.querySelectorAll('#tokens tr[data-token="`+id+`"] td')].map(c => c.innerText.trim())`)
	}
	if r := row(id); len(r) < 6 || r[1] != "developer" || r[2] != "laptop of ana" || r[4] == "never" || r[5] != "never" {
		t.Fatalf("new token row %q", r)
	}
	if n := evalJS[int](b, `document.querySelectorAll("#tokens tbody tr").length`); n != before+1 {
		t.Errorf("%d tokens listed after creating one, was %d", n, before)
	}
	b.screenshot("tokens-created")
	// The secret is not shown again.
	b.open("/ui/admin/tokens", "#tokens")
	if n := evalJS[int](b, `document.querySelectorAll("#secret").length`); n != 0 || strings.Contains(evalJS[string](b, "document.documentElement.outerHTML"), secret) {
		t.Fatal("the secret is shown again")
	}

	// The new token is used; the admin sees when.
	b.signOut()
	b.signIn(secret)
	b.signOut()
	b.signIn(e.tokens[RoleAdmin])
	lastUsed := "never"
	for i := 0; i < 50 && lastUsed == "never"; i++ { // the use is written apart from the request
		b.open("/ui/admin/tokens", "#tokens")
		lastUsed = row(id)[5]
	}
	if !strings.HasPrefix(lastUsed, "20") {
		t.Fatalf("last used %q after signing in with the token", lastUsed)
	}
	b.screenshot("tokens")

	// Revoke asks first; cancel keeps the token.
	b.do("revoke", chromedp.Click(chromedp.CSS(`tr[data-token="`+id+`"] a.revoke`)), chromedp.WaitVisible(chromedp.CSS("#confirm-revoke")))
	if got := b.text("main"); !strings.Contains(got, "laptop of ana") || !strings.Contains(got, "last used") {
		t.Errorf("confirmation %q", got)
	}
	b.do("cancel", chromedp.Click(chromedp.CSS("#cancel")), chromedp.WaitVisible(chromedp.CSS("#tokens")))
	if len(row(id)) == 0 {
		t.Fatal("cancel revoked the token")
	}
	// The admin's own token has no revoke link (it would end this session).
	if n := evalJS[int](b, `document.querySelectorAll('tr[data-token] a.revoke').length`); n != before {
		t.Errorf("%d revoke links for %d other tokens", n, before)
	}
	b.do("revoke", chromedp.Click(chromedp.CSS(`tr[data-token="`+id+`"] a.revoke`)), chromedp.WaitVisible(chromedp.CSS("#confirm-revoke")))
	b.do("confirm", chromedp.Click(chromedp.CSS("#confirm-revoke")), chromedp.WaitVisible(chromedp.CSS(".msg-ok")))
	if got := b.text(".msg-ok"); got != "Revoked token "+id+"." {
		t.Errorf("after revoking: %q", got)
	}
	if len(row(id)) != 0 {
		t.Fatal("the revoked token is still listed")
	}
	b.open("/ui/admin/audit?action=token.delete", "table.audit")
	if got := b.text(`tr[data-action="token.delete"]`); !strings.Contains(got, id) {
		t.Errorf("audit of the revocation %q", got)
	}
	b.signOut()
	b.do("sign in with the revoked token", chromedp.SendKeys(chromedp.CSS("#token"), secret), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS(".msg-error")))
	if got := b.text(".msg-error"); !strings.Contains(got, "unknown or was revoked") {
		t.Errorf("signing in with the revoked token: %q", got)
	}
}
