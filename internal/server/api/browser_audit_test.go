package api

import (
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The audit log in a browser: newest first, filtered by action, actor,
// object and time, with details as labelled values.
func TestBrowserAudit(t *testing.T) {
	e := newDemoEnv(t)
	e.createToken(RoleCI)
	var created AuditPage
	e.do("GET", "/v1/audit?action=token.create&limit=1000", e.tokens[RoleAdmin], nil).json(t, &created)
	admin := created.Entries[len(created.Entries)-1].Actor // who created the ci token
	mustStatus(t, e.do("PUT", "/v1/policy/layers/org", e.tokens[RoleAdmin], `{"rank": 10, "settings": {"blockedPlugins": ["app-deploy@demo"]}}`, "If-None-Match: *"), 201)
	b := newBrowser(t, e.hs.URL)
	b.signIn(e.tokens[RoleAdmin])
	b.open("/ui/admin/audit", "table.audit")
	seqs := evalJS[[]string](b, `[...document.querySelectorAll("table.audit tbody tr")].map(r => r.dataset.seq)`)
	nums := make([]int, len(seqs))
	for i, s := range seqs {
		nums[i], _ = strconv.Atoi(s)
	}
	if len(nums) < 4 || !sort.SliceIsSorted(nums, func(i, j int) bool { return nums[i] > nums[j] }) {
		t.Fatalf("audit rows %v, want newest first", nums)
	}
	if first := evalJS[string](b, `document.querySelector("table.audit tbody tr").dataset.action`); first != ActionPolicyPut {
		t.Errorf("newest entry is %s, want the layer write", first)
	}
	// The marketplace's source reads as typed; no JSON braces anywhere.
	add := b.text(`tr[data-action="marketplace.add"] dl.detail`)
	if !strings.Contains(add, "source") || !strings.Contains(add, "demo-marketplace") || strings.ContainsAny(add, "{}") {
		t.Errorf("marketplace.add details %q", add)
	}
	if raw := b.text("table.audit tbody"); strings.Contains(raw, `":`) {
		t.Errorf("a detail is shown as JSON: %q", raw)
	}
	b.screenshot("audit-newest-first")

	// Filters: object, then action and a time range that excludes all.
	b.do("filter object", chromedp.SetValue(chromedp.CSS("#object"), "ORG"), chromedp.Submit(chromedp.CSS("#object")),
		chromedp.WaitVisible(chromedp.CSS(`#object[value="ORG"]`)))
	if acts := evalJS[[]string](b, `[...document.querySelectorAll("table.audit tbody tr")].map(r => r.dataset.action)`); strings.Join(acts, ",") != ActionPolicyPut {
		t.Errorf("object filter org: %v", acts)
	}
	b.open("/ui/admin/audit?action=token.create&until=2000-01-01", "main")
	if got := b.text("main"); !strings.Contains(got, "No entry matches these filters.") {
		t.Errorf("until 2000: %q", got)
	}
	b.open("/ui/admin/audit?action=token.create&actor="+admin, "table.audit")
	want := 0
	for _, en := range created.Entries {
		if en.Actor == admin {
			want++
		}
	}
	if n := evalJS[int](b, `document.querySelectorAll('table.audit tbody tr[data-action="token.create"]').length`); n != want || want == 0 {
		t.Errorf("tokens created by %s: %d rows, want %d", admin, n, want)
	}
	b.open("/ui/admin/audit?since=tomorrow", ".msg-error")
	if got := b.text(".msg-error"); !strings.Contains(got, "since") {
		t.Errorf("bad since: %q", got)
	}
}
