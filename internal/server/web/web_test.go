package web

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// diamond is app → ci, secrets → core, plus a missing dependency of ci.
func diamond() ([]GraphNode, []GraphEdge) {
	nodes := []GraphNode{
		{ID: "app@demo", Label: "app@demo", State: "root"},
		{ID: "ci@demo", Label: "ci@demo", State: "allowed"},
		{ID: "secrets@demo", Label: "secrets@demo", State: "blocked"},
		{ID: "core@demo", Label: "core@demo", State: "allowed"},
		{ID: "ghost@demo", Label: "ghost@demo", State: "missing"},
	}
	edges := []GraphEdge{
		{"app@demo", "secrets@demo"}, {"app@demo", "ci@demo"},
		{"ci@demo", "core@demo"}, {"secrets@demo", "core@demo"}, {"ci@demo", "ghost@demo"},
	}
	return nodes, edges
}

func TestLayoutGraphLayersByDepth(t *testing.T) {
	nodes, edges := diamond()
	g := LayoutGraph("app@demo", nodes, edges)
	depth := map[string]int{}
	byID := map[string]PlacedNode{}
	for _, n := range g.Nodes {
		depth[n.ID] = n.Depth
		byID[n.ID] = n
	}
	want := map[string]int{"app@demo": 0, "ci@demo": 1, "secrets@demo": 1, "core@demo": 2, "ghost@demo": 2}
	if !reflect.DeepEqual(depth, want) {
		t.Fatalf("depths %v, want %v", depth, want)
	}
	// Same layer, same row; deeper layers lower; no two boxes overlap.
	for _, a := range g.Nodes {
		if a.Y != byID["app@demo"].Y+a.Depth*(nodeH+gapY) {
			t.Errorf("%s at y=%d for depth %d", a.ID, a.Y, a.Depth)
		}
		if a.X < 0 || a.X+a.W > g.Width || a.Y+a.H > g.Height {
			t.Errorf("%s outside the %dx%d canvas", a.ID, g.Width, g.Height)
		}
		for _, b := range g.Nodes {
			if a.ID != b.ID && a.Y == b.Y && a.X < b.X+b.W && b.X < a.X+a.W {
				t.Errorf("%s overlaps %s", a.ID, b.ID)
			}
		}
	}
	if len(g.Edges) != len(edges) {
		t.Fatalf("%d edges, want %d", len(g.Edges), len(edges))
	}
	for _, e := range g.Edges {
		from, to := byID[e.From], byID[e.To]
		if e.X1 != from.X+from.W/2 || e.Y1 != from.Y+from.H || e.X2 != to.X+to.W/2 || e.Y2 != to.Y {
			t.Errorf("edge %s→%s does not join the boxes: %+v", e.From, e.To, e)
		}
	}
}

func TestLayoutGraphIsDeterministic(t *testing.T) {
	nodes, edges := diamond()
	want := LayoutGraph("app@demo", nodes, edges)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50; i++ {
		n := append([]GraphNode(nil), nodes...)
		e := append([]GraphEdge(nil), edges...)
		r.Shuffle(len(n), func(i, j int) { n[i], n[j] = n[j], n[i] })
		r.Shuffle(len(e), func(i, j int) { e[i], e[j] = e[j], e[i] })
		if got := LayoutGraph("app@demo", n, e); !reflect.DeepEqual(got, want) {
			t.Fatalf("input order changed the layout:\n%+v\n%+v", got, want)
		}
	}
}

func TestLayoutGraphCycleAndStrays(t *testing.T) {
	nodes := []GraphNode{{ID: "a", Label: "a"}, {ID: "b", Label: "b"}, {ID: "stray", Label: "a-very-long-plugin-name@some-marketplace"}}
	edges := []GraphEdge{{"a", "b"}, {"b", "a"}, {"a", "nowhere"}}
	g := LayoutGraph("a", nodes, edges)
	depth := map[string]int{}
	for _, n := range g.Nodes {
		depth[n.ID] = n.Depth
		if n.ID == "stray" && (n.Text != "a-very-long-plugin-name…" || n.Label != "a-very-long-plugin-name@some-marketplace") {
			t.Errorf("long label shortened to %q", n.Text)
		}
	}
	if depth["a"] != 0 || depth["b"] != 1 || depth["stray"] != 2 {
		t.Errorf("depths %v", depth)
	}
	if len(g.Edges) != 2 {
		t.Errorf("edges to unknown nodes kept: %+v", g.Edges)
	}
	if empty := LayoutGraph("x", nil, nil); len(empty.Nodes) != 0 || empty.Height != 0 {
		t.Errorf("empty graph: %+v", empty)
	}
}

