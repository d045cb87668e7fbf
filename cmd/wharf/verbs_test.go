package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"

	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/testutil/testworld"
	"github.com/wharfhq/wharf/plugin"
)

// verbWorld is a home with the directory marketplace "corp" (app, which
// depends on lib) and the output of the verbs run over it, without cobra.
type verbWorld struct {
	t        *testing.T
	dir, mkt string
	out, err bytes.Buffer
	json     bool
	// policy is what the flags and environment would add to the policy
	// layers: a policy server, its token.
	policy home.PolicyConfig
}

func newVerbWorld(t *testing.T) *verbWorld {
	w := &verbWorld{t: t, dir: t.TempDir(), mkt: t.TempDir()}
	w.writeMarketplace("1.0.0")
	h := w.home()
	defer h.Close()
	src, err := plugin.ParseMarketplaceSource(w.mkt)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := h.MarketplaceWriter()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.WithMarketplaceLock(context.Background(), func(ctx context.Context) error {
		_, err := mgr.Add(ctx, src, "")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *verbWorld) writeMarketplace(appVersion string) {
	testworld.Marketplace(w.t, w.mkt, "corp", map[string]map[string]string{
		"app": {".claude-plugin/plugin.json": testworld.Manifest("app", appVersion, "lib"), "commands/app.md": "# app\n"},
		"lib": {".claude-plugin/plugin.json": testworld.Manifest("lib", "1.0.0"), "commands/lib.md": "# lib\n"},
	})
}

// home opens the home as one command does; the caller closes it.
func (w *verbWorld) home() *home.Home {
	w.t.Helper()
	v := viper.New()
	cfg := home.Default()
	cfg.SetDefaults(v)
	if err := cfg.Parse(v); err != nil {
		w.t.Fatal(err)
	}
	cfg.JSON = w.json
	cfg.Policy = w.policy
	h, err := home.Open(home.Options{Paths: layout.New(w.dir), Config: cfg, Project: w.dir,
		Warn: func(msg string) { fmt.Fprintf(&w.err, "warning: %s\n", msg) }})
	if err != nil {
		w.t.Fatal(err)
	}
	return h
}

// do runs one verb over a fresh home and returns its stdout.
func (w *verbWorld) do(run func(streams, *home.Home) error) (string, error) {
	w.t.Helper()
	w.out.Reset()
	w.err.Reset()
	h := w.home()
	err := run(streams{Out: &w.out, Err: &w.err, JSON: w.json}, h)
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	return w.out.String(), err
}

func (w *verbWorld) must(run func(streams, *home.Home) error) string {
	w.t.Helper()
	out, err := w.do(run)
	if err != nil {
		w.t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out, w.err.String())
	}
	return out
}

// The verbs run as functions over a home, with no cobra command: install,
// list, update, uninstall and prune, with and without --dry-run, print
// what they did and change what they say.
func TestVerbsRunWithoutCobra(t *testing.T) {
	w := newVerbWorld(t)
	ctx := context.Background()
	settingsFile := layout.New(w.dir).Settings()
	list := func(io streams, h *home.Home) error { return runList(ctx, &ListOptions{IO: io, Home: h}) }

	out := w.must(func(io streams, h *home.Home) error {
		return runInstall(ctx, &InstallOptions{IO: io, Home: h, Plugin: "app", Scope: "user", DryRun: true})
	})
	if want := "would install lib@corp (dependency of app@corp)\nwould install app@corp\nwould enable in the user scope; nothing was changed (--dry-run)\n"; out != want {
		t.Fatalf("install --dry-run printed\n%s\nwant\n%s", out, want)
	}
	if out := w.must(list); out != "no plugins installed; find some with: wharf search\n" {
		t.Fatalf("install --dry-run installed something:\n%s", out)
	}

	out = w.must(func(io streams, h *home.Home) error {
		return runInstall(ctx, &InstallOptions{IO: io, Home: h, Plugin: "app@corp", Scope: "user"})
	})
	if want := "installed lib@corp 1.0.0 (dependency)\ninstalled app@corp 1.0.0\nenabled in " + settingsFile + "\n"; out != want {
		t.Fatalf("install printed\n%s\nwant\n%s", out, want)
	}
	out = w.must(list)
	if !strings.Contains(out, "app@corp  1.0.0") || !strings.Contains(out, "lib@corp  1.0.0") || !strings.Contains(out, "auto") {
		t.Fatalf("list after install:\n%s", out)
	}

	if _, err := w.do(func(io streams, h *home.Home) error {
		return runInstall(ctx, &InstallOptions{IO: io, Home: h, Plugin: "app@corp", Scope: "everywhere"})
	}); exitCode(err) != 2 || !strings.Contains(err.Error(), "everywhere") {
		t.Fatalf("a bad scope: exit %d, %v", exitCode(err), err)
	}
	if _, err := w.do(func(io streams, h *home.Home) error { return runUpdate(ctx, &UpdateOptions{IO: io, Home: h}) }); exitCode(err) != 2 {
		t.Fatalf("update without plugins or --all: exit %d, %v", exitCode(err), err)
	}

	out = w.must(func(io streams, h *home.Home) error {
		return runEnable(ctx, &EnableOptions{IO: io, Home: h, Plugin: "app", Scope: "user", On: false})
	})
	if want := "disabled app@corp in " + settingsFile + " (reload running agents to apply)\n"; out != want {
		t.Fatalf("disable printed\n%s\nwant\n%s", out, want)
	}
	if out := w.must(list); !strings.Contains(out, "disabled") {
		t.Fatalf("list after disable:\n%s", out)
	}
	w.must(func(io streams, h *home.Home) error {
		return runEnable(ctx, &EnableOptions{IO: io, Home: h, Plugin: "app@corp", Scope: "user", On: true})
	})

	w.writeMarketplace("1.1.0")
	out = w.must(func(io streams, h *home.Home) error { return runOutdated(ctx, &OutdatedOptions{IO: io, Home: h}) })
	if !strings.Contains(out, "1 plugin(s) to update: wharf update --all") || !strings.Contains(out, "1.1.0") {
		t.Fatalf("outdated printed\n%s", out)
	}
	out = w.must(func(io streams, h *home.Home) error {
		return runUpdate(ctx, &UpdateOptions{IO: io, Home: h, Plugins: []string{"app"}, DryRun: true})
	})
	if !strings.Contains(out, "nothing was fetched or changed (--dry-run") || strings.Contains(out, "updated") {
		t.Fatalf("update --dry-run printed\n%s", out)
	}
	w.json = true
	out = w.must(func(io streams, h *home.Home) error {
		return runUpdate(ctx, &UpdateOptions{IO: io, Home: h, All: true})
	})
	w.json = false
	var res updateResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("update --json: %v\n%s", err, out)
	}
	updated := map[string]string{}
	for _, u := range res.Plugins {
		if u.Changed {
			updated[u.ID.String()] = u.From + "->" + u.To
		}
	}
	if len(res.Marketplaces) != 1 || res.Marketplaces[0].Name != "corp" || updated["app@corp"] != "1.0.0->1.1.0" || len(updated) != 1 {
		t.Fatalf("update --all --json: %s", out)
	}

	out = w.must(func(io streams, h *home.Home) error {
		return runUninstall(ctx, &UninstallOptions{IO: io, Home: h, Plugin: "app", DryRun: true})
	})
	if out != "would remove app@corp\nnothing was changed (--dry-run)\n" {
		t.Fatalf("uninstall --dry-run printed\n%s", out)
	}
	if out := w.must(func(io streams, h *home.Home) error {
		return runUninstall(ctx, &UninstallOptions{IO: io, Home: h, Plugin: "app@corp"})
	}); out != "removed app@corp\n" {
		t.Fatalf("uninstall printed\n%s", out)
	}
	if out := w.must(func(io streams, h *home.Home) error {
		return runPrune(ctx, &PruneOptions{IO: io, Home: h, DryRun: true})
	}); out != "would remove lib@corp\nnothing was changed (--dry-run)\n" {
		t.Fatalf("prune --dry-run printed\n%s", out)
	}
	if out := w.must(func(io streams, h *home.Home) error { return runPrune(ctx, &PruneOptions{IO: io, Home: h}) }); out != "removed lib@corp\n" {
		t.Fatalf("prune printed\n%s", out)
	}
	if out := w.must(func(io streams, h *home.Home) error { return runPrune(ctx, &PruneOptions{IO: io, Home: h}) }); out != "nothing to prune\n" {
		t.Fatalf("second prune printed\n%s", out)
	}
	if _, err := w.do(func(io streams, h *home.Home) error {
		return runGC(ctx, &GCOptions{IO: io, Home: h, Grace: -time.Hour, GraceSet: true})
	}); exitCode(err) != 2 {
		t.Fatalf("gc --grace -1h: exit %d, %v", exitCode(err), err)
	}
	out = w.must(func(io streams, h *home.Home) error { return runGC(ctx, &GCOptions{IO: io, Home: h, GraceSet: true}) })
	for _, v := range []string{"app/1.0.0", "app/1.1.0", "lib/1.0.0"} {
		if !strings.Contains(out, "removed "+filepath.Join(w.dir, "cache", "corp", filepath.FromSlash(v))) {
			t.Fatalf("gc --grace 0s did not remove %s:\n%s", v, out)
		}
	}
}

