package load

import (
	"testing"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// A plugin that settings enable but that is not installed is one failed
// row of the pass, typed, with the scope that enables it and the install
// command; a plugin that needs it is demoted with "not installed"; managed
// policy forcing it off removes the row, forcing it on says so.
func TestEnabledButNotInstalled(t *testing.T) {
	recs := installed(t, map[string]string{
		"app@m": `{"name": "app", "version": "1.0.0", "dependencies": ["lib"]}`,
	})
	docs := []settings.Document{
		{Scope: settings.ScopeUser, Name: "user.json", Data: []byte(`{"enabledPlugins": {"lib@m": false, "off@m": true}}`)},
		{Scope: settings.ScopeProject, Name: "project.json", Data: []byte(`{"enabledPlugins": {"lib@m": true, "gone@m": false}}`)},
		{Scope: settings.ScopeLocal, Name: "local.json", Missing: true},
	}
	snap := settings.NewSnapshot(docs)
	in := Input{Records: []cache.Record{recs["app@m"]}, Enabled: snap.Merged.EnabledPlugins, Docs: docs}
	in.Enabled[plugin.MustParseID("app@m")] = true
	e, err := policy.NewEngine([]policy.Layer{{Name: "managed", Managed: true, Origin: "managed-settings.json",
		Settings: []byte(`{"enabledPlugins": {"off@m": false, "forced@m": true}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	in.Enabled[plugin.MustParseID("forced@m")] = true
	in.Enabled[plugin.ID{Name: "dev", Source: plugin.SourceInline}] = true // a --plugin-dir's, never installed
	rows, err := List(bg, Options{Decider: NewDecider(e)}, in)
	if err != nil {
		t.Fatal(err)
	}
	got := rowsByID(rows)
	if len(rows) != 3 {
		t.Fatalf("rows %+v, want app@m, forced@m, lib@m", rows)
	}
	lib := got["lib@m"]
	want := ErrorDetail{Type: TypeNotInstalled, Layer: string(plugin.LayerIntent), Object: "lib@m",
		Message: NotInstalledError(plugin.MustParseID("lib@m")).Error(), Hint: "install it with: wharf install lib@m"}
	if lib.Status != StatusFailed || !lib.Enabled || lib.Scope != "project" || lib.Version != "" ||
		len(lib.ErrorDetails) != 1 || lib.ErrorDetails[0] != want || lib.Errors[0] != want.Message || plugin.HintOf(NotInstalledError(lib.ID)) != want.Hint {
		t.Fatalf("lib@m: %+v", lib)
	}
	if app := got["app@m"]; app.Status != StatusDemoted || app.Chain != "app@m needs lib@m; lib@m is not installed" {
		t.Fatalf("app@m: %+v", app)
	}
	if f := got["forced@m"]; f.Status != StatusFailed || f.Forced != "on" || !f.Type(TypeNotInstalled) {
		t.Fatalf("forced@m: %+v", f)
	}
	if _, ok := got["off@m"]; ok {
		t.Fatalf("off@m is forced off by policy, yet listed: %+v", got["off@m"])
	}
	if _, ok := got["gone@m"]; ok {
		t.Fatalf("gone@m is disabled, yet listed: %+v", got["gone@m"])
	}

	// One file read as two scopes (a home inside the project) is the lower.
	same := []settings.Document{
		{Scope: settings.ScopeUser, Name: "home/settings.json", Data: []byte(`{"enabledPlugins": {"lib@m": true}}`)},
		{Scope: settings.ScopeProject, Name: "home/settings.json", Data: []byte(`{"enabledPlugins": {"lib@m": true}}`)},
	}
	if s := enabledScope(same, plugin.MustParseID("lib@m")); s != "user" {
		t.Fatalf("scope of a file read as user and project = %q, want user", s)
	}

	// Installed after all: the row is the installed plugin's, not a second one.
	in.Broken = nil
	in.Enabled = map[plugin.ID]bool{plugin.MustParseID("app@m"): true}
	rows, err = List(bg, Options{}, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Type(TypeNotInstalled) {
		t.Fatalf("rows %+v", rows)
	}
}
