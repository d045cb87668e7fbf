package policy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

var ctx = context.Background()

func ghSource(repo string) *plugin.MarketplaceSource {
	return &plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: repo}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The version changes when only blockedMarketplaces changes, and a Reload
// makes decisions follow.
func TestReloadPicksUpBlockedMarketplacesChange(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "managed-settings.json"), `{"enabledPlugins":{"audit@corp":true},"blockedMarketplaces":[]}`)
	e, err := Open(Sources{ManagedDir: dir}, WithCache(100))
	if err != nil {
		t.Fatal(err)
	}
	v1 := e.Version()
	if err := e.AllowAdd(ctx, "tools", *ghSource("acme/tools")); err != nil {
		t.Fatalf("allowed before the change: %v", err)
	}
	if changed, err := e.Reload(ctx); err != nil || changed {
		t.Fatalf("Reload without a change: changed=%v err=%v", changed, err)
	}
	writeFile(t, filepath.Join(dir, "managed-settings.d", "50-block.json"), `{"blockedMarketplaces":["acme/*"]}`)
	if e.Version() != v1 {
		t.Fatal("version changed before Reload")
	}
	changed, err := e.Reload(ctx)
	if err != nil || !changed {
		t.Fatalf("Reload after the change: changed=%v err=%v", changed, err)
	}
	v2 := e.Version()
	if v2 == v1 {
		t.Fatal("version did not change")
	}
	err = e.AllowAdd(ctx, "tools", *ghSource("acme/tools"))
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Layer != plugin.LayerPolicy || pe.Type != plugin.TypePolicyDenied {
		t.Fatalf("after Reload the cached allow must be gone; got %v", err)
	}
	if !strings.Contains(err.Error(), "policy layer managed, rule blockedMarketplaces") || pe.Hint == "" {
		t.Errorf("denial does not name layer and rule, or lacks a hint: %v (hint %q)", err, pe.Hint)
	}
	var den *Denial
	if !errors.As(err, &den) || den.Decision.PolicyVersion != v2 {
		t.Errorf("denial carries version %q, want %q", den.Decision.PolicyVersion, v2)
	}
	// Only the blocklist changed: the same edit inside the main file also
	// changes the version.
	writeFile(t, filepath.Join(dir, "managed-settings.json"), `{"enabledPlugins":{"audit@corp":true},"blockedMarketplaces":["other/*"]}`)
	if changed, _ := e.Reload(ctx); !changed || e.Version() == v2 {
		t.Error("editing only blockedMarketplaces in managed-settings.json did not change the version")
	}
}

func TestVersionCoversEveryInput(t *testing.T) {
	base := []Layer{{Name: "org", Settings: []byte(`{"blockedMarketplaces":[]}`), Modules: map[string]string{
		"a.rego": "package wharf.admin.org\n\ndeny contains \"x\" if input.action == \"nope\"\n"}}}
	v := func(l []Layer) string {
		e, err := NewEngine(l)
		if err != nil {
			t.Fatal(err)
		}
		return e.Version()
	}
	v0 := v(base)
	variants := map[string][]Layer{
		"blocked": {{Name: "org", Settings: []byte(`{"blockedMarketplaces":["x/*"]}`), Modules: base[0].Modules}},
		"module": {{Name: "org", Settings: base[0].Settings, Modules: map[string]string{
			"a.rego": "package wharf.admin.org\n\ndeny contains \"y\" if input.action == \"nope\"\n"}}},
		"name":     {{Name: "dept", Settings: base[0].Settings}},
		"fragment": {{Name: "org", Settings: base[0].Settings, Modules: base[0].Modules, Fragments: []settings.Document{{Name: "f.json", Data: []byte(`{}`)}}}},
		"extra":    append(append([]Layer{}, base...), Layer{Name: "team"}),
	}
	for name, l := range variants {
		if v(l) == v0 {
			t.Errorf("version unchanged after changing %s", name)
		}
	}
	if v(base) != v0 {
		t.Error("version is not stable")
	}
}

