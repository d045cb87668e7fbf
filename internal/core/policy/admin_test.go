package policy

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

func TestAdminGuards(t *testing.T) {
	for _, c := range []struct {
		rules string
		want  string
	}{
		{`deny contains "a" if { input.action == "install"; startswith(input.plugin, "deploy@") }`, `input.action in {"install"}`},
		{`deny contains "a" if { "install" = input.action; input.plugin == "x@y" }
deny contains "b" if { input.action == "enable"; input.plugin == "z@y" }`, `input.action in {"enable", "install"}; input.plugin in {"x@y", "z@y"}`},
		// A rule without the comparison, or with it negated, under `with`,
		// against a variable or a number: no guard.
		{`deny contains "a" if input.action == "install"
deny contains "b" if input.plugin == "x@y"`, ``},
		{`deny contains "a" if not input.action == "install"`, ``},
		{`deny contains "a" if input.action == "install" with input as {"action": "install"}`, ``},
		{`deny contains "a" if { x := "install"; input.action == x }`, ``},
		{`deny contains "a" if input.facts.enabled[0][0] == 0`, ``},
		{`deny contains "a"`, ``},
		// A local named input is not the request.
		{`deny contains "a" if { some input in [{"action": "install"}]; input.action == "install" }`, ``},
		// Helpers do not count; only deny rules do.
		{`deny contains "a" if { input.action == "load"; helper }
helper if input.plugin == "q@r"`, `input.action in {"load"}`},
	} {
		m, err := ast.ParseModuleWithOpts("a.rego", "package wharf.admin.org\n\n"+c.rules+"\n", ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, g := range adminGuards([]*ast.Module{m}) {
			got = append(got, fmt.Sprintf("%v in %v", g.ref, ast.NewSet(g.values...)))
		}
		if s := strings.Join(got, "; "); s != c.want {
			t.Errorf("%s\nguards %q, want %q", c.rules, s, c.want)
		}
	}
}

// With the guards, the admin reasons of every request are the admin
// modules' own deny sets, evaluated directly with plain OPA.
func TestAdminGuardsKeepDenies(t *testing.T) {
	mods := map[string]string{
		"org":  "package wharf.admin.org\n\ndeny contains \"no deploy\" if { input.action == \"install\"; startswith(input.plugin, \"deploy@\") }\ndeny contains \"no x\" if { input.action = \"enable\"; input.plugin == \"x@corp\" }\n",
		"dept": "package wharf.admin.dept\n\ndeny contains msg if { input.source_kind == \"user\"; input.action == \"run_hook\"; msg := sprintf(\"user hook %s\", [input.surface]) }\n",
		"team": "package wharf.admin.team\n\ndeny contains \"any\" if input.path == \"/forbidden\"\ndeny contains \"side\" if { input.action == \"sideload\"; input.path == \"/also\" }\n",
	}
	var layers []Layer
	var opts []func(*rego.Rego)
	for _, n := range []string{"org", "dept", "team"} {
		layers = append(layers, Layer{Name: n, Modules: map[string]string{"p.rego": mods[n]}})
		opts = append(opts, rego.Module(n+".rego", mods[n]))
	}
	e, err := NewEngine(layers)
	if err != nil {
		t.Fatal(err)
	}
	pq, err := rego.New(append(opts, rego.Query("data.wharf.admin"))...).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	reqs := []Request{
		{Action: ActionInstall, Plugin: mustID("deploy@corp")},
		{Action: ActionInstall, Plugin: mustID("x@corp")},
		{Action: ActionEnable, Plugin: mustID("x@corp")},
		{Action: ActionEnable, Plugin: mustID("deploy@corp")},
		{Action: ActionRunHook, From: FromUser, Surface: "hooks"},
		{Action: ActionRunHook, From: FromProject},
		{Action: ActionSideload, Path: "/forbidden"},
		{Action: ActionSideload, Path: "/also"},
		{Action: ActionSideload, Path: "/fine"},
	}
	for _, r := range reqs {
		rs, err := pq.Eval(context.Background(), rego.EvalInput(r.Input()))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for layer, v := range rs[0].Expressions[0].Value.(map[string]any) {
			for _, msg := range v.(map[string]any)["deny"].([]any) {
				want = append(want, layer+": "+msg.(string))
			}
		}
		d, err := e.Decide(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, rr := range d.Reasons {
			got = append(got, rr.Layer+": "+rr.Message)
		}
		sort.Strings(want)
		sort.Strings(got)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s %s: reasons %q, admin modules deny %q", r.Action, r.target(), got, want)
		}
	}
}
