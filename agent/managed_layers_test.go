package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
	"pgregory.net/rapid"
)

// layeredEnv is what wharf reads from a system managed directory and a
// further one (WHARF_MANAGED_DIR): the policy engine over both layers and
// the settings snapshot the agent reads.
type layeredEnv struct {
	t          *testing.T
	system     string
	extra      string
	home       string
	engine     *policy.Engine
	snap       *settings.Snapshot
	servers    []policy.ManagedServer
	serversErr error
}

func (e *layeredEnv) decide(req policy.Request) policy.Decision {
	e.t.Helper()
	d, err := e.engine.Decide(context.Background(), req)
	if err != nil {
		e.t.Fatalf("%+v: %v", req, err)
	}
	return d
}

func (e *layeredEnv) denied(req policy.Request, rule string) {
	e.t.Helper()
	d := e.decide(req)
	if d.Allowed {
		e.t.Fatalf("%s %s: allowed; the system layer's %s must hold", req.Action, req.Plugin, rule)
	}
	for _, r := range d.Reasons {
		if r.Rule == rule {
			return
		}
	}
	e.t.Fatalf("%s: denied by %+v, not by %s", req.Action, d.Reasons, rule)
}

func layered(t *testing.T, system, extra string) *layeredEnv {
	t.Helper()
	root := t.TempDir()
	e := &layeredEnv{t: t, system: filepath.Join(root, "system"), extra: filepath.Join(root, "extra"), home: filepath.Join(root, "home")}
	for dir, doc := range map[string]string{e.system: system, e.extra: extra} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		doc = strings.ReplaceAll(doc, "$ROOT", root)
		if err := os.WriteFile(filepath.Join(dir, "managed-settings.json"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	layers, err := policy.Sources{ManagedDir: e.system, ExtraManagedDir: e.extra}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 2 || layers[0].Name != "managed" || layers[1].Name != policy.ExtraLayerName {
		t.Fatalf("layers %v", layers)
	}
	if e.engine, err = policy.NewEngine(layers); err != nil {
		t.Fatal(err)
	}
	e.servers, e.serversErr = policy.ManagedServers(layers)
	if e.snap, err = settings.Load(settings.Paths{Home: e.home, ManagedDir: e.system, ExtraManagedDir: e.extra}, nil); err != nil {
		t.Fatal(err)
	}
	return e
}

var (
	deploy   = plugin.MustParseID("deploy@corp")
	corpSrc  = &plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "corp/plugins"}
	evilSrc  = &plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "evil/plugins"}
	corpMkt  = policy.Marketplace{Name: "corp", Source: corpSrc}
	squatMkt = policy.Marketplace{Name: "corp", Source: evilSrc}
)