func TestRenderEveryPage(t *testing.T) {
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	views := map[string]any{
		PageSignIn:  SignInView{Layout: Layout{Title: "Sign in"}},
		PageCatalog: CatalogView{Layout: Layout{Title: "Catalog", SignedIn: true}},
		PagePlugin:  PluginView{},
		PagePolicy:  PolicyView{Layout: Layout{IsAdmin: true, SignedIn: true}},
		PageLayer:   LayerView{New: true, Impact: &ImpactView{}},
		PageAudit:   AuditView{},
		PageError:   ErrorView{Status: 404, Heading: "Not found"},

		PageInventory:   InventoryView{Plugins: []FleetPluginRow{{ID: "a@b", Versions: []CountRow{{Value: "1", Count: 2}}}}},
		PageFleetPlugin: FleetPluginView{Plugin: FleetPluginRow{ID: "a@b"}, Machines: []FleetMachineRow{{ID: "m-1", Installs: []FleetInstall{{UnknownDigest: true}}}}},
		PageMachine:     MachineView{ID: "m-1"},
		PageRevocations: RevocationsView{Revocations: []RevocationRow{{ID: "r-1"}}},
		PageRevocation:  RevocationView{Revocation: RevocationRow{ID: "r-1"}, Active: 1, Machines: []FleetMachineRow{{ID: "m-1"}}},
		PageChannels:    ChannelsView{Channels: []ChannelRow{{Name: "approved", Page: "/ui/channels/approved"}}},
		PageChannel: ChannelView{ChannelRow: ChannelRow{Name: "approved"}, Entries: []ChannelEntryRow{{Name: "lint"}},
			LeftOut: []LeftOutRow{{Plugin: "risky@corp", Kind: "denied"}}},
		PageRequests: RequestsView{Requests: []RequestRow{{ID: "q-1", Status: "pending", ApproveURL: "/a", DenyURL: "/d"}}},
	}
	for _, p := range pages {
		var buf bytes.Buffer
		if err := r.Render(&buf, p, views[p]); err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		for _, want := range []string{"<!doctype html>", `<html lang="en">`, `href="#main"`, "<h1>"} {
			if !strings.Contains(buf.String(), want) {
				t.Errorf("%s: missing %q", p, want)
			}
		}
	}
	var buf bytes.Buffer
	if err := r.Render(&buf, "nope", nil); err == nil || buf.Len() != 0 {
		t.Errorf("unknown page: err=%v, wrote %d bytes", err, buf.Len())
	}
	// A template error writes nothing: half a page is never sent.
	buf.Reset()
	if err := r.Render(&buf, PageCatalog, struct{ Title string }{"x"}); err == nil || buf.Len() != 0 {
		t.Errorf("wrong view: err=%v, wrote %d bytes", err, buf.Len())
	}
}

// Marketplace entries are hostile input: nothing from them becomes markup.
func TestRenderEscapesMarketplaceText(t *testing.T) {
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	evil := `<script>alert(1)</script>`
	v := PluginView{Plugin: PluginRow{Name: evil, Marketplace: "m", Description: evil, Tags: []string{`"><img src=x onerror=alert(1)>`},
		URL: "javascript:alert(1)", Decision: DecisionView{Reasons: []ReasonView{{Layer: evil, Rule: evil, Message: evil}}}},
		Components: []ComponentGroup{{Kind: `x" onmouseover="alert(1)`, Title: evil, Items: []ComponentItem{{Name: evil, Namespaced: evil, Path: evil}}}},
		Graph:      LayoutGraph(evil, []GraphNode{{ID: evil, Label: evil, URL: "javascript:alert(1)", State: "root"}}, nil)}
	var buf bytes.Buffer
	if err := r.Render(&buf, PagePlugin, v); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, bad := range []string{"<script>", "<img", `href="javascript:`, `" onmouseover="`} {
		if strings.Contains(out, bad) {
			t.Errorf("rendered page contains %q", bad)
		}
	}
	if !strings.Contains(out, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("hostile text is not shown escaped")
	}
}

