package policy

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/plugin"
)

// denyUnlisted is an admin rule that denies installing anything but
// listed@corp.
const denyUnlisted = `package wharf.admin.LAYER
deny contains msg if {
	input.action == "install"
	input.plugin != "listed@corp"
	msg := sprintf("%s is not on the approved list", [input.plugin])
}
`

func waiverLayers(t *testing.T, until *time.Time) []Layer {
	t.Helper()
	ws := Waivers{
		{Request: "q-0000000000000001", Plugin: "tool@corp", Until: until, By: "tok_admin", Note: "for the migration", Approved: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)},
		{Request: "q-0000000000000002", Plugin: "off@corp", By: "tok_admin", Approved: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)},
		{Request: "q-0000000000000003", Plugin: "hard@corp", By: "tok_admin", Approved: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)},
		{Request: "q-0000000000000004", Plugin: "strict@corp", By: "tok_admin", Approved: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)},
		{Request: "q-0000000000000005", Plugin: "x@blocked", By: "tok_admin", Approved: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)},
	}
	return []Layer{
		// The machine's managed directory: its deny is not waivable, and
		// no waiver is ever attached to it.
		{Name: "managed", Managed: true, Settings: []byte(`{"enabledPlugins": {"hard@corp": false}}`)},
		// The server's layers, as ReadBundle gives them: each carries the
		// bundle's waivers. org allows waivers, team does not.
		{Name: "org", Waivers: ws, Settings: []byte(`{"allowWaivers": true, "enabledPlugins": {"off@corp": false},
			"blockedMarketplaces": [{"source": "github", "repo": "evil/plugins"}]}`),
			Modules: map[string]string{"org.rego": strings.ReplaceAll(denyUnlisted, "LAYER", "org")}},
		{Name: "team", Waivers: ws, Settings: []byte(`{}`),
			Modules: map[string]string{"team.rego": `package wharf.admin.team
deny contains "strict@corp is refused by the team" if input.plugin == "strict@corp"
`}},
	}
}

func install(t *testing.T, e *Engine, id string, m Marketplace) Decision {
	t.Helper()
	d, err := e.Decide(context.Background(), Request{Action: ActionInstall, Plugin: plugin.MustParseID(id), Marketplace: m})
	if err != nil && d.Allowed {
		t.Fatal(err)
	}
	return d
}

func reasonsOf(d Decision) string {
	var out []string
	for _, r := range d.Reasons {
		out = append(out, r.Layer+"/"+r.Rule+": "+r.Message)
	}
	return strings.Join(out, "; ")
}