// marketplaceSource parses a marketplace source as the add command does
// (the test's paths are already absolute).
func marketplaceSource(t *testing.T, s string) plugin.MarketplaceSource {
	t.Helper()
	src, err := plugin.ParseMarketplaceSource(s)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// The marketplace verbs run as functions over a home, with no cobra
// command: add a directory marketplace, update it, remove it, and each
// refuses what it cannot do with the exit code the command has.
func TestMarketplaceVerbsRunWithoutCobra(t *testing.T) {
	w := newVerbWorld(t)
	ctx := context.Background()
	other := t.TempDir()
	testworld.Marketplace(t, other, "tools", map[string]map[string]string{
		"fmt": {".claude-plugin/plugin.json": testworld.Manifest("fmt", "1.0.0"), "commands/fmt.md": "# fmt\n"},
	})

	missing := filepath.Join(t.TempDir(), "missing-dir")
	if _, err := w.do(func(io streams, h *home.Home) error {
		return runMarketplaceAdd(ctx, &MarketplaceAddOptions{IO: io, Home: h, Source: marketplaceSource(t, missing)})
	}); exitCode(err) != 1 || !strings.Contains(err.Error(), "no marketplace.json at") {
		t.Fatalf("marketplace add of a missing directory: exit %d, %v", exitCode(err), err)
	}
	out := w.must(func(io streams, h *home.Home) error {
		return runMarketplaceAdd(ctx, &MarketplaceAddOptions{IO: io, Home: h, Source: marketplaceSource(t, other), Name: "dev"})
	})
	if want := "Added marketplace dev (1 plugins) from " + other + "\nNext: wharf search --marketplace dev\n"; out != want {
		t.Fatalf("marketplace add printed\n%s\nwant\n%s", out, want)
	}
	if want := "wharf: note: the marketplace calls itself \"tools\"; its plugins are known here as <plugin>@dev\n"; w.err.String() != want {
		t.Fatalf("marketplace add --name noted\n%s\nwant\n%s", w.err.String(), want)
	}

	out = w.must(func(io streams, h *home.Home) error {
		return runMarketplaceUpdate(ctx, &MarketplaceUpdateOptions{IO: io, Home: h})
	})
	if want := "Updated corp from " + w.mkt + "\nUpdated dev from " + other + "\n"; out != want {
		t.Fatalf("marketplace update printed\n%s\nwant\n%s", out, want)
	}
	out, err := w.do(func(io streams, h *home.Home) error {
		return runMarketplaceUpdate(ctx, &MarketplaceUpdateOptions{IO: io, Home: h, Names: []string{"nope"}})
	})
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "unknown marketplace") || out != "" {
		t.Fatalf("marketplace update of an unknown name: exit %d, %v, printed %q", exitCode(err), err, out)
	}

	// One marketplace that fails does not stop the others; its error goes
	// to stderr as well, since more than one was updated.
	if err := os.Remove(plugin.MarketplaceFile(other)); err != nil {
		t.Fatal(err)
	}
	out, err = w.do(func(io streams, h *home.Home) error {
		return runMarketplaceUpdate(ctx, &MarketplaceUpdateOptions{IO: io, Home: h})
	})
	if exitCode(err) != 1 || out != "Updated corp from "+w.mkt+"\n" || !strings.HasPrefix(w.err.String(), "wharf: ") || !strings.Contains(w.err.String(), other) {
		t.Fatalf("marketplace update with dev broken: exit %d, %v\nstdout:\n%s\nstderr:\n%s", exitCode(err), err, out, w.err.String())
	}

	out = w.must(func(io streams, h *home.Home) error {
		return runMarketplaceRemove(ctx, &MarketplaceRemoveOptions{IO: io, Home: h, Name: "dev"})
	})
	if want := "Removed marketplace dev (" + other + ")\n"; out != want {
		t.Fatalf("marketplace remove printed\n%s\nwant\n%s", out, want)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("marketplace remove deleted the local directory it read: %v", err)
	}
	out, err = w.do(func(io streams, h *home.Home) error {
		return runMarketplaceRemove(ctx, &MarketplaceRemoveOptions{IO: io, Home: h, Name: "dev"})
	})
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "unknown marketplace") || out != "" {
		t.Fatalf("second marketplace remove: exit %d, %v, printed %q", exitCode(err), err, out)
	}

	// Plugins from a removed marketplace stay installed, and remove says so.
	w.must(func(io streams, h *home.Home) error {
		return runInstall(ctx, &InstallOptions{IO: io, Home: h, Plugin: "app@corp", Scope: "user"})
	})
	out = w.must(func(io streams, h *home.Home) error {
		return runMarketplaceRemove(ctx, &MarketplaceRemoveOptions{IO: io, Home: h, Name: "corp"})
	})
	if want := "Removed marketplace corp (" + w.mkt + ")\n" +
		"Its plugins stay installed and enabled, but can no longer be updated: app@corp, lib@corp\n" +
		"Remove them with: wharf uninstall <name@corp>, or add the marketplace back: wharf marketplace add " + w.mkt + "\n"; out != want {
		t.Fatalf("marketplace remove with plugins installed printed\n%s\nwant\n%s", out, want)
	}
	w.json = true
	out = w.must(func(io streams, h *home.Home) error {
		return runMarketplaceUpdate(ctx, &MarketplaceUpdateOptions{IO: io, Home: h})
	})
	w.json = false
	if out != "[]\n" {
		t.Fatalf("marketplace update --json with no marketplaces printed %q", out)
	}
}