func TestStaticHandler(t *testing.T) {
	h := StaticHandler("/ui/static/")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/static/style.css", nil))
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/css") ||
		!strings.Contains(rec.Header().Get("Cache-Control"), "max-age") || !strings.Contains(rec.Body.String(), "prefers-color-scheme: dark") {
		t.Errorf("style.css: %d %v", rec.Code, rec.Header())
	}
	for _, p := range []string{"/ui/static/", "/ui/static/missing.js"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("%s: %d", p, rec.Code)
		}
	}
}

// The impact preview groups plugins by change and reasons, largest group
// first, and folds large groups.
func TestGroupImpact(t *testing.T) {
	blocked := func(msg string) DecisionView {
		return DecisionView{Label: "blocked", Reasons: []ReasonView{{Layer: "org", Rule: "blockedPlugins", Message: msg}}}
	}
	allowed := DecisionView{Allowed: true, Label: "allowed"}
	var rows []ImpactRow
	for i := 0; i < 92; i++ {
		rows = append(rows, ImpactRow{ID: fmt.Sprintf("p%02d@m", i), Before: allowed, After: blocked("marketplace m is blocked")})
	}
	rows = append(rows[:3], append([]ImpactRow{{ID: "odd@m", Before: allowed, After: blocked("odd is blocked")}}, rows[3:]...)...)
	rows = append(rows, ImpactRow{ID: "back@m", Before: blocked("was blocked"), After: allowed})
	g := GroupImpact(rows)
	if len(g) != 3 {
		t.Fatalf("%d groups, want 3", len(g))
	}
	if len(g[0].Rows) != 92 || g[0].Reasons[0].Message != "marketplace m is blocked" || g[0].Open {
		t.Errorf("first group: %d rows, %v, open %v", len(g[0].Rows), g[0].Reasons, g[0].Open)
	}
	if g[0].Rows[0].ID != "p00@m" || g[0].Rows[3].ID != "p03@m" {
		t.Errorf("rows out of order: %s %s", g[0].Rows[0].ID, g[0].Rows[3].ID)
	}
	if len(g[1].Rows) != 1 || g[1].Rows[0].ID != "odd@m" || !g[1].Open {
		t.Errorf("second group %+v", g[1])
	}
	if g[2].Rows[0].ID != "back@m" || g[2].After.Label != "allowed" {
		t.Errorf("third group %+v", g[2])
	}
}

// Charts are laid out on the server: points inside the plot area, y
// growing down as values grow up, ticks on round numbers up to the top.
func TestLineChart(t *testing.T) {
	c := LineChart("c", "t", "d", []string{"d1", "d2", "d3"}, []ChartSeries{{Name: "a", Values: []int{0, 4, 7}}, {Name: "b", Values: []int{7, 3, 0}}}, 1, "revoked")
	if len(c.Lines) != 2 || c.Lines[0].Class == c.Lines[1].Class {
		t.Fatalf("lines %+v", c.Lines)
	}
	a := c.Lines[0].Dots
	if a[0].Y != c.Bottom || !(a[1].Y < a[0].Y && a[2].Y < a[1].Y) || a[0].X != c.Left || a[2].X != c.Right {
		t.Errorf("points of a: %+v (plot %v..%v × %v..%v)", a, c.Left, c.Right, c.Top, c.Bottom)
	}
	var ticks []string
	for _, tk := range c.YTicks {
		ticks = append(ticks, tk.Label)
	}
	if strings.Join(ticks, ",") != "0,2,4,6,8" {
		t.Errorf("y ticks %v", ticks)
	}
	if c.MarkerLabel != "revoked" || c.Marker != a[1].X {
		t.Errorf("marker at %v, want %v", c.Marker, a[1].X)
	}
	if !strings.HasPrefix(c.Lines[0].Points, "48.0,236.0 ") {
		t.Errorf("points %q", c.Lines[0].Points)
	}
	one := LineChart("o", "t", "d", []string{"d1"}, []ChartSeries{{Name: "a", Values: []int{0}}}, -1, "")
	if one.Lines[0].Dots[0].X != (one.Left+one.Right)/2 || one.MarkerLabel != "" || len(one.YTicks) < 2 {
		t.Errorf("one point: %+v", one)
	}
	var buf bytes.Buffer
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Render(&buf, PageRevocation, RevocationView{Convergence: &c}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `<polyline points="48.0,236.0`) || !strings.Contains(buf.String(), `class="marker"`) {
		t.Errorf("rendered chart:\n%s", buf.String())
	}
}
