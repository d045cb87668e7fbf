package install

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/cache"
	"github.com/wharfhq/wharf/load"
	"github.com/wharfhq/wharf/marketplace"
	"github.com/wharfhq/wharf/plugin"
	"github.com/wharfhq/wharf/policy"
	"github.com/wharfhq/wharf/resolver"
	"github.com/wharfhq/wharf/settings"
	"github.com/wharfhq/wharf/store"
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
	w := &world{t: t, home: t.TempDir(), mkt: t.TempDir()}
	var entries []string
	for name, deps := range plugins {
		entries = append(entries, fmt.Sprintf(`{"name": %q, "source": "./plugins/%s"}`, name, name))
		q := make([]string, len(deps))
		for i, d := range deps {
			q[i] = fmt.Sprintf("%q", d)
		}
		write(t, filepath.Join(w.mkt, "plugins", name, ".claude-plugin", "plugin.json"),
			fmt.Sprintf(`{"name": %q, "version": "1.0.0", "dependencies": [%s]}`, name, strings.Join(q, ",")))
		write(t, filepath.Join(w.mkt, "plugins", name, "commands", "run.md"), "Run "+name+".\n")
	}
	write(t, filepath.Join(w.mkt, ".claude-plugin", "marketplace.json"),
		`{"name": "corp", "owner": {"name": "t"}, "plugins": [`+strings.Join(entries, ",")+`]}`)
	st, err := store.OpenBolt(filepath.Join(w.home, "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mgr := marketplace.NewManager(st, marketplace.Options{Dir: filepath.Join(w.home, "marketplaces")})
	src, err := marketplace.ParseSource(w.mkt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.Add(bg, src, ""); err != nil {
		t.Fatal(err)
	}
	w.c, err = cache.New(cache.Options{Home: w.home, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	managedDir := t.TempDir()
	if managed != "" {
		write(t, filepath.Join(managedDir, "managed-settings.json"), managed)
	}
	pol, err := policy.Open(policy.Sources{ManagedDir: managedDir})
	if err != nil {
		t.Fatal(err)
	}
	w.in, err = New(Options{Marketplaces: mgr, Cache: w.c, Policy: pol, Settings: settings.Paths{Home: w.home, ManagedDir: managedDir}})
	if err != nil {
		t.Fatal(err)
	}
	return w
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
	for _, r := range rows {
		if r.Status != load.StatusDemoted || !strings.Contains(r.Chain, "d@corp is not installed") {
			t.Errorf("%s: status %s chain %q, want demoted because d@corp is not installed", r.ID, r.Status, r.Chain)
		}
	}
	if _, err := w.in.Uninstall(bg, plugin.MustParseID("d@corp"), false); plugin.LayerOf(err) != plugin.LayerMaterialization {
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