// policy pull runs as a function over a home, with no cobra command,
// against a real wharf server: without a server it is a usage error, a
// refused token exits 6, and a pull prints the bundle it verified.
func TestPolicyPullRunsWithoutCobra(t *testing.T) {
	srv := newPolicyAPI(t)
	srv.setLayer("org", 0, `{"blockedMarketplaces":[{"source":"pathPattern","pathPattern":".*/corp$"}]}`)
	w := &verbWorld{t: t, dir: t.TempDir()}
	w.policy.ExtraManagedDir = filepath.Join(w.dir, "no-managed")
	ctx := context.Background()
	pull := func(io streams, h *home.Home) error { return runPolicyPull(ctx, &PolicyPullOptions{IO: io, Home: h}) }

	if out, err := w.do(pull); exitCode(err) != 2 || !strings.Contains(err.Error(), "no policy server") || out != "" {
		t.Fatalf("policy pull without a server: exit %d, %v, printed %q", exitCode(err), err, out)
	}
	w.policy.URL, w.policy.Token = srv.hs.URL, "not-a-token"
	if out, err := w.do(pull); exitCode(err) != 6 || !strings.Contains(err.Error(), "refused the credentials") || out != "" {
		t.Fatalf("policy pull with a bad token: exit %d, %v, printed %q", exitCode(err), err, out)
	}

	w.policy.Token = srv.agent
	w.json = true
	out := w.must(pull)
	w.json = false
	var first pullResult
	if err := json.Unmarshal([]byte(out), &first); err != nil {
		t.Fatalf("policy pull --json: %v\n%s", err, out)
	}
	if first.Server != srv.hs.URL || first.From != "network" || first.KeyID != srv.key.KeyID || len(first.Layers) != 1 || first.Layers[0].Name != "org" || first.ETag == "" || first.KeySource != "first-use" {
		t.Fatalf("policy pull --json: %s", out)
	}
	if !strings.Contains(w.err.String(), srv.key.KeyID) {
		t.Fatalf("the first pull must name the key it trusts (%s): %s", srv.key.KeyID, w.err.String())
	}

	out = w.must(pull)
	confirmed, _, _ := strings.Cut(out[strings.Index(out, "confirmed: ")+len("confirmed: "):], "\n")
	if _, err := time.Parse(time.RFC3339, confirmed); err != nil {
		t.Fatalf("policy pull printed a confirmed time that is not RFC 3339: %v\n%s", err, out)
	}
	want := "policy " + shortVersion(first.Version) + fmt.Sprintf(" (revision %d)", first.Revision) + " from the cache (unchanged on the server)\n" +
		"server:    " + srv.hs.URL + "\n" +
		"etag:      " + first.ETag + "\n" +
		"confirmed: " + confirmed + "\n" +
		"key:       " + first.KeyID + " (stored)\n" +
		"cache:     " + first.CacheDir + "\n" +
		"layers:    org\n"
	if out != want {
		t.Fatalf("second policy pull printed\n%s\nwant\n%s", out, want)
	}
}

