package api

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// An admin reorders, edits, reads the history of, restores and deletes
// policy layers in the console; the new layer form's default rank is the
// one the server gives a layer written without a rank, and its help says
// so.
func TestBrowserLayers(t *testing.T) {
	e := newDemoEnv(t)
	// Two layers through the API: org blocks one plugin, team another.
	put := func(name, body string, version int) {
		t.Helper()
		h := "If-None-Match: *"
		if version > 0 {
			h = "If-Match: " + layerETag(uint64(version))
		}
		res := e.do("PUT", "/v1/policy/layers/"+name, e.tokens[RoleAdmin], body, h)
		if res.status >= 300 {
			t.Fatalf("put %s: %d %s", name, res.status, res.body)
		}
	}
	put("org", `{"rank": 10, "settings": {"blockedPlugins": ["app-deploy@demo"]}}`, 0)
	put("team", `{"rank": 30, "settings": {"blockedPlugins": ["ci-runner@demo"]}}`, 0)
	// The rank a layer gets when written without one.
	put("probe", `{"settings": {}}`, 0)
	var probe Layer
	res := e.do("GET", "/v1/policy/layers/probe", e.tokens[RoleAdmin], nil)
	res.json(t, &probe)
	mustStatus(t, e.do("DELETE", "/v1/policy/layers/probe", e.tokens[RoleAdmin], nil, "If-Match: "+layerETag(probe.Version)), 200)

	b := newBrowser(t, e.hs.URL)
	b.signIn(e.tokens[RoleAdmin])
	b.open("/ui/admin/policy/edit?layer=extra", "#rank")
	if got := evalJS[string](b, `document.querySelector("#rank").value`); got != strconv.Itoa(probe.Rank) {
		t.Errorf("new layer form suggests rank %s; the server gives %d", got, probe.Rank)
	}
	help := b.text("#rank-help")
	for _, want := range []string{"gets " + strconv.Itoa(probe.Rank), "org 10", "team 30"} {
		if !strings.Contains(help, want) {
			t.Errorf("rank help %q lacks %q", help, want)
		}
	}

	// Reorder: team moves above org (rank 5); then edit its settings.
	b.open("/ui/admin/policy/layers/team", "#rank")
	b.do("rank team 5", chromedp.SetValue(chromedp.CSS("#rank"), "5"), chromedp.Click(chromedp.CSS("#preview")), chromedp.WaitVisible(chromedp.CSS("#save")))
	b.do("save", chromedp.Click(chromedp.CSS("#save")), chromedp.WaitVisible(chromedp.CSS(".msg-ok")))
	b.open("/ui/admin/policy", "table.layers")
	order := evalJS[[]string](b, `[...document.querySelectorAll("table.layers tbody tr")].map(r => r.cells[0].innerText + " " + r.cells[1].innerText)`)
	if strings.Join(order, ",") != "team 5,org 10" {
		t.Fatalf("layers after reordering: %v", order)
	}
	b.open("/ui/admin/policy/layers/team", "#settings")
	b.do("edit team",
		chromedp.SetValue(chromedp.CSS("#settings"), `{"blockedPlugins": ["ci-runner@demo", "core-utils@demo"], "allowedMarketplaces": ["demo"]}`),
		chromedp.Click(chromedp.CSS("#preview")), chromedp.WaitVisible(chromedp.CSS("#save")))
	b.do("save", chromedp.Click(chromedp.CSS("#save")), chromedp.WaitVisible(chromedp.CSS(".msg-ok")))

	// The history: newest first, each revision with what it changed.
	revs := evalJS[[]string](b, `[...document.querySelectorAll("#history .revision")].map(r => r.dataset.seq + " " + r.dataset.action)`)
	if len(revs) != 3 {
		t.Fatalf("team history %v, want create, rank change, settings change", revs)
	}
	diff := func(i int) []string {
		return evalJS[[]string](b, `[...document.querySelectorAll("#history .revision")[`+strconv.Itoa(i)+`].querySelectorAll("table.diff tbody tr")].map(r => [...r.cells].map(c => c.innerText.replace(/\s+/g, "")).join("|"))`)
	}
	if got := strings.Join(diff(0), "\n"); got != `allowedMarketplaces|added||["demo"]`+"\n"+`blockedPlugins|changed|["ci-runner@demo"]|["ci-runner@demo","core-utils@demo"]` {
		t.Errorf("newest revision's diff:\n%s", got)
	}
	if got := strings.Join(diff(1), "\n"); got != "rank|changed|30|5" {
		t.Errorf("rank revision's diff:\n%s", got)
	}
	if got := strings.Join(diff(2), "\n"); got != `blockedPlugins|added||["ci-runner@demo"]`+"\n"+"rank|added||30" {
		t.Errorf("first revision's diff:\n%s", got)
	}
	if n := evalJS[int](b, `document.querySelectorAll("#history .revision")[0].querySelectorAll("button.restore").length`); n != 0 {
		t.Error("the current revision offers a restore")
	}
	b.screenshot("layer-history")

	// Restore the first revision: settings and rank come back, as a new
	// version, audited.
	first := strings.Fields(revs[2])[0]
	b.do("restore", chromedp.Click(chromedp.CSS(`#history .revision[data-seq="`+first+`"] button.restore`)), chromedp.WaitVisible(chromedp.CSS("#restored")))
	var team Layer
	e.do("GET", "/v1/policy/layers/team", e.tokens[RoleAdmin], nil).json(t, &team)
	if team.Rank != 30 || team.Version != 4 || !strings.Contains(string(team.Settings), `"blockedPlugins":["ci-runner@demo"]`) || strings.Contains(string(team.Settings), "allowedMarketplaces") {
		t.Fatalf("after restoring: rank %d version %d settings %s", team.Rank, team.Version, team.Settings)
	}
	b.open("/ui/admin/audit?action=policy.layer.restore", "table.audit")
	if got := b.text(`tr[data-action="policy.layer.restore"]`); !strings.Contains(got, "team") {
		t.Errorf("audit of the restore %q", got)
	}

	// Delete asks first.
	b.open("/ui/admin/policy/layers/org", "#delete-layer")
	b.do("delete org", chromedp.Click(chromedp.CSS("#delete-layer")), chromedp.WaitVisible(chromedp.CSS("#confirm-delete")))
	b.do("cancel", chromedp.Click(chromedp.CSS("#cancel")), chromedp.WaitVisible(chromedp.CSS("#delete-layer")))
	b.do("delete org", chromedp.Click(chromedp.CSS("#delete-layer")), chromedp.WaitVisible(chromedp.CSS("#confirm-delete")))
	b.do("confirm", chromedp.Click(chromedp.CSS("#confirm-delete")), chromedp.WaitVisible(chromedp.CSS(".msg-ok")))
	order = evalJS[[]string](b, `[...document.querySelectorAll("table.layers tbody tr")].map(r => r.cells[0].innerText)`)
	if strings.Join(order, ",") != "team" {
		t.Fatalf("layers after deleting org: %v", order)
	}
	// A deleted layer's history still offers its last document.
	b.open("/ui/admin/policy/layers/org", "#history")
	if n := evalJS[int](b, `document.querySelectorAll("#history button.restore").length`); n != 1 {
		t.Errorf("deleted layer's history offers %d restores, want 1", n)
	}
}
