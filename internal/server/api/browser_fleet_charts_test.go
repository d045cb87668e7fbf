package api

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wharfhq/wharf/internal/core/inventory"
)

type dayClock struct {
	mu    sync.Mutex
	t, t0 time.Time
}

func (c *dayClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *dayClock) next()          { c.mu.Lock(); c.t = c.t.Add(24 * time.Hour); c.mu.Unlock() }

// The fleet's charts, drawn by the server as SVG: a plugin's adoption by
// version over four days, and a revocation's convergence; a digest the
// server's channel serves is not flagged unknown.
func TestBrowserFleetCharts(t *testing.T) {
	needGit(t)
	// The fleet's clock moves a day at a time; the third day is today, when
	// the revocation is made (the server's own clock).
	clk := &dayClock{t: time.Now().UTC().Add(-48 * time.Hour)}
	day := func(i int) string { return clk.t0.AddDate(0, 0, i).Format(time.DateOnly) }
	clk.t0 = clk.t
	e, f := newCatalogEnv(t, func(d *Deps) { d.Inventory.Now = clk.Now })
	agent := e.fleetToken(10)
	b := newBrowser(t, e.hs.URL)
	b.signIn(e.tokens[RoleAdmin])
	view := func() {
		b.open("/ui/fleet/plugins/corp/deploy", "h1")
		if evalJS[int](b, `document.querySelectorAll("#adoption").length`) == 0 {
			t.Fatalf("no adoption chart: %s", b.text("main"))
		}
	}
	v13 := fakeDigest("deploy 1.3.0")

	// Day 1: four machines run 1.2.0.
	for n := 1; n <= 4; n++ {
		mustStatus(t, e.report(agent, invReport(n, invPlugin("deploy@corp", "1.2.0", f.deployW1))), 200)
	}
	view()
	// Day 2: two move to 1.3.0. Day 3: a third; 1.2.0 is revoked.
	clk.next()
	for _, n := range []int{1, 2} {
		mustStatus(t, e.report(agent, invReport(n, invPlugin("deploy@corp", "1.3.0", v13))), 200)
	}
	view()
	clk.next()
	mustStatus(t, e.report(agent, invReport(3, invPlugin("deploy@corp", "1.3.0", v13))), 200)
	res := e.do("POST", "/v1/revocations", e.tokens[RoleAdmin], map[string]string{"plugin": "deploy@corp", "version": "1.2.0", "reason": "leaks tokens"})
	mustStatus(t, res, 201)
	var w RevocationWriteResult
	res.json(t, &w)
	view()
	// Day 4: the last machine reports 1.2.0 revoked.
	clk.next()
	p := invPlugin("deploy@corp", "1.2.0", f.deployW1)
	p.State, p.Reason = inventory.StateRevoked, "leaks tokens"
	mustStatus(t, e.report(agent, invReport(4, p)), 200)
	view()

	table := func(id string) []string {
		return evalJS[[]string](b, `[...document.querySelectorAll("#`+id+` table.chart-data tr")].map(r => [...r.cells].map(c => c.textContent.trim()).join(" "))`)
	}
	want := []string{"Day 1.3.0 1.2.0", day(0) + " 0 4", day(1) + " 2 2", day(2) + " 3 1", day(3) + " 3 1"}
	if got := table("adoption"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("adoption data:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	lines := evalJS[[]string](b, `[...document.querySelectorAll("#adoption svg g.line")].map(g => g.dataset.series + " " + g.querySelectorAll("circle").length + " " + g.querySelector("polyline").getAttribute("points").split(" ").length)`)
	if strings.Join(lines, ",") != "1.3.0 4 4,1.2.0 4 4" {
		t.Errorf("adoption lines %v", lines)
	}
	// The lines are drawn: 1.3.0 rises, 1.2.0 falls (SVG y grows down).
	ys := evalJS[[]float64](b, `[...document.querySelectorAll('#adoption g.line[data-series="1.3.0"] circle')].map(c => +c.getAttribute("cy"))`)
	if len(ys) != 4 || !(ys[0] > ys[1] && ys[1] > ys[2] && ys[2] == ys[3]) {
		t.Errorf("1.3.0 points' y %v", ys)
	}
	if wpx := evalJS[float64](b, `document.querySelector("#adoption svg").getBoundingClientRect().width`); wpx < 300 {
		t.Errorf("chart is %v px wide", wpx)
	}
	shot(b, "#adoption", "fleet-adoption-chart")

	b.open("/ui/fleet/revocations/"+w.Revocation.ID, "#convergence")
	want = []string{"Day machines running it active", day(0) + " 4", day(1) + " 2", day(2) + " 1", day(3) + " 0"}
	if got := table("convergence"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("convergence data:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := evalJS[int](b, `document.querySelectorAll("#convergence line.marker").length`); n != 1 {
		t.Errorf("%d revocation markers", n)
	}
	shot(b, "#convergence", "revocation-convergence-chart")

	// Unknown digests: lint is published without a digest; the digest the
	// server's channel serves for it is known, another is not.
	var ch ChannelView
	e.do("GET", "/v1/channels/approved", e.tokens[RoleAdmin], nil).json(t, &ch)
	served := ""
	for _, en := range ch.Entries {
		if en.Origin == "lint@corp" {
			served = en.Digest
		}
	}
	if served == "" {
		t.Fatalf("the approved channel has no lint: %+v", ch.Entries)
	}
	mustStatus(t, e.report(agent, invReport(5, invPlugin("lint@corp", "0.3.0", served))), 200)
	mustStatus(t, e.report(agent, invReport(6, invPlugin("lint@corp", "0.3.0", fakeDigest("edited lint")))), 200)
	b.open("/ui/fleet/plugins/corp/lint", "#machines")
	machines := evalJS[[]string](b, `[...document.querySelectorAll("#machines tbody tr")].map(r => r.dataset.machine + (r.dataset.unknown ? " unknown" : ""))`)
	if strings.Join(machines, ",") != machineN(5)+","+machineN(6)+" unknown" {
		t.Errorf("lint machines %v: only the edited digest is unknown", machines)
	}
	if got := b.text("#fleet-count"); got != "on 2 machines, 1 with an unknown digest" {
		t.Errorf("lint fleet line %q", got)
	}
}

// shot saves the element's screenshot as <name>.png in the artifacts dir.
func shot(b *browser, sel, name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", sel, err)
	}
	if err := os.WriteFile(filepath.Join(b.artifacts, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
