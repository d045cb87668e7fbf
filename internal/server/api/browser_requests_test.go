package api

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/wharfhq/wharf/internal/server/requests"
)

// TestBrowserRequestsQueue: an admin opens the queue, approves one request
// until a date with a note and denies another; the API then shows both
// answers and the bundle carries the waiver. A bad date is refused on the
// page, naming it.
func TestBrowserRequestsQueue(t *testing.T) {
	needGit(t)
	e, _ := newCatalogEnv(t)
	tool := e.ask(t, RoleDeveloper, "tool@corp", "needed for the release")
	other := e.ask(t, RoleDeveloper, "other@corp", "for a try")
	b := newBrowser(t, e.hs.URL)
	b.signIn(e.tokens[RoleAdmin])
	b.open("/ui/admin/requests", `tr[data-plugin="tool@corp"]`)
	if n := evalJS[int](b, `document.querySelectorAll("tr[data-status=pending]").length`); n != 2 {
		t.Fatalf("%d pending requests shown, want 2", n)
	}
	if reason := b.text(`tr[data-plugin="tool@corp"]`); !strings.Contains(reason, "needed for the release") {
		t.Fatalf("tool's row %q lacks the reason", reason)
	}
	b.screenshot("requests")

	row := `tr[data-id="` + tool.ID + `"] `
	b.do("approve tool@corp",
		chromedp.SetValue(chromedp.CSS(row+`form.approve input[name=until]`), "2999-01-01"),
		chromedp.SendKeys(chromedp.CSS(row+`form.approve input[name=note]`), "for the migration"),
		chromedp.Click(chromedp.CSS(row+`form.approve button`)),
		chromedp.WaitVisible(chromedp.CSS(`.msg-ok`)))
	if msg := b.text(`.msg-ok`); !strings.Contains(msg, tool.ID+" approved") {
		t.Fatalf("after approving: %q", msg)
	}
	// A date in the past: the browser refuses the form (the input's min),
	// and so does the server when that check is removed.
	row = `tr[data-id="` + other.ID + `"] `
	until := row + `form.approve input[name=until]`
	b.do("a past date", chromedp.SetValue(chromedp.CSS(until), "2001-01-01"))
	if !evalJS[bool](b, `document.querySelector('`+until+`').validity.rangeUnderflow`) {
		t.Fatal("the date input accepts a date in the past")
	}
	b.do("approve other@corp in the past, the browser's check removed",
		chromedp.Evaluate[chromedp.Void](`document.querySelector('`+until+`').removeAttribute("min")`),
		chromedp.Click(chromedp.CSS(row+`form.approve button`)),
		chromedp.WaitVisible(chromedp.CSS(`.msg-error`)))
	if msg := b.text(`.msg-error`); !strings.Contains(msg, "not in the future") {
		t.Fatalf("a past date: %q", msg)
	}
	b.do("deny other@corp",
		chromedp.SendKeys(chromedp.CSS(row+`form.deny input[name=note]`), "use tool@corp"),
		chromedp.Click(chromedp.CSS(row+`form.deny button`)),
		chromedp.WaitVisible(chromedp.CSS(`.msg-ok`)))
	b.open("/ui/admin/requests?status=", `tr[data-status=denied]`)
	if ans := b.text(`tr[data-status=denied] .answer`); !strings.Contains(ans, "denied") || !strings.Contains(ans, "use tool@corp") {
		t.Fatalf("the denied row says %q", ans)
	}
	b.screenshot("requests-answered")

	var list RequestList
	e.do("GET", "/v1/requests/mine", e.tokens[RoleDeveloper], nil).json(t, &list)
	got := map[string]RequestInfo{}
	for _, q := range list.Requests {
		got[q.Plugin] = q
	}
	if q := got["tool@corp"]; q.Status != requests.StatusApproved || q.Answer.Note != "for the migration" || q.Answer.Until == nil || q.Answer.Until.Year() != 2999 {
		t.Fatalf("tool@corp after the console: %+v %+v", q, q.Answer)
	}
	if q := got["other@corp"]; q.Status != requests.StatusDenied || q.Answer.Note != "use tool@corp" {
		t.Fatalf("other@corp after the console: %+v", q)
	}
	if _, ws := e.bundleWaivers(t); len(ws) != 1 || ws[0].Plugin != "tool@corp" {
		t.Fatalf("bundle waivers after the console: %+v", ws)
	}
}