// Every managed key, list-valued or scalar, only tightens across layers:
// a further managed directory (WHARF_MANAGED_DIR, read after the system
// one, and chosen by the user) that tries to loosen what the system
// directory says changes nothing. Each case sets the key in the system
// directory, tries to undo it in the further one, and checks that the
// system's restriction holds where wharf enforces it.
func TestExtraManagedDirCannotLoosenAnyKey(t *testing.T) {
	for _, tc := range []struct {
		key           string
		system, extra string
		check         func(e *layeredEnv)
	}{
		{"strictKnownMarketplaces", `{"strictKnownMarketplaces": [{"source": "github", "repo": "corp/plugins"}]}`,
			`{"strictKnownMarketplaces": [{"source": "hostPattern", "hostPattern": ".*"}, "evil/*"]}`,
			func(e *layeredEnv) {
				e.denied(policy.Request{Action: policy.ActionAddMarketplace, Marketplace: policy.Marketplace{Name: "evil", Source: evilSrc}}, "strictKnownMarketplaces")
			}},
		{"blockedMarketplaces", `{"blockedMarketplaces": ["evil/*"]}`, `{"blockedMarketplaces": []}`,
			func(e *layeredEnv) {
				e.denied(policy.Request{Action: policy.ActionAddMarketplace, Marketplace: policy.Marketplace{Name: "evil", Source: evilSrc}}, "blockedMarketplaces")
			}},
		{"strictPluginOnlyCustomization", `{"strictPluginOnlyCustomization": true}`, `{"strictPluginOnlyCustomization": false}`,
			func(e *layeredEnv) {
				e.denied(policy.Request{Action: policy.ActionLoadComponent, Surface: settings.SurfaceCommands, From: policy.FromUser}, "strictPluginOnlyCustomization")
			}},
		{"allowCrossMarketplaceDependenciesOn", `{"allowCrossMarketplaceDependenciesOn": ["tools"]}`,
			`{"allowCrossMarketplaceDependenciesOn": ["tools", "evil"]}`,
			func(e *layeredEnv) {
				e.denied(policy.Request{Action: policy.ActionCrossDependency, Plugin: plugin.MustParseID("x@evil"), RequiredBy: deploy, DeclaredCross: []string{"evil"}}, "allowCrossMarketplaceDependenciesOn")
			}},
		{"allowManagedHooksOnly", `{"allowManagedHooksOnly": true}`, `{"allowManagedHooksOnly": false}`,
			func(e *layeredEnv) {
				e.denied(policy.Request{Action: policy.ActionRunHook, Surface: settings.SurfaceHooks, From: policy.FromUser}, "allowManagedHooksOnly")
			}},
		{"disableSideloadFlags", `{"disableSideloadFlags": true}`, `{"disableSideloadFlags": false}`,
			func(e *layeredEnv) {
				e.denied(policy.Request{Action: policy.ActionSideload, Path: e.home}, "disableSideloadFlags")
			}},
		{"requireSignatures", `{"requireSignatures": {"corp": ["release-key"]}}`, `{"requireSignatures": {"corp": ["my-key"]}}`,
			func(e *layeredEnv) {
				e.denied(policy.Request{Action: policy.ActionInstall, Plugin: deploy, Marketplace: corpMkt, Signatures: []string{"my-key"}}, "requireSignatures")
			}},
		{"legacySignatureKeys", `{"requireSignatures": {"corp": ["release-key"]}}`, `{"legacySignatureKeys": ["release-key"]}`,
			func(e *layeredEnv) {
				e.denied(policy.Request{Action: policy.ActionInstall, Plugin: deploy, Marketplace: corpMkt,
					Signatures: policy.SignatureKeys(nil, []string{"release-key"}, nil)}, "requireSignatures")
			}},
		{"githubHost", `{"strictKnownMarketplaces": [{"source": "github", "repo": "corp/plugins"}]}`, `{"githubHost": "http://127.0.0.1:8080"}`,
			func(e *layeredEnv) {
				e.denied(policy.Request{Action: policy.ActionAddMarketplace, Marketplace: policy.Marketplace{Name: "corp",
					Source: &plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "http://127.0.0.1:8080/corp/plugins.git"}}}, "strictKnownMarketplaces")
			}},
		{"enabledPlugins (forced off)", `{"enabledPlugins": {"deploy@corp": false}}`, `{"enabledPlugins": {"deploy@corp": true}}`,
			func(e *layeredEnv) {
				e.denied(policy.Request{Action: policy.ActionInstall, Plugin: deploy, Marketplace: corpMkt}, "enabledPlugins")
				// Loading follows policy's forced state, whatever the
				// merged settings say.
				if d := e.decide(policy.Request{Action: policy.ActionLoad, Plugin: deploy, Marketplace: corpMkt}); d.Forced != "off" {
					e.t.Fatalf("load: forced %q, want off", d.Forced)
				}
			}},
		{"enabledPlugins (forced on)", `{"enabledPlugins": {"deploy@corp": true}}`, `{"enabledPlugins": {"deploy@corp": false}}`,
			func(e *layeredEnv) {
				e.denied(policy.Request{Action: policy.ActionDisable, Plugin: deploy}, "enabledPlugins")
			}},
		{"extraKnownMarketplaces", `{"extraKnownMarketplaces": {"corp": {"source": {"source": "github", "repo": "corp/plugins"}}}, "enabledPlugins": {"deploy@corp": true}}`,
			`{"extraKnownMarketplaces": {"corp": {"source": {"source": "github", "repo": "evil/plugins"}}}}`,
			func(e *layeredEnv) {
				e.denied(policy.Request{Action: policy.ActionLoad, Plugin: deploy, Marketplace: squatMkt}, "extraKnownMarketplaces")
				if d := e.decide(policy.Request{Action: policy.ActionLoad, Plugin: deploy, Marketplace: squatMkt}); d.Forced == "on" {
					e.t.Fatal("the user's declaration of corp made its marketplace's deploy forced on")
				}
			}},
		{"hooks (managed status)", `{"allowManagedHooksOnly": true}`,
			`{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "true"}]}]}}`,
			func(e *layeredEnv) {
				e.denied(policy.Request{Action: policy.ActionRunHook, Surface: settings.SurfaceHooks, From: policy.FromManaged, ManagedDir: e.extra}, "allowManagedHooksOnly")
				if d := e.decide(policy.Request{Action: policy.ActionRunHook, Surface: settings.SurfaceHooks, From: policy.FromManaged, ManagedDir: e.system}); !d.Allowed {
					e.t.Fatalf("the system directory's own hooks must run: %+v", d.Reasons)
				}
			}},
		{"mcpServers (managed status)", `{"strictPluginOnlyCustomization": ["mcp-servers"]}`,
			`{"mcpServers": {"sidecar": {"command": "true"}}}`,
			func(e *layeredEnv) {
				e.denied(policy.Request{Action: policy.ActionLoadComponent, Surface: settings.SurfaceMCPServers, From: policy.FromManaged, ManagedDir: e.extra}, "strictPluginOnlyCustomization")
			}},
		{"allowedHttpHookUrls", `{"allowedHttpHookUrls": ["https://audit.corp.example/*"]}`, `{"allowedHttpHookUrls": ["*"]}`,
			func(e *layeredEnv) {
				allow, _ := httpHookAllowlist(e.snap)
				if urlAllowed(allow, "https://collector.evil.example/x") {
					e.t.Fatal("the user's [\"*\"] widened the system's allowedHttpHookUrls")
				}
				if !urlAllowed(allow, "https://audit.corp.example/x") {
					e.t.Fatal("the system's own URL must stay allowed")
				}
			}},
		{"trustedProjectFolders", `{"trustedProjectFolders": ["$ROOT/system"]}`, `{"trustedProjectFolders": ["/"]}`,
			func(e *layeredEnv) {
				if ft, _ := decideFolderTrust(e.home, e.home, e.snap); ft.Trusted {
					e.t.Fatalf("the user's [\"/\"] pre-trusted %s: %s", e.home, ft.Why)
				}
			}},
		{"disableProjectCode", `{"disableProjectCode": true}`, `{"disableProjectCode": false, "trustedProjectFolders": ["/"]}`,
			func(e *layeredEnv) {
				if ft, _ := decideFolderTrust(e.home, e.home, e.snap); ft.Trusted {
					e.t.Fatalf("project code allowed: %s", ft.Why)
				}
			}},
		{"policyUrl, maxAge", `{"policyUrl": "https://wharf.corp.example", "maxAge": "1h"}`,
			`{"policyUrl": "https://wharf.corp.example", "maxAge": "30d"}`,
			func(e *layeredEnv) {
				if e.serversErr != nil || len(e.servers) != 1 || e.servers[0].MaxAge != time.Hour {
					e.t.Fatalf("servers %+v (%v): the system's server with its maxAge 1h must hold", e.servers, e.serversErr)
				}
			}},
		{"policyKey", `{"policyUrl": "https://wharf.corp.example", "policyKey": "wharf-00000000000000aa"}`,
			`{"policyUrl": "https://wharf.corp.example", "policyKey": "wharf-00000000000000bb"}`,
			func(e *layeredEnv) {
				if e.serversErr == nil || !strings.Contains(e.serversErr.Error(), "pins another key") {
					e.t.Fatalf("another key pin for the system's server must fail closed, got %+v %v", e.servers, e.serversErr)
				}
			}},
	} {
		t.Run(tc.key, func(t *testing.T) { tc.check(layered(t, tc.system, tc.extra)) })
	}
}

// The joined version of a managed guard is the concatenation of the two
// versions, whatever pairs came before it.
func TestManagedGuardJoinEqualsConcat(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var g managedGuard
		vs := rapid.SliceOfN(rapid.SampledFrom([]string{"", "a", "b", "a+b", "v1", "v2"}), 1, 20).Draw(t, "versions")
		for i := 0; i+1 < len(vs); i++ {
			if got, want := g.join(vs[i], vs[i+1]), vs[i]+"+"+vs[i+1]; got != want {
				t.Fatalf("join(%q, %q) = %q, want %q", vs[i], vs[i+1], got, want)
			}
		}
	})
}
