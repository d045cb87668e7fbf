package policy

import (
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/wharfhq/wharf/settings"
)

// The AST input the engine evaluates is Input plus input.facts: the decision
// cache is keyed on Input, so the two must never drift apart.
func TestEvalInputMatchesInput(t *testing.T) {
	reqs := []Request{
		{Action: ActionInstall, Plugin: mustID("a@corp"), Marketplace: Marketplace{Name: "corp", Source: ghSource("corp/plugins")},
			RequiredBy: mustID("b@tools"), DeclaredCross: []string{"corp", "x"}, Signatures: []string{"k1"}},
		{Action: ActionAddMarketplace, Marketplace: Marketplace{Name: "m", Source: &settings.MarketplaceSource{Source: settings.KindGit, URL: "https://git.example/r.git", Ref: "v1"}}},
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
	// Every layer lists corp/tools; p3@m1 is forced off by layer dept and
	// bad1/repo7 blocked by it.
	for _, c := range []struct {
		req  Request
		want string
	}{
		{benchRequests()[0], `{"blocked_by": [], "cross_listing": [], "enabled": [], "signatures": [], "strict_listing": [0, 1, 2]}`},
		{Request{Action: ActionEnable, Plugin: mustID("p3@m1"), Marketplace: Marketplace{Name: "m1", Source: ghSource("bad1/repo7")}},
			`{"blocked_by": [[1, "exact", ""]], "enabled": [[1, false]], "strict_listing": []}`},
		{Request{Action: ActionAddMarketplace, Marketplace: Marketplace{Name: "e", Source: &settings.MarketplaceSource{Source: settings.KindGit, URL: "https://evil.example/x.git"}}},
			`{"blocked_by": [[0, "host", "^evil\\.example$"], [1, "host", "^evil\\.example$"], [2, "host", "^evil\\.example$"]], "strict_listing": []}`},
	} {
		got := c.req.evalInput(st.facts).(ast.Object).Get(ast.StringTerm("facts"))
		if got.String() != c.want {
			t.Errorf("%s %s: facts %v, want %s", c.req.Action, c.req.target(), got, c.want)
		}
	}
}