// show, search and verify run as functions over a home, with no cobra
// command.
func TestReadVerbsRunWithoutCobra(t *testing.T) {
	w := newVerbWorld(t)
	ctx := context.Background()
	app := filepath.Join(w.mkt, "plugins", "app")

	out := w.must(func(io streams, h *home.Home) error {
		return runShow(ctx, &ShowOptions{IO: io, Home: h, Plugin: "app"})
	})
	if want := "app@corp  1.0.0\n" +
		"  depends on:   lib@corp\n" +
		"  always-on:    ~3 tokens added to every session\n" +
		"  source:       relative " + app + "\n" +
		"  components:\n" +
		"    command      app\n" +
		"Install with: wharf install app@corp\n"; out != want {
		t.Fatalf("show printed\n%s\nwant\n%s", out, want)
	}
	out, err := w.do(func(io streams, h *home.Home) error {
		return runShow(ctx, &ShowOptions{IO: io, Home: h, Plugin: "nope@corp"})
	})
	if exitCode(err) != 2 || err.Error() != `nope@corp: marketplace "corp" has no plugin "nope"` || out != "" {
		t.Fatalf("show of an unknown plugin: exit %d, %v, printed %q", exitCode(err), err, out)
	}

	out = w.must(func(io streams, h *home.Home) error {
		return runSearch(ctx, &SearchOptions{IO: io, Home: h, Query: []string{"LIB"}})
	})
	if want := "PLUGIN    VERSION  CATEGORY  DESCRIPTION\nlib@corp  1.0.0    -         \n"; out != want {
		t.Fatalf("search printed\n%q\nwant\n%q", out, want)
	}
	out = w.must(func(io streams, h *home.Home) error {
		return runSearch(ctx, &SearchOptions{IO: io, Home: h, Query: []string{"app", "lib"}})
	})
	if want := "No plugins match \"app lib\".\n"; out != want {
		t.Fatalf("search of two words no plugin has printed %q, want %q", out, want)
	}
	out, err = w.do(func(io streams, h *home.Home) error {
		return runSearch(ctx, &SearchOptions{IO: io, Home: h, Marketplace: "nope"})
	})
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "unknown marketplace") || out != "" {
		t.Fatalf("search --marketplace nope: exit %d, %v, printed %q", exitCode(err), err, out)
	}

	w.must(func(io streams, h *home.Home) error {
		return runInstall(ctx, &InstallOptions{IO: io, Home: h, Plugin: "app@corp", Scope: "user"})
	})
	verify := func(io streams, h *home.Home) error {
		return runVerify(ctx, &VerifyOptions{IO: io, Home: h, Target: "app@corp"})
	}
	out = w.must(verify)
	digest, _, _ := strings.Cut(strings.TrimPrefix(out, "app@corp\n  digest   "), "\n")
	if want := "app@corp\n  digest   " + digest + "\n  expected " + digest + " (pin, matches)\nOK\n"; !strings.HasPrefix(digest, "w1:") || out != want {
		t.Fatalf("verify printed\n%s\nwant\n%s", out, want)
	}
	testworld.WriteTree(t, filepath.Join(w.dir, "cache", "corp", "app", "1.0.0"), map[string]string{"commands/app.md": "# changed\n"})
	out, err = w.do(verify)
	if exitCode(err) != 4 || !strings.Contains(out, "(pin, MISMATCH)") || !strings.Contains(out, "  changed  commands/app.md\n") || strings.Contains(out, "OK") {
		t.Fatalf("verify of a changed install: exit %d, %v\n%s", exitCode(err), err, out)
	}
	if _, err := w.do(func(io streams, h *home.Home) error {
		return runVerify(ctx, &VerifyOptions{IO: io, Home: h, Target: app, Expect: "sha256:abc"})
	}); exitCode(err) != 2 || !strings.Contains(err.Error(), "is not a w1: digest") {
		t.Fatalf("verify --expect sha256:abc: exit %d, %v", exitCode(err), err)
	}
}