// Adding any layer never turns a denied request into an allowed one.
func TestPropertyAddingALayerNeverAllowsMore(t *testing.T) {
	owners := []string{"acme", "shady", "corp"}
	repos := []string{"acme/tools", "acme/other", "shady/x", "corp/plugins"}
	plugins := []string{"deploy@corp", "audit@corp", "lib@shared", "fmt@tools"}
	surfaces := []string{"commands", "skills", "agents", "hooks", "mcp-servers", "comands"}
	genSource := rapid.Custom(func(t *rapid.T) any {
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0:
			return rapid.SampledFrom(owners).Draw(t, "owner") + "/*"
		case 1:
			return map[string]any{"source": "github", "repo": rapid.SampledFrom(repos).Draw(t, "repo")}
		case 2:
			return map[string]any{"source": "hostPattern", "hostPattern": rapid.SampledFrom([]string{"^github\\.com$", "corp", "("}).Draw(t, "host")}
		default:
			return map[string]any{"source": "git", "url": "https://git.corp.example/" + rapid.SampledFrom(repos).Draw(t, "gitrepo")}
		}
	})
	genLayer := rapid.Custom(func(t *rapid.T) map[string]any {
		doc := map[string]any{}
		if rapid.Bool().Draw(t, "strict") {
			doc["strictKnownMarketplaces"] = rapid.SliceOfN(genSource, 0, 3).Draw(t, "strictList")
		}
		if rapid.Bool().Draw(t, "blocked") {
			doc["blockedMarketplaces"] = rapid.SliceOfN(genSource, 0, 2).Draw(t, "blockedList")
		}
		if rapid.Bool().Draw(t, "enabled") {
			m := map[string]any{}
			for _, p := range rapid.SliceOfN(rapid.SampledFrom(plugins), 1, 2).Draw(t, "forcedPlugins") {
				m[p] = rapid.SampledFrom([]any{true, false, "yes"}).Draw(t, "forcedValue")
			}
			doc["enabledPlugins"] = m
		}
		if rapid.Bool().Draw(t, "surf") {
			doc["strictPluginOnlyCustomization"] = rapid.SampledFrom([]any{true, false, "x",
				rapid.SliceOfN(rapid.SampledFrom(surfaces), 0, 3).Draw(t, "surfList")}).Draw(t, "surfValue")
		}
		if rapid.Bool().Draw(t, "cross") {
			doc["allowCrossMarketplaceDependenciesOn"] = rapid.SliceOfN(rapid.SampledFrom([]string{"shared", "tools", "corp"}), 0, 2).Draw(t, "crossList")
		}
		for _, k := range []string{"allowManagedHooksOnly", "disableSideloadFlags"} {
			if rapid.Bool().Draw(t, k) {
				doc[k] = rapid.SampledFrom([]any{true, false, "maybe"}).Draw(t, k+"Value")
			}
		}
		if rapid.Bool().Draw(t, "sig") {
			doc["requireSignatures"] = map[string]any{rapid.SampledFrom([]string{"corp", "tools"}).Draw(t, "sigMkt"): rapid.SliceOfN(rapid.SampledFrom([]string{"k1", "k2"}), 0, 2).Draw(t, "sigKeys")}
		}
		return doc
	})
	genRequest := rapid.Custom(func(t *rapid.T) Request {
		p := plugin.MustParseID(rapid.SampledFrom(plugins).Draw(t, "plugin"))
		src := ghSource(rapid.SampledFrom(repos).Draw(t, "reqRepo"))
		if rapid.Bool().Draw(t, "gitSource") {
			src = &plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "https://git.corp.example/" + src.Repo}
		}
		from := rapid.SampledFrom([]string{FromPlugin, FromManaged, FromUser, FromProject, FromBuiltin}).Draw(t, "from")
		switch rapid.SampledFrom([]Action{ActionAddMarketplace, ActionInstall, ActionEnable, ActionDisable, ActionUninstall,
			ActionLoad, ActionLoadComponent, ActionRunHook, ActionSideload, ActionCrossDependency}).Draw(t, "action") {
		case ActionAddMarketplace:
			return Request{Action: ActionAddMarketplace, Marketplace: Marketplace{Name: "m", Source: src}}
		case ActionInstall:
			r := Request{Action: ActionInstall, Plugin: p, Marketplace: Marketplace{Name: p.Source, Source: src},
				Signatures: rapid.SliceOfN(rapid.SampledFrom([]string{"k1", "k2"}), 0, 2).Draw(t, "sigs")}
			if rapid.Bool().Draw(t, "dep") {
				r.RequiredBy = plugin.MustParseID(rapid.SampledFrom(plugins).Draw(t, "requiredBy"))
			}
			return r
		case ActionEnable:
			return Request{Action: ActionEnable, Plugin: p, Marketplace: Marketplace{Name: p.Source, Source: src}}
		case ActionDisable:
			return Request{Action: ActionDisable, Plugin: p}
		case ActionUninstall:
			return Request{Action: ActionUninstall, Plugin: p}
		case ActionLoad:
			return Request{Action: ActionLoad, Plugin: p, Marketplace: Marketplace{Name: p.Source, Source: src}}
		case ActionLoadComponent:
			r := Request{Action: ActionLoadComponent, From: from, Surface: settings.Surface(rapid.SampledFrom(surfaces[:5]).Draw(t, "surface"))}
			if from == FromPlugin {
				r.Plugin = p
			}
			return r
		case ActionRunHook:
			r := Request{Action: ActionRunHook, From: from}
			if from == FromPlugin {
				r.Plugin = p
			}
			return r
		case ActionSideload:
			return Request{Action: ActionSideload, Path: "/tmp/p"}
		default:
			return Request{Action: ActionCrossDependency, Plugin: p, RequiredBy: plugin.MustParseID(rapid.SampledFrom(plugins).Draw(t, "from2")),
				DeclaredCross: rapid.SliceOfN(rapid.SampledFrom([]string{"shared", "tools", "corp"}), 0, 2).Draw(t, "declared")}
		}
	})
	rapid.Check(t, func(t *rapid.T) {
		docs := rapid.SliceOfN(genLayer, 0, 3).Draw(t, "layers")
		extra := genLayer.Draw(t, "extra")
		pos := rapid.IntRange(0, len(docs)).Draw(t, "position")
		req := genRequest.Draw(t, "request")
		var layers []Layer
		for i, d := range docs {
			layers = append(layers, Layer{Name: fmt.Sprintf("l%d", i), Settings: mustJSON(d)})
		}
		more := append(append(append([]Layer{}, layers[:pos]...), Layer{Name: "added", Settings: mustJSON(extra)}), layers[pos:]...)
		e1, err := NewEngine(layers)
		if err != nil {
			t.Fatal(err)
		}
		e2, err := NewEngine(more)
		if err != nil {
			t.Fatal(err)
		}
		d1, err1 := e1.Decide(ctx, req)
		d2, err2 := e2.Decide(ctx, req)
		if err1 != nil || err2 != nil {
			t.Fatalf("decide: %v / %v", err1, err2)
		}
		// The one documented exception: a forced state set higher wins, so
		// a layer added above the others that forces this plugin on
		// overrides a lower layer's forced off (and exempts its hooks), and
		// one that forces it off (or names it with an invalid value, which
		// fails closed to off) overrides a lower layer's forced on, so
		// disabling or uninstalling it is no longer refused. Added below
		// the others, a layer never allows more.
		if !d1.Allowed && d2.Allowed && pos < len(docs) && forcesState(extra, req.Plugin) {
			return
		}
		if !d1.Allowed && d2.Allowed {
			t.Fatalf("adding layer %s at %d turned a denial into an allow for %+v\nbefore: %+v", mustJSON(extra), pos, req, d1.Reasons)
		}
	})
}

