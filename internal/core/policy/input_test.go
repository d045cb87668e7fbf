package policy

import (
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// The AST input the engine evaluates is Input plus input.facts: the decision
// cache is keyed on Input, so the two must never drift apart.
func TestEvalInputMatchesInput(t *testing.T) {
	reqs := []Request{
		{Action: ActionInstall, Plugin: mustID("a@corp"), Marketplace: Marketplace{Name: "corp", Source: ghSource("corp/plugins")},
			RequiredBy: mustID("b@tools"), DeclaredCross: []string{"corp", "x"}, Signatures: []string{"k1"}},
		{Action: ActionAddMarketplace, Marketplace: Marketplace{Name: "m", Source: &plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "https://git.example/r.git", Ref: "v1"}}},
		{Action: ActionLoadComponent, Surface: settings.SurfaceHooks, From: FromUser},
		{Action: ActionSideload, Path: "/tmp/p"},
		{Action: ActionDisable, Plugin: mustID("a@corp")},
	}
	e, err := NewEngine(benchLayers(t))
	if err != nil {
		t.Fatal(err)
	}
	st := e.cur.Load()
	for _, r := range reqs {
		want, err := ast.InterfaceToValue(r.Input())
		if err != nil {
			t.Fatal(err)
		}
		if got := r.evalInput(nil); got.Compare(want) != 0 {
			t.Errorf("%s: evalInput\n%v\nInput\n%v", r.Action, got, want)
		}
		full := r.evalInput(st.facts).(ast.Object)
		if full.Get(ast.StringTerm("facts")) == nil {
			t.Errorf("%s: no input.facts", r.Action)
		}
	}
	// Every layer lists corp/tools, so nothing is left to say about it; p3@m1
	// is forced off by layer dept and bad1/repo7 blocked by it; no layer
	// lists bad1/repo7 or the evil.example source. Empty facts are left out.
	for _, c := range []struct {
		req  Request
		want string
	}{
		{benchRequests()[0], `{}`},
		{Request{Action: ActionEnable, Plugin: mustID("p3@m1"), Marketplace: Marketplace{Name: "m1", Source: ghSource("bad1/repo7")}},
			`{"blocked_by": [[1, "exact", ""]], "enabled": [[1, false]], "strict_unlisted": [0, 1, 2]}`},
		{Request{Action: ActionAddMarketplace, Marketplace: Marketplace{Name: "e", Source: &plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "https://evil.example/x.git"}}},
			`{"blocked_by": [[0, "host", "^evil\\.example$"], [1, "host", "^evil\\.example$"], [2, "host", "^evil\\.example$"]], "strict_unlisted": [0, 1, 2]}`},
		// A dependency on another marketplace's plugin gets input.facts.cross
		// (no layer here sets allowCrossMarketplaceDependenciesOn); one in the
		// same marketplace does not.
		{Request{Action: ActionInstall, Plugin: mustID("p3@m1"), Marketplace: Marketplace{Name: "m1", Source: ghSource("corp/tools")}, RequiredBy: mustID("app@corp")},
			`{"cross": {}, "enabled": [[1, false]]}`},
		{Request{Action: ActionInstall, Plugin: mustID("p3@m1"), Marketplace: Marketplace{Name: "m1", Source: ghSource("corp/tools")}, RequiredBy: mustID("app@m1")},
			`{"enabled": [[1, false]]}`},
	} {
		got := c.req.evalInput(st.facts).(ast.Object).Get(ast.StringTerm("facts"))
		if got.String() != c.want {
			t.Errorf("%s %s: facts %v, want %s", c.req.Action, c.req.target(), got, c.want)
		}
	}
}

// Facts share terms between evaluations (a layer's enabledPlugins entries,
// signature key sets): concurrent decisions give the same answers as
// sequential ones (run with -race).
func TestConcurrentDecisionsShareFacts(t *testing.T) {
	e, err := NewEngine([]Layer{
		{Name: "org", Settings: []byte(`{"enabledPlugins":{"a@corp":false,"b@corp":true},"requireSignatures":{"corp":["k1","k2"]}}`)},
		{Name: "team", Settings: []byte(`{"enabledPlugins":{"a@corp":true},"requireSignatures":{"corp":["k3"]},"blockedMarketplaces":[{"source":"hostPattern","hostPattern":"^evil"}]}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := []Request{
		{Action: ActionInstall, Plugin: mustID("a@corp"), Marketplace: Marketplace{Name: "corp", Source: ghSource("corp/plugins")}, Signatures: []string{"k3"}},
		{Action: ActionDisable, Plugin: mustID("b@corp")},
		{Action: ActionAddMarketplace, Marketplace: Marketplace{Name: "x", Source: &plugin.MarketplaceSource{Kind: plugin.MktURL, URL: "https://evil.example/m.json"}}},
	}
	want := make([]Decision, len(reqs))
	for i, r := range reqs {
		if want[i], err = e.Decide(ctx, r); err != nil || want[i].Allowed {
			t.Fatalf("%s: %+v %v, want a denial", r.Action, want[i], err)
		}
	}
	if len(want[0].Reasons) != 2 || len(want[0].Warnings) != 1 {
		t.Fatalf("install: %+v, want forced off and one missing signature, and a warning", want[0])
	}
	done := make(chan error)
	for g := 0; g < 4; g++ {
		go func() {
			for i := 0; i < 30; i++ {
				r := reqs[i%len(reqs)]
				d, err := e.Decide(ctx, r)
				if err != nil || fmt.Sprint(d) != fmt.Sprint(want[i%len(reqs)]) {
					done <- fmt.Errorf("%s: %+v %v, want %+v", r.Action, d, err, want[i%len(reqs)])
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// Layer indexes past 63 are tracked as well as the first 64.
func TestStrictUnlistedManyLayers(t *testing.T) {
	var layers []Layer
	for i := 0; i < 70; i++ {
		repo := "corp/tools"
		if i == 3 || i == 68 {
			repo = "other/tools"
		}
		layers = append(layers, Layer{Name: fmt.Sprintf("l%d", i), Settings: []byte(`{"strictKnownMarketplaces":[{"source":"github","repo":"` + repo + `"}]}`)})
	}
	e, err := NewEngine(layers)
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Decide(ctx, Request{Action: ActionAddMarketplace, Marketplace: Marketplace{Name: "t", Source: ghSource("corp/tools")}})
	if err != nil || d.Allowed || len(d.Reasons) != 2 || d.Reasons[0].Layer != "l3" || d.Reasons[1].Layer != "l68" {
		t.Fatalf("%+v %v, want denials by l3 and l68", d, err)
	}
}