// A waiver lifts the enabledPlugins false and admin denials of its own
// bundle's layers that allow waivers, for its plugin only; never a managed
// directory's deny, a layer that does not allow waivers, or a
// marketplace rule.
func TestWaiverLiftsOnlyWaivableDenials(t *testing.T) {
	e, err := NewEngine(waiverLayers(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	d := install(t, e, "tool@corp", Marketplace{})
	if !d.Allowed {
		t.Fatalf("tool@corp with an approved request: denied: %s", reasonsOf(d))
	}
	if w := strings.Join(d.Warnings, "\n"); !strings.Contains(w, "tool@corp: request q-0000000000000001 approved by tok_admin: for the migration (it lifts what layers with allowWaivers deny)") {
		t.Fatalf("warnings do not name the request: %q", w)
	}
	if d := install(t, e, "other@corp", Marketplace{}); d.Allowed || !strings.Contains(reasonsOf(d), "org/admin") {
		t.Fatalf("other@corp has no request, must stay denied by org: %s", reasonsOf(d))
	}
	if d := install(t, e, "off@corp", Marketplace{}); !d.Allowed || d.Forced != "" {
		t.Fatalf("off@corp (org enabledPlugins false and admin deny, both waived): %s forced %q", reasonsOf(d), d.Forced)
	}
	if d := install(t, e, "hard@corp", Marketplace{}); d.Allowed || !strings.Contains(reasonsOf(d), "managed/enabledPlugins") {
		t.Fatalf("a request must not loosen the managed directory's deny: %s", reasonsOf(d))
	}
	if d := install(t, e, "strict@corp", Marketplace{}); d.Allowed || !strings.Contains(reasonsOf(d), "team/admin") || strings.Contains(reasonsOf(d), "org/") {
		t.Fatalf("team does not allow waivers, so its deny holds (org's is lifted): %s", reasonsOf(d))
	}
	blocked := Marketplace{Name: "blocked", Source: &plugin.MarketplaceSource{Kind: "github", Repo: "evil/plugins"}}
	if d := install(t, e, "x@blocked", blocked); d.Allowed || !strings.Contains(reasonsOf(d), "org/blockedMarketplaces") {
		t.Fatalf("a request does not lift a marketplace block: %s", reasonsOf(d))
	}
}

// Without allowWaivers (or with a value that is not a boolean) the same
// waivers lift nothing; the invalid value warns.
func TestWaiverNeedsAllowWaivers(t *testing.T) {
	for _, v := range []string{`false`, `"yes"`, ``} {
		layers := waiverLayers(t, nil)
		s := `{"enabledPlugins": {"off@corp": false}}`
		if v != "" {
			s = `{"allowWaivers": ` + v + `, "enabledPlugins": {"off@corp": false}}`
		}
		layers[1].Settings = []byte(s)
		e, err := NewEngine(layers)
		if err != nil {
			t.Fatal(err)
		}
		if d := install(t, e, "tool@corp", Marketplace{}); d.Allowed {
			t.Fatalf("allowWaivers %s: tool@corp allowed", v)
		}
		if d := install(t, e, "off@corp", Marketplace{}); d.Allowed || d.Forced != "off" {
			t.Fatalf("allowWaivers %s: off@corp %v forced %q", v, d.Allowed, d.Forced)
		}
		warned := strings.Contains(strings.Join(e.Warnings(), "\n"), "allowWaivers must be true or false")
		if warned != (v == `"yes"`) {
			t.Fatalf("allowWaivers %s: warnings %q", v, e.Warnings())
		}
	}
}

// A layer that did not come from the bundle carrying the waiver (a
// --policy path, a managed directory) cannot make it lift its denials,
// even if it says allowWaivers: only the layers the waiver is attached to
// count.
func TestWaiverStaysWithItsBundle(t *testing.T) {
	layers := waiverLayers(t, nil)
	layers[0].Settings = []byte(`{"allowWaivers": true, "enabledPlugins": {"hard@corp": false}}`)
	layers = append(layers, Layer{Name: "mine", Settings: []byte(`{"allowWaivers": true}`),
		Modules: map[string]string{"mine.rego": strings.ReplaceAll(denyUnlisted, "LAYER", "mine")}})
	e, err := NewEngine(layers)
	if err != nil {
		t.Fatal(err)
	}
	if d := install(t, e, "hard@corp", Marketplace{}); d.Allowed {
		t.Fatal("allowWaivers in the managed directory made another bundle's waiver lift its deny")
	}
	if d := install(t, e, "tool@corp", Marketplace{}); d.Allowed || !strings.Contains(reasonsOf(d), "mine/admin") {
		t.Fatalf("a lower layer without the waiver still denies: %s", reasonsOf(d))
	}
}

// A waiver until a date stops lifting at the first load after it: the
// policy version changes, and the plugin is denied again.
func TestWaiverExpiresAtTheNextLoad(t *testing.T) {
	until := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	now := until.Add(-time.Hour)
	clock := func() time.Time { return now }
	layers := waiverLayers(t, &until)
	e, err := NewEngine(layers, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	d := install(t, e, "tool@corp", Marketplace{})
	if !d.Allowed || !strings.Contains(strings.Join(d.Warnings, "\n"), "until 2027-01-01T00:00:00Z") {
		t.Fatalf("before the date: %v %s %q", d.Allowed, reasonsOf(d), d.Warnings)
	}
	before := e.Version()
	now = until
	changed, err := e.Replace(context.Background(), layers)
	if err != nil || !changed || e.Version() == before {
		t.Fatalf("Replace after the date: changed %v, err %v, version %s (was %s)", changed, err, e.Version(), before)
	}
	if d := install(t, e, "tool@corp", Marketplace{}); d.Allowed || !strings.Contains(reasonsOf(d), "org/admin") {
		t.Fatalf("after the date: %s", reasonsOf(d))
	}
	// A new engine at that time (the next command) denies too.
	e2, err := NewEngine(layers, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	if d := install(t, e2, "tool@corp", Marketplace{}); d.Allowed || e2.Version() != e.Version() {
		t.Fatalf("a fresh engine after the date: allowed %v, version %s want %s", d.Allowed, e2.Version(), e.Version())
	}
}

func signedWithWaivers(t *testing.T, s *testSigner, ws any) []byte {
	t.Helper()
	return signedWharfData(t, s, map[string]any{
		"policy":  map[string]any{"version": "sha256:w", "revision": 3, "layers": []any{map[string]any{"name": "org", "rank": 0, "version": 1, "settings": map[string]any{"allowWaivers": true}}}},
		"waivers": ws,
	})
}

// ReadBundle attaches the bundle's waivers to each of its layers, and
// refuses a signed bundle with a malformed waiver whole.
func TestReadBundleWaivers(t *testing.T) {
	s := newTestSigner(t)
	layers, info, err := ReadBundle(bytes.NewReader(signedWithWaivers(t, s, []map[string]any{
		{"request": "q-00000000000000aa", "plugin": "tool@corp", "by": "tok_a", "approved": "2026-12-03T00:00:00Z", "until": "2027-01-01T00:00:00Z"},
	})), s.pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Waivers) != 1 || len(layers) != 1 || len(layers[0].Waivers) != 1 || layers[0].Waivers[0].Until == nil {
		t.Fatalf("info %+v layers %+v", info.Waivers, layers)
	}
	for _, bad := range []map[string]any{
		{"plugin": "tool@corp", "by": "tok_a"},
		{"request": "q-1", "plugin": "not an id", "by": "tok_a"},
		{"request": "q-1", "plugin": "tool@corp"},
	} {
		_, _, err := ReadBundle(bytes.NewReader(signedWithWaivers(t, s, []any{bad})), s.pubPEM)
		if l, typ := errType(err); l != plugin.LayerTrust || typ != TypeBundleInvalid {
			t.Fatalf("%v: err = %v, want %s", bad, err, TypeBundleInvalid)
		}
	}
}

// A waiver lifts the capability denials (deniedCapabilities,
// requireDeclaredHosts, deniedFindings) of its own bundle's layers that
// allow waivers, for its plugin only, as it lifts their enabledPlugins
// false and admin denials; never those of a managed directory, of a
// layer that does not allow waivers, or an unreadable deniedCapabilities
// (fail closed).
func TestWaiverLiftsCapabilityDenials(t *testing.T) {
	v2 := contentOf(t, "update/v2") // an MCP server that runs npx -y at each start
	dl := contentOf(t, "malicious/download-and-run")
	ws := Waivers{{Request: "q-0000000000000009", Plugin: "sync@corp", By: "tok_admin", Note: "reviewed", Approved: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)}}
	fetch := `"deniedCapabilities": [{"kind": "mcp-runtime-fetch"}]`
	waivable := func(rest string) Layer {
		return Layer{Name: "org", Waivers: ws, Settings: []byte(`{"allowWaivers": true, ` + rest + `}`)}
	}
	for _, c := range []struct {
		name    string
		layers  []Layer
		id      string
		content *Content
		want    string // the reasons; "" allowed
	}{
		{"the server's waivable layer", []Layer{waivable(fetch)}, "sync@corp", v2, ""},
		{"deniedFindings of the waivable layer", []Layer{waivable(`"deniedFindings": ["download-and-run"]`)}, "sync@corp", dl, ""},
		{"another plugin", []Layer{waivable(fetch)}, "other@corp", v2, "org/deniedCapabilities"},
		{"a layer without allowWaivers", []Layer{{Name: "org", Waivers: ws, Settings: []byte(`{` + fetch + `}`)}}, "sync@corp", v2, "org/deniedCapabilities"},
		{"a managed directory", []Layer{{Name: "managed", Managed: true, Settings: []byte(`{` + fetch + `}`)}, waivable(fetch)}, "sync@corp", v2, "managed/deniedCapabilities"},
		{"an unreadable deniedCapabilities", []Layer{waivable(`"deniedCapabilities": [{"kind": "no-such-kind"}]`)}, "sync@corp", v2, "org/deniedCapabilities"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := NewEngine(c.layers)
			if err != nil {
				t.Fatal(err)
			}
			d, err := e.Decide(context.Background(), Request{Action: ActionInstall, Plugin: plugin.MustParseID(c.id),
				Marketplace: Marketplace{Name: "corp", Source: ghSource("corp/plugins")}, Content: c.content})
			if err != nil && d.Allowed {
				t.Fatal(err)
			}
			got := reasonsOf(d)
			switch {
			case c.want == "" && !d.Allowed:
				t.Fatalf("denied: %s", got)
			case c.want != "" && (d.Allowed || !strings.HasPrefix(got, c.want) || len(d.Reasons) != 1):
				t.Fatalf("reasons %q; want only %s", got, c.want)
			}
		})
	}
}