// forcesState reports whether doc's enabledPlugins forces id on or off.
// An invalid value forces it off (fail closed), so any entry counts.
func forcesState(doc map[string]any, id plugin.ID) bool {
	m, _ := doc["enabledPlugins"].(map[string]any)
	if id.IsZero() {
		return false
	}
	_, named := m[id.String()]
	return named
}

func mustJSON(v any) []byte {
	b, err := jsonMarshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestAdminModulesMayOnlyAddDenies(t *testing.T) {
	cases := map[string]string{
		"other package": "package wharf.policy\n\ndeny contains \"x\" if true\n",
		"sibling layer": "package wharf.admin.dept\n\ndeny contains \"x\" if true\n",
		"deny not set":  "package wharf.admin.org\n\ndeny := true\n",
		"syntax":        "package wharf.admin.org\n\ndeny contains msg if {\n",
		"subpackage":    "package wharf.admin.org.extra\n\ndeny contains \"x\" if true\n",
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := NewEngine([]Layer{{Name: "org", Modules: map[string]string{"a.rego": mod}}})
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Type != TypeLayerInvalid || pe.Layer != plugin.LayerPolicy {
				t.Fatalf("err = %v, want policy-layer-invalid", err)
			}
			if !strings.Contains(pe.Hint, "wharf.admin.org") {
				t.Errorf("hint %q does not say where admin rules go", pe.Hint)
			}
		})
	}
	for _, bad := range [][]Layer{{{Name: "Org"}}, {{Name: "org"}, {Name: "org"}}} {
		if _, err := NewEngine(bad); err == nil {
			t.Errorf("NewEngine(%v) accepted bad layer names", bad)
		}
	}
}

