package policy

import (
	"path/filepath"
	"testing"
)

// Extends holds only when the other engine's layers are the highest
// layers, byte for byte, and both read requests with the same GitHub host:
// any difference in a managed document, an added module, a missing layer,
// another order or another host makes the guard ask both.
func TestExtendsComparesEveryInputOfTheHigherLayers(t *testing.T) {
	root := t.TempDir()
	managed, extra, lower := filepath.Join(root, "managed"), filepath.Join(root, "extra"), filepath.Join(root, "lower.json")
	writeFile(t, filepath.Join(managed, "managed-settings.json"), `{"enabledPlugins":{"x@corp":false}}`)
	writeFile(t, filepath.Join(extra, "managed-settings.json"), `{"blockedMarketplaces":[]}`)
	writeFile(t, lower, `{"enabledPlugins":{"x@corp":true}}`)
	open := func(src Sources, opts ...Option) *Engine {
		t.Helper()
		e, err := Open(src, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	m := open(Sources{ManagedDir: managed, ExtraManagedDir: extra}, WithGitHubHost(""))
	cases := []struct {
		name string
		e    *Engine
		want bool
	}{
		{"the same layers", open(Sources{ManagedDir: managed, ExtraManagedDir: extra}, WithGitHubHost("")), true},
		{"the same layers and a lower one", open(Sources{ManagedDir: managed, ExtraManagedDir: extra, Paths: []string{lower}}, WithGitHubHost("")), true},
		{"the lower layer alone", open(Sources{Paths: []string{lower}}, WithGitHubHost("")), false},
		{"the system layer only", open(Sources{ManagedDir: managed}, WithGitHubHost("")), false},
		{"the extra layer only", open(Sources{ExtraManagedDir: extra}, WithGitHubHost("")), false},
		{"another GitHub host", open(Sources{ManagedDir: managed, ExtraManagedDir: extra}, WithGitHubHost("ghe.example.com")), false},
	}
	for _, c := range cases {
		v, mv, ok := c.e.Extends(m)
		if ok != c.want || v != c.e.Version() || mv != m.Version() {
			t.Errorf("%s: Extends = %v (versions %s, %s), want %v", c.name, ok, v, mv, c.want)
		}
	}
	// A change to the managed document after the engines were opened: the
	// engine that re-reads it no longer extends the one that did not.
	e := open(Sources{ManagedDir: managed, ExtraManagedDir: extra, Paths: []string{lower}}, WithGitHubHost(""))
	writeFile(t, filepath.Join(managed, "managed-settings.json"), `{"enabledPlugins":{"x@corp":true}}`)
	if _, err := e.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := e.Extends(m); ok {
		t.Fatal("an engine with another managed document extends the managed engine")
	}
	writeFile(t, filepath.Join(managed, "extra.rego"), "package wharf.admin.managed\n\ndeny contains \"no\" if { input.plugin == \"y@corp\" }\n")
	if _, err := m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := e.Extends(m); ok {
		t.Fatal("an engine without the managed module extends the managed engine")
	}
	if _, err := e.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := e.Extends(m); !ok {
		t.Fatal("after both re-read the same files, the home's engine does not extend the managed one")
	}
}
