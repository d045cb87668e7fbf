package install

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/resolver"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/internal/testutil/testworld"
	"github.com/wharfhq/wharf/plugin"
)

var bg = context.Background()

// world is a real wharf home with one directory marketplace "corp".
type world struct {
	t    *testing.T
	home string
	mkt  string
	in   *Installer
	c    *cache.Cache
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newWorld builds the marketplace from plugins (name → dependencies) and an
// installer over it, with the given managed policy (nil for none).
func newWorld(t *testing.T, plugins map[string][]string, managed string) *world {
	t.Helper()
	tw := testworld.New(t)
	w := &world{t: t, home: tw.Home, mkt: t.TempDir(), c: tw.Cache}
	trees := map[string]map[string]string{}
	for name, deps := range plugins {
		trees[name] = map[string]string{
			".claude-plugin/plugin.json": testworld.Manifest(name, "1.0.0", deps...),
			"commands/run.md":            "Run " + name + ".\n",
		}
	}
	testworld.Marketplace(t, w.mkt, "corp", trees)
	if managed != "" {
		write(t, filepath.Join(tw.Managed, "managed-settings.json"), managed)
	}
	mgr, in := newInstaller(t, tw)
	src, err := plugin.ParseMarketplaceSource(w.mkt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.Add(bg, src, ""); err != nil {
		t.Fatal(err)
	}
	w.in = in
	return w
}

// newInstaller is the real installer over tw's home: its marketplace
// manager (which sees no environment), cache and managed policy.
func newInstaller(t *testing.T, tw *testworld.World) (*marketplace.Manager, *Installer) {
	t.Helper()
	mgr := marketplace.NewManager(tw.Store, marketplace.Options{Dir: layout.New(tw.Home).Marketplaces(), Getenv: func(string) string { return "" }})
	pol, err := policy.Open(policy.Sources{ManagedDir: tw.Managed})
	if err != nil {
		t.Fatal(err)
	}
	// No project: the installs of these tests have no project scope.
	in, err := New(Options{Marketplaces: mgr, Cache: tw.Cache, Policy: pol, Settings: settings.Paths{Home: tw.Home, ManagedDir: tw.Managed}})
	if err != nil {
		t.Fatal(err)
	}
	return mgr, in
}

// addMarketplaceDir adds the marketplace at dir to mgr.
func addMarketplaceDir(t *testing.T, mgr *marketplace.Manager, dir string) {
	t.Helper()
	src, err := plugin.ParseMarketplaceSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.Add(bg, src, ""); err != nil {
		t.Fatal(err)
	}
}

func (w *world) registry() map[string]cache.Record {
	recs, err := w.c.List()
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]cache.Record{}
	for _, r := range recs {
		out[r.ID.String()] = r
	}
	return out
}

func TestInstallClosureOrderAndAuto(t *testing.T) {
	w := newWorld(t, map[string][]string{"app": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": nil}, "")
	res, err := w.in.Install(bg, Request{ID: plugin.MustParseID("app@corp")})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, i := range res.Installed {
		order = append(order, i.ID.Name)
	}
	if got := strings.Join(order, ","); got != "d,b,c,app" {
		t.Fatalf("install order %s, want dependencies first: d,b,c,app", got)
	}
	reg := w.registry()
	for name, auto := range map[string]bool{"app": false, "b": true, "c": true, "d": true} {
		r, ok := reg[name+"@corp"]
		if !ok || r.Auto != auto {
			t.Errorf("%s: registered=%v auto=%v, want auto=%v", name, ok, r.Auto, auto)
		}
		if fi, err := os.Stat(r.InstallPath); err != nil || fi.Mode().Perm()&0o222 != 0 {
			t.Errorf("%s: install path %s is missing or writable", name, r.InstallPath)
		}
	}
	// Installing a dependency by hand makes it manual; reinstalling the root
	// leaves the others' marks alone.
	if _, err := w.in.Install(bg, Request{ID: plugin.MustParseID("b@corp")}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.in.Install(bg, Request{ID: plugin.MustParseID("app@corp")}); err != nil {
		t.Fatal(err)
	}
	reg = w.registry()
	if reg["b@corp"].Auto || !reg["d@corp"].Auto {
		t.Fatalf("after installing b by hand: b auto=%v, d auto=%v", reg["b@corp"].Auto, reg["d@corp"].Auto)
	}
	snap, err := settings.Load(w.in.o.Settings, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Merged.EnabledPlugins) != 4 {
		t.Fatalf("enabledPlugins = %v, want the whole closure enabled", snap.Merged.EnabledPlugins)
	}
}

func TestInstallRefusals(t *testing.T) {
	w := newWorld(t, map[string][]string{"app": {"ghost"}, "loop": {"loop"}, "ok": nil, "off": nil, "needsoff": {"off"}},
		`{"enabledPlugins": {"off@corp": false}}`)
	cases := []struct {
		id    string
		req   Request
		layer plugin.Layer
		text  string
	}{
		{id: "app@corp", layer: plugin.LayerDependency, text: "ghost@corp"},
		{id: "loop@corp", layer: plugin.LayerDependency, text: "loop@corp → loop@corp"},
		{id: "nope@corp", layer: plugin.LayerIntent, text: "nope@corp"},
		{id: "needsoff@corp", layer: plugin.LayerPolicy, text: "off@corp"},
		{id: "ok@corp", req: Request{Scope: settings.ScopeManaged}, layer: plugin.LayerIntent, text: "managed"},
		{id: "ok@corp", req: Request{Scope: settings.ScopeProject}, layer: plugin.LayerIntent, text: "project"},
	}
	for _, c := range cases {
		req := c.req
		req.ID = plugin.MustParseID(c.id)
		_, err := w.in.Install(bg, req)
		if err == nil || plugin.LayerOf(err) != c.layer || !strings.Contains(err.Error(), c.text) {
			t.Errorf("install %s (scope %q) = %v, want a %s error naming %q", c.id, c.req.Scope, err, c.layer, c.text)
		}
	}
	if reg := w.registry(); len(reg) != 0 {
		t.Fatalf("refused installs registered %v", reg)
	}
	var missing *resolver.MissingError
	_, err := w.in.Install(bg, Request{ID: plugin.MustParseID("app@corp")})
	if !errors.As(err, &missing) || missing.RequiredBy.String() != "app@corp" {
		t.Fatalf("missing dependency error = %#v", err)
	}
}

func TestUninstallPruneAndStatus(t *testing.T) {
	w := newWorld(t, map[string][]string{"app": {"b"}, "b": {"d"}, "d": nil}, "")
	if _, err := w.in.Install(bg, Request{ID: plugin.MustParseID("app@corp")}); err != nil {
		t.Fatal(err)
	}
	rm, err := w.in.Uninstall(bg, plugin.MustParseID("d@corp"), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rm.Warnings) != 1 || !strings.Contains(rm.Warnings[0], "b@corp depends on d@corp") || len(rm.Dependents) != 2 {
		t.Fatalf("uninstall warnings %v, dependents %v", rm.Warnings, rm.Dependents)
	}
	rows, err := w.in.List(bg, StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rm.Settings != filepath.Join(w.home, "settings.json") {
		t.Errorf("uninstall rewrote settings %q, want the user settings", rm.Settings)
	}
	for _, r := range rows {
		if r.ID.String() == "d@corp" {
			// Its enabledPlugins entry went with it, as claude plugin
			// uninstall deletes it.
			t.Errorf("d@corp is still listed after uninstall: %+v", r)
			continue
		}
		if r.Status != load.StatusDemoted || !strings.Contains(r.Chain, "d@corp is not installed") {
			t.Errorf("%s: status %s chain %q, want demoted because d@corp is not installed", r.ID, r.Status, r.Chain)
		}
	}
	if _, err := w.in.Uninstall(bg, plugin.MustParseID("d@corp"), false); plugin.LayerOf(err) != plugin.LayerIntent {
		t.Fatalf("uninstalling twice = %v, want a not-installed error", err)
	}
	if _, err := w.in.Uninstall(bg, plugin.MustParseID("app@corp"), true); err != nil {
		t.Fatal(err)
	}
	if reg := w.registry(); len(reg) != 0 {
		t.Fatalf("after uninstall --prune the registry holds %v", reg)
	}
}

// TestConcurrentInstallsInOneProcess: installers sharing a home serialize on
// its lock and end with one consistent registry.
func TestConcurrentInstallsInOneProcess(t *testing.T) {
	w := newWorld(t, map[string][]string{"a": {"base"}, "b": {"base"}, "c": {"a", "b"}, "base": nil}, "")
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for _, id := range []string{"a@corp", "b@corp", "c@corp"} {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			_, err := w.in.Install(bg, Request{ID: plugin.MustParseID(id)})
			errs <- err
		}(id)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	reg := w.registry()
	if len(reg) != 4 || !reg["base@corp"].Auto || reg["c@corp"].Auto {
		t.Fatalf("registry after concurrent installs: %v", reg)
	}
}

// An install killed between its registry write and its settings write
// leaves a dependency registered that no settings scope mentions; the next
// install of its dependent enables it. A dependency the user disabled
// stays disabled.
func TestInstallEnablesADependencyLeftUnsettled(t *testing.T) {
	w := newWorld(t, map[string][]string{"app": {"b", "c"}, "b": nil, "c": nil}, "")
	if _, err := w.in.Install(bg, Request{ID: plugin.MustParseID("app@corp")}); err != nil {
		t.Fatal(err)
	}
	// The state such a kill leaves: b and c registered, b with no entry.
	file := filepath.Join(w.home, "settings.json")
	write(t, file, `{"enabledPlugins": {"app@corp": true, "c@corp": false}}`)
	res, err := w.in.Install(bg, Request{ID: plugin.MustParseID("app@corp")})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := settings.Load(settings.Paths{Home: w.home}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := snap.Merged.EnabledPlugins
	if on, ok := got[plugin.MustParseID("b@corp")]; !ok || !on {
		t.Errorf("b@corp after the second install: %v (enabled %v)", got, res.Enabled)
	}
	if on := got[plugin.MustParseID("c@corp")]; on {
		t.Errorf("c@corp, which the user disabled, was enabled again: %v", got)
	}
}

// TestUninstallForgetsEnabledEntries: uninstall and prune delete the
// removed plugins' enabledPlugins entries from the user settings, as
// claude plugin uninstall does, keeping every other entry and key; a user
// settings file that cannot be rewritten leaves the entries with a warning
// and the plugin removed.
func TestUninstallForgetsEnabledEntries(t *testing.T) {
	w := newWorld(t, map[string][]string{"app": {"b"}, "b": nil, "other": nil}, "")
	for _, id := range []string{"app@corp", "other@corp"} {
		if _, err := w.in.Install(bg, Request{ID: plugin.MustParseID(id)}); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(w.home, "settings.json")
	if _, err := w.in.SetEnabled(bg, plugin.MustParseID("b@corp"), settings.ScopeUser, false); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	write(t, file, strings.Replace(string(data), "{", `{"model": "kept",`, 1))

	rm, err := w.in.Uninstall(bg, plugin.MustParseID("app@corp"), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rm.Removed) != 2 || rm.Settings != file {
		t.Fatalf("removed %v, settings %q", rm.Removed, rm.Settings)
	}
	data, err = os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := settings.Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.EnabledPlugins) != 1 || !s.EnabledPlugins[plugin.MustParseID("other@corp")] || !strings.Contains(string(data), `"model": "kept"`) {
		t.Fatalf("after uninstall --prune the user settings are %s; want only other@corp enabled and the model kept", data)
	}

	write(t, file, `{"enabledPlugins": ["other@corp"]}`)
	rm, err = w.in.Uninstall(bg, plugin.MustParseID("other@corp"), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rm.Removed) != 1 || rm.Settings != "" || len(rm.Warnings) != 1 || !strings.Contains(rm.Warnings[0], "stay in enabledPlugins") || !strings.Contains(rm.Warnings[0], file) {
		t.Fatalf("uninstall over a bad settings file: %+v", rm)
	}
	if reg := w.registry(); len(reg) != 0 {
		t.Fatalf("registry after the uninstalls: %v", reg)
	}
}
