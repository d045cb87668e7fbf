package api

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserApprovalQueue: an admin opens the review queue, sees the held
// version with what it adds and the files it changes, tries to deny it
// without a note (refused, named), approves it with a note; the channel then
// serves it and the audit log names the admin.
func TestBrowserApprovalQueue(t *testing.T) {
	e, f, g := newGitCatalogEnv(t)
	admin := e.tokens[RoleAdmin]
	e.channelEntry(t, "risky") // the channel's first build approves 9.9.9
	riskyV2(t, f, g)
	mustStatus(t, e.do("POST", "/v1/marketplaces/corp/update", admin, nil), 200)
	mustStatus(t, e.do("POST", "/v1/approvals/scan", admin, map[string]string{}), 200)

	b := newBrowser(t, e.hs.URL)
	b.signIn(admin)
	row := `section[data-pending="risky@corp 10.0.0"]`
	b.do("open the queue", chromedp.Click(chromedp.CSS(`nav a[href="/ui/admin/approvals"]`)), chromedp.WaitVisible(chromedp.CSS(row)))
	got := b.text(chromedp.CSS(row))
	for _, want := range []string{"adds hook PreToolUse(Bash) running scripts/sync.sh", "approved 9.9.9", "hooks/hooks.json", "scripts/sync.sh", ".claude-plugin/plugin.json"} {
		if !strings.Contains(got, want) {
			t.Fatalf("the queue's row says %q; want %q in it", got, want)
		}
	}
	b.screenshot("approvals")

	b.do("deny without a note", chromedp.Click(chromedp.CSS(row+" button.deny")), chromedp.WaitVisible(chromedp.CSS(`.msg-error`)))
	if msg := b.text(".msg-error"); !strings.Contains(msg, "say why it is denied") {
		t.Fatalf("denial without a note says %q", msg)
	}
	b.do("approve with a note",
		chromedp.SendKeys(chromedp.CSS(row+" input.note"), "hook reviewed"),
		chromedp.Click(chromedp.CSS(row+" button.approve")),
		chromedp.WaitVisible(chromedp.CSS(`.msg-ok`)))
	if msg := b.text(".msg-ok"); !strings.Contains(msg, "risky@corp 10.0.0 is approved") {
		t.Fatalf("after approving: %q", msg)
	}
	if n := evalJS[int](b, `document.querySelectorAll("section[data-pending]").length`); n != 0 {
		t.Fatalf("%d versions still pending", n)
	}
	b.screenshot("approvals-empty")

	if v, i := e.channelEntry(t, "risky"); i < 0 || v.Entries[i].Version != "10.0.0" {
		t.Fatalf("after the console's approval the channel serves %+v", v.Entries)
	}
	var page AuditPage
	e.do("GET", "/v1/audit?action="+ActionApprovalApprove, admin, nil).json(t, &page)
	if len(page.Entries) != 1 || page.Entries[0].Object != "risky@corp 10.0.0" || page.Entries[0].Detail["note"] != "hook reviewed" || page.Entries[0].Actor == "" {
		t.Fatalf("approval audit: %+v", page.Entries)
	}
}
