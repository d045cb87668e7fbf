package api

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/catalog"
	"github.com/wharfhq/wharf/plugin"
)

// The catalog and the UI name a plugin's components as an agent registers
// them: under the plugin.json name, not the marketplace entry's.
func TestPluginDetailNamespaceFromPluginJSON(t *testing.T) {
	root := filepath.Join(t.TempDir(), "mkt")
	writeFile(t, filepath.Join(root, ".claude-plugin", "marketplace.json"),
		`{"name":"corp","owner":{"name":"o"},"plugins":[{"name":"claude-ops","source":"./ops"}]}`)
	writeFile(t, filepath.Join(root, "ops", ".claude-plugin", "plugin.json"), `{"name":"ops","version":"1.0.0"}`)
	writeFile(t, filepath.Join(root, "ops", "commands", "ops-dash.md"), "x\n")
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "s.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mgr := marketplace.NewManager(st, marketplace.Options{Dir: t.TempDir()})
	if _, err := mgr.Add(context.Background(), plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: root}, ""); err != nil {
		t.Fatal(err)
	}
	d, err := catalog.New(mgr).Plugin(context.Background(), plugin.MustParseID("claude-ops@corp"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Namespace != "ops" || d.Name != "claude-ops" {
		t.Fatalf("namespace %q name %q; want ops and claude-ops", d.Namespace, d.Name)
	}
	groups := componentGroups(namespaceOf(d), d.Components)
	if len(groups) != 1 || len(groups[0].Items) != 1 || groups[0].Items[0].Namespaced != "ops:ops-dash" {
		t.Fatalf("groups = %+v", groups)
	}
}