// Two layers may each have an admin module of the same file name; both
// apply.
func TestAdminModulesOfTheSameFileNameInTwoLayers(t *testing.T) {
	e, err := NewEngine([]Layer{
		{Name: "org", Modules: map[string]string{"policy.rego": "package wharf.admin.org\n\ndeny contains \"org says no\" if input.plugin == \"x@corp\"\n"}},
		{Name: "team", Modules: map[string]string{"policy.rego": "package wharf.admin.team\n\ndeny contains \"team says no\" if input.plugin == \"y@corp\"\n"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, layer := range map[string]string{"x@corp": "org", "y@corp": "team"} {
		d, err := e.Decide(ctx, Request{Action: ActionInstall, Plugin: mustID(p)})
		if err != nil || d.Allowed || d.Reasons[0].Layer != layer {
			t.Errorf("%s: %+v %v, want a denial by layer %s", p, d, err, layer)
		}
	}
}

func TestAdminRuleRuntimeErrorFailsClosed(t *testing.T) {
	mod := "package wharf.admin.org\n\nx := 1 if input.action == \"install\"\n\nx := 2 if input.action == \"install\"\n\ndeny contains \"conflict\" if x == 3\n"
	e, err := NewEngine([]Layer{{Name: "org", Modules: map[string]string{"a.rego": mod}}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Decide(ctx, Request{Action: ActionInstall, Plugin: mustID("a@m")})
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Layer != plugin.LayerPolicy || d.Allowed {
		t.Fatalf("evaluation error must deny with a policy error: %+v %v", d, err)
	}
	if d, _ := e.Decide(ctx, Request{Action: ActionSideload, Path: "/x"}); !d.Allowed {
		t.Errorf("other actions unaffected: %+v", d)
	}
}

func TestInvalidRequests(t *testing.T) {
	e, err := NewEngine(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{
		`{"action":"explode"}`,
		`{"action":"install"}`,
		`{"action":"install","plugin":"nomarket"}`,
		`{"action":"load_component","surface":"commands","from":"nowhere"}`,
		`{"action":"install","plugin":"a@m","marketplace":{"name":"other"}}`,
		`{"action":"add_marketplace","marketplace":{"name":"x","source":{"source":"hostPattern","hostPattern":"."}}}`,
		`{"action":"install","plugin":"a@m","typo":1}`,
	} {
		_, err := ParseRequest([]byte(doc))
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Type != TypeRequestInvalid && pe.Type != plugin.TypeInvalidID {
			t.Errorf("ParseRequest(%s) = %v, want a request error", doc, err)
		}
	}
	if d, err := e.Decide(ctx, Request{Action: "explode"}); err == nil || d.Allowed {
		t.Error("Decide accepted an unknown action")
	}
}

// A malformed request names the line and column and the field, in words a
// user of the JSON knows (no Go type names).
func TestInvalidRequestPositions(t *testing.T) {
	for doc, want := range map[string]string{
		"{\n \"action\": \"install\",\n \"plugin\": 3}":      `line 3, column 14: field "plugin": expected string, got JSON number`,
		"{\n \"action\": \"install\",\n \"plugin\": \"a@m\"": "line 3, column 17: unexpected EOF",
		"{\"action\": \"install\" \"plugin\": 1}":            "line 1, column 22: invalid character",
		"{\"action\": \"install\",\n\"typo\": 1}":            `line 2, column 1: unknown field "typo"`,
	} {
		_, err := ParseRequest([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "wireRequest") {
			t.Errorf("ParseRequest(%q) = %v, want it to say %q", doc, err, want)
		}
	}
}

func TestGatesAndClosure(t *testing.T) {
	e, err := NewEngine([]Layer{{Name: "org", Settings: []byte(`{
		"strictKnownMarketplaces": ["acme/*", {"source":"github","repo":"corp/plugins"}],
		"enabledPlugins": {"audit@corp": true, "evil@corp": false},
		"allowCrossMarketplaceDependenciesOn": ["corp"],
		"disableSideloadFlags": true,
		"strictPluginOnlyCustomization": ["hooks"]
	}`)}})
	if err != nil {
		t.Fatal(err)
	}
	corp := ghSource("corp/plugins")
	acme := ghSource("acme/tools")
	closure := []InstallItem{
		{Plugin: mustID("lib@corp"), Source: corp, RequiredBy: mustID("app@tools"), DeclaredCross: []string{"corp"}},
		{Plugin: mustID("evil@corp"), Source: corp, RequiredBy: mustID("app@tools"), DeclaredCross: []string{"corp"}},
		{Plugin: mustID("app@tools"), Source: acme},
	}
	err = e.AllowInstall(ctx, closure)
	if err == nil || !strings.Contains(err.Error(), "evil@corp") || strings.Contains(err.Error(), "lib@corp") {
		t.Errorf("closure check = %v; want only evil@corp denied", err)
	}
	if err := e.AllowCross(mustID("app@tools"), mustID("lib@corp")); err != nil {
		t.Errorf("AllowCross to an allowed marketplace: %v", err)
	}
	if err := e.AllowCross(mustID("app@corp"), mustID("lib@tools")); err == nil {
		t.Error("AllowCross to a marketplace not listed was allowed")
	}
	if err := e.AllowCrossDeclared(ctx, mustID("app@tools"), mustID("lib@corp"), nil); err == nil {
		t.Error("a dependency its marketplace does not declare was allowed")
	}
	if err := e.AllowSideload(ctx, "/tmp/dev"); err == nil {
		t.Error("sideload allowed")
	}
	if err := e.AllowComponent(ctx, settings.SurfaceHooks, FromUser, plugin.ID{}); err == nil {
		t.Error("user hooks allowed under strictPluginOnlyCustomization")
	}
	if err := e.AllowComponent(ctx, settings.SurfaceCommands, FromUser, plugin.ID{}); err != nil {
		t.Errorf("user commands refused: %v", err)
	}
	if err := e.AllowHook(ctx, FromPlugin, mustID("audit@corp")); err != nil {
		t.Errorf("plugin hook refused: %v", err)
	}
	if err := e.AllowDisable(ctx, mustID("audit@corp")); err == nil {
		t.Error("forced-on plugin disabled")
	}
	if err := e.AllowUninstall(ctx, mustID("fmt@corp")); err != nil {
		t.Errorf("uninstall of an ordinary plugin: %v", err)
	}
	if err := e.AllowEnable(ctx, mustID("evil@corp"), corp); err == nil {
		t.Error("forced-off plugin enabled")
	}
	if err := e.AllowLoad(ctx, mustID("x@shady"), ghSource("shady/x")); err == nil {
		t.Error("plugin from a marketplace outside the allowlist loaded")
	}
	if err := e.AllowUpdate(ctx, "tools", *acme); err != nil {
		t.Errorf("update of an allowed marketplace: %v", err)
	}
	if f, _ := e.Forced(ctx, mustID("audit@corp")); f != "on" {
		t.Errorf("Forced = %q", f)
	}
}

// Decisions are safe under concurrent use while Replace swaps the policy.
func TestConcurrentDecideAndReplace(t *testing.T) {
	allow := []Layer{{Name: "org", Settings: []byte(`{}`)}}
	block := []Layer{{Name: "org", Settings: []byte(`{"blockedMarketplaces":["acme/*"]}`)}}
	e, err := NewEngine(allow, WithCache(16))
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Action: ActionAddMarketplace, Marketplace: Marketplace{Name: "t", Source: ghSource("acme/tools")}}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				d, err := e.Decide(ctx, req)
				if err != nil {
					t.Error(err)
					return
				}
				// Every decision is consistent with the version it reports.
				blocked := len(d.Reasons) > 0
				if blocked == d.Allowed {
					t.Errorf("inconsistent decision %+v", d)
				}
			}
		}()
	}
	for i := 0; i < 10; i++ {
		l := allow
		if i%2 == 0 {
			l = block
		}
		if _, err := e.Replace(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if d, _ := e.Decide(ctx, req); !d.Allowed {
		t.Errorf("the last Replace allowed everything, but the decision is %+v", d)
	}
}

func TestSourcesLoad(t *testing.T) {
	root := t.TempDir()
	managed := filepath.Join(root, "etc")
	writeFile(t, filepath.Join(managed, "managed-settings.json"), `{"strictKnownMarketplaces":["acme/*"]}`)
	writeFile(t, filepath.Join(managed, "managed-settings.d", "10-a.json"), `{"blockedMarketplaces":[{"source":"github","repo":"acme/bad"}]}`)
	writeFile(t, filepath.Join(managed, "rules.rego"), "package wharf.admin.managed\n\ndeny contains \"no fmt\" if input.plugin == \"fmt@tools\"\n")
	writeFile(t, filepath.Join(managed, "rules_test.rego"), "package wharf.admin.managed_test\n\ntest_x if true\n")
	team := filepath.Join(root, "Team-A.json")
	writeFile(t, team, `{"strictKnownMarketplaces":[{"source":"github","repo":"acme/tools"}]}`)
	layers, err := Sources{ManagedDir: managed, Paths: []string{team}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 2 || layers[0].Name != "managed" || layers[1].Name != "team_a" {
		t.Fatalf("layers = %+v", layers)
	}
	if len(layers[0].Fragments) != 1 || len(layers[0].Modules) != 1 {
		t.Errorf("managed layer: fragments %d modules %v", len(layers[0].Fragments), layers[0].Modules)
	}
	e, err := NewEngine(layers)
	if err != nil {
		t.Fatal(err)
	}
	for repo, want := range map[string]bool{"acme/tools": true, "acme/other": false, "acme/bad": false} {
		err := e.AllowAdd(ctx, "m", *ghSource(repo))
		if (err == nil) != want {
			t.Errorf("AllowAdd(%s) = %v, want allowed=%v", repo, err, want)
		}
	}
	if err := e.AllowInstall(ctx, []InstallItem{{Plugin: mustID("fmt@tools"), Source: ghSource("acme/tools")}}); err == nil || !strings.Contains(err.Error(), "no fmt") {
		t.Errorf("admin rule from the managed dir not applied: %v", err)
	}
	if _, err := (Sources{Paths: []string{filepath.Join(root, "missing.json")}}).Load(); err == nil {
		t.Error("missing --policy file accepted")
	}
}

func TestExportClaude(t *testing.T) {
	e, err := NewEngine([]Layer{
		{Name: "org", Settings: []byte(`{"strictKnownMarketplaces":["acme/*",{"source":"github","repo":"corp/plugins"}],
			"blockedMarketplaces":["shady/*"],"enabledPlugins":{"audit@corp":true},"strictPluginOnlyCustomization":["hooks"],
			"allowCrossMarketplaceDependenciesOn":["corp","shared"]}`)},
		{Name: "team", Settings: []byte(`{"strictKnownMarketplaces":[{"source":"github","repo":"acme/tools"},{"source":"github","repo":"other/x"}],
			"enabledPlugins":{"audit@corp":false,"fmt@corp":false},"strictPluginOnlyCustomization":["mcp-servers","comands"],
			"allowCrossMarketplaceDependenciesOn":["corp"],"disableSideloadFlags":true}`),
			Modules: map[string]string{"t.rego": "package wharf.admin.team\n\ndeny contains \"x\" if false\n"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	x := e.ExportClaude()
	b, _ := x.JSON()
	got := string(b)
	for _, want := range []string{
		`"strictKnownMarketplaces": [
    {
      "source": "github",
      "repo": "acme/tools"
    }
  ]`,
		`"blockedMarketplaces": [
    "shady/*"
  ]`,
		`"audit@corp": true`, `"fmt@corp": false`,
		`"strictPluginOnlyCustomization": [
    "hooks",
    "mcp-servers"
  ]`,
		`"allowCrossMarketplaceDependenciesOn": [
    "corp"
  ]`,
		`"disableSideloadFlags": true`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("export lacks %s:\n%s", want, got)
		}
	}
	if !strings.Contains(strings.Join(x.Warnings, "\n"), "admin Rego rules (t.rego)") {
		t.Errorf("warnings %v do not mention admin rules", x.Warnings)
	}
	// The export is itself a managed settings document wharf reads the same way.
	e2, err := NewEngine([]Layer{{Name: "exported", Settings: b}})
	if err != nil {
		t.Fatal(err)
	}
	if len(e2.Warnings()) != 0 {
		t.Errorf("exported document has warnings: %v", e2.Warnings())
	}
	for _, repo := range []string{"acme/tools", "acme/other", "other/x"} {
		a, b := e.AllowAdd(ctx, "m", *ghSource(repo)), e2.AllowAdd(ctx, "m", *ghSource(repo))
		if (a == nil) != (b == nil) {
			t.Errorf("%s: layered %v, exported %v", repo, a, b)
		}
	}
}

func TestRunAdminTests(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "team.rego"), "package wharf.admin.team\n\ndeny contains \"deploy needs a ticket\" if startswith(input.plugin, \"deploy@\")\n")
	writeFile(t, filepath.Join(dir, "team_test.rego"), `package wharf.admin.team_test

import data.wharf.admin.team

test_deploy_denied if {
	"deploy needs a ticket" in team.deny with input as {"plugin": "deploy@corp"}
}

test_fmt_allowed if {
	count(team.deny) == 0 with input as {"plugin": "fmt@corp"}
}

test_wrong if {
	count(team.deny) == 0 with input as {"plugin": "deploy@corp"}
}
`)
	res, err := RunTests(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range res {
		got[r.Name] = r.Pass
	}
	if len(got) != 3 || !got["test_deploy_denied"] || !got["test_fmt_allowed"] || got["test_wrong"] {
		t.Errorf("results = %+v", res)
	}
	if _, err := RunTests(ctx, t.TempDir()); err == nil {
		t.Error("empty directory accepted")
	}
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"action":"install","plugin":"a@m","marketplace":{"name":"m","source":{"source":"github","repo":"o/r"}},"signatures":["k"]}`,
		`{"action":"load_component","surface":"hooks","from":"user"}`,
		`{"action":"cross_dependency","plugin":"a@m","requiredBy":"b@n","declaredCross":["m"]}`,
		`{"action":"sideload","path":"/x"}`, `{}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	e, err := NewEngine([]Layer{{Name: "org", Settings: []byte(`{"strictKnownMarketplaces":["o/*"],"blockedMarketplaces":[{"source":"hostPattern","hostPattern":"x"}]}`)}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := ParseRequest(data)
		if err != nil {
			return
		}
		d, err := e.Decide(ctx, req)
		if err != nil {
			t.Fatalf("valid request %s failed: %v", data, err)
		}
		if d.Allowed == (len(d.Reasons) > 0) {
			t.Fatalf("inconsistent decision %+v", d)
		}
	})
}

// Two requests that differ in any field the evaluation reads never share a
// cache entry.
func TestCacheKeySeparatesRequests(t *testing.T) {
	e, err := NewEngine([]Layer{{Name: "org", Settings: []byte(`{"requireSignatures":{"corp":["k1"]},"blockedMarketplaces":[{"source":"github","repo":"corp/evil","ref":"x"}]}`)}}, WithCache(100))
	if err != nil {
		t.Fatal(err)
	}
	base := Request{Action: ActionInstall, Plugin: mustID("a@corp"), Marketplace: Marketplace{Name: "corp", Source: ghSource("corp/plugins")}, Signatures: []string{"k1"}}
	evil := base
	evil.Marketplace.Source = &plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "corp/evil", Ref: "x"}
	unsigned := base
	unsigned.Signatures = nil
	for i := 0; i < 2; i++ { // second round is served from the cache
		if d, _ := e.Decide(ctx, base); !d.Allowed {
			t.Fatalf("base denied: %+v", d)
		}
		if d, _ := e.Decide(ctx, evil); d.Allowed {
			t.Fatal("blocked ref allowed from the cache")
		}
		if d, _ := e.Decide(ctx, unsigned); d.Allowed {
			t.Fatal("unsigned install allowed from the cache")
		}
	}
}
