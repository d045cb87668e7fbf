package api

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/wharfhq/wharf/internal/core/inventory"
)

// The fleet pages in a real browser: a plugin's catalog page says how many
// machines have it and how many of those run an unknown build; its fleet
// page lists them; a revocation's page shows the fleet converging.
func TestBrowserFleetPages(t *testing.T) {
	e, f := newCatalogEnv(t)
	agent := e.fleetToken(3)
	mustStatus(t, e.report(agent, invReport(1, invPlugin("deploy@corp", "1.2.0", f.deployW1), invPlugin("lint@corp", "0.3.0", fakeDigest("lint")))), 200)
	mustStatus(t, e.report(agent, invReport(2, invPlugin("lint@corp", "0.3.0", fakeDigest("lint")))), 200)
	mustStatus(t, e.report(agent, invReport(3, invPlugin("deploy@corp", "1.2.0", fakeDigest("edited")))), 200)
	res := e.do("POST", "/v1/revocations", e.tokens[RoleAdmin], map[string]string{"plugin": "deploy@corp", "version": "1.2.0", "reason": "leaks tokens"})
	mustStatus(t, res, 201)
	var w RevocationWriteResult
	res.json(t, &w)

	b := newBrowser(t, e.hs.URL)
	b.signIn(e.tokens[RoleAdmin])
	b.open("/ui/plugins/corp/deploy", "#fleet-link")
	if got := b.text("#fleet-link"); got != "on 2 machines, 1 with an unknown digest" {
		t.Fatalf("plugin page fleet line %q", got)
	}
	b.screenshot("fleet-plugin-link")
	b.do("follow the fleet link", chromedp.Click(chromedp.CSS("#fleet-link")), chromedp.WaitVisible(chromedp.CSS("#machines")))
	machines := evalJS[[]string](b, `[...document.querySelectorAll("#machines tbody tr")].map(r => r.dataset.machine + (r.dataset.unknown ? " unknown" : ""))`)
	if strings.Join(machines, ",") != machineN(1)+","+machineN(3)+" unknown" {
		t.Fatalf("fleet page machines %v", machines)
	}
	b.screenshot("fleet-plugin")
	b.do("open a machine", chromedp.Click(chromedp.CSS(`#machines a[href="/ui/fleet/machines/`+machineN(1)+`"]`)), chromedp.WaitVisible(chromedp.CSS("#machine-plugins")))
	plugins := evalJS[[]string](b, `[...document.querySelectorAll("#machine-plugins tbody tr")].map(r => r.dataset.plugin)`)
	if strings.Join(plugins, ",") != "deploy@corp,lint@corp" {
		t.Fatalf("machine page plugins %v", plugins)
	}
	b.screenshot("fleet-machine")
	b.open("/ui/fleet", "#inventory")
	if n := evalJS[int](b, `document.querySelectorAll("#inventory tbody tr").length`); n != 2 {
		t.Fatalf("inventory lists %d plugins, want 2", n)
	}
	b.screenshot("fleet-inventory")

	b.open("/ui/fleet/revocations", "#revocations")
	b.do("open the revocation", chromedp.Click(chromedp.CSS(`#revocations tr[data-id="`+w.Revocation.ID+`"] a`)), chromedp.WaitVisible(chromedp.CSS("#still-active")))
	if n := evalJS[string](b, `document.querySelector("#still-active").dataset.active`); n != "2" {
		t.Fatalf("still active on %s machines, want 2", n)
	}
	b.screenshot("revocation-converging")
	// Both machines take the bundle and report the plugin revoked.
	for _, n := range []int{1, 3} {
		p := invPlugin("deploy@corp", "1.2.0", f.deployW1)
		if n == 3 {
			p.Digest = fakeDigest("edited")
		}
		p.State, p.Reason = inventory.StateRevoked, "leaks tokens"
		mustStatus(t, e.report(agent, invReport(n, p)), 200)
	}
	b.open("/ui/fleet/revocations/"+w.Revocation.ID, "#still-active")
	if n := evalJS[string](b, `document.querySelector("#still-active").dataset.active`); n != "0" {
		t.Fatalf("after the reports, still active on %s machines", n)
	}
	b.screenshot("revocation-converged")

	// A developer has no fleet pages; ci has.
	b.signOut()
	b.signIn(e.tokens[RoleDeveloper])
	if n := evalJS[int](b, `document.querySelectorAll('a[href="/ui/fleet"]').length`); n != 0 {
		t.Error("a developer sees the fleet navigation")
	}
	b.open("/ui/plugins/corp/deploy", "h1")
	if n := evalJS[int](b, `document.querySelectorAll("#fleet-link").length`); n != 0 {
		t.Error("a developer sees the fleet line on a plugin page")
	}
	b.open("/ui/fleet", ".status-code")
	if h := b.text("h1"); h != "Not allowed" {
		t.Errorf("developer on the fleet page sees %q", h)
	}
	b.signOut()
	b.signIn(e.tokens[RoleCI])
	b.open("/ui/fleet/plugins/corp/lint", "#machines")
	if got := b.text("#fleet-count"); got != "on 1 machine, 1 with an unknown digest" {
		t.Errorf("ci sees %q for lint (on machine 2 only now; not published with a digest)", got)
	}
}
