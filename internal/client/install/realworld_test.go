package install

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/testutil/sharedtest"
	"github.com/wharfhq/wharf/internal/testutil/testworld"
	"github.com/wharfhq/wharf/plugin"
)

// TestRealWorldInstallAll adds each marketplace of ../shared/realworld as a
// directory (copies of Anthropic's own marketplaces under another name, as
// a Claude Code user must add them), installs every plugin stored in it
// with the real installer, and loads each installed tree with the plugin
// loader agents use: every plugin installs, and its usable components load.
// It logs, per marketplace, plugins installed / components loaded /
// components failed with their reasons.
func TestRealWorldInstallAll(t *testing.T) {
	root := sharedtest.RealWorldDir(t)
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	tw := testworld.New(t)
	c := tw.Cache
	mgr, in := newInstaller(t, tw)
	totalInstalled := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		abs, _ := filepath.Abs(filepath.Join(root, d.Name()))
		src := plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: abs}
		k, err := mgr.Add(bg, src, "")
		if errors.Is(err, marketplace.ErrReservedName) {
			k, err = mgr.Add(bg, src, "shared-"+strings.TrimPrefix(d.Name(), "anthropics-"))
		}
		if err != nil {
			t.Errorf("%s: add: %v", d.Name(), err)
			continue
		}
		m, _, err := plugin.ReadMarketplace(abs)
		if err != nil {
			t.Fatal(err)
		}
		installed, loaded, remote := 0, 0, 0
		var failed []string
		for i := range m.Plugins {
			e := &m.Plugins[i]
			if e.Source.Kind != plugin.SourceRelative {
				remote++
				continue
			}
			id := plugin.ID{Name: e.Name, Source: k.Name}
			if _, err := in.Install(bg, Request{ID: id}); err != nil {
				t.Errorf("install %s: %v", id, err)
				continue
			}
			rec, err := c.Get(id)
			if err != nil {
				t.Errorf("%s: not registered: %v", id, err)
				continue
			}
			p, _, err := plugin.Load(rec.InstallPath, e)
			if err != nil {
				t.Errorf("load %s from %s: %v", id, rec.InstallPath, err)
				continue
			}
			if len(p.Components) == 0 {
				t.Errorf("%s: no usable component", id)
			}
			installed++
			loaded += len(p.Components)
			for _, f := range p.Failed {
				failed = append(failed, id.String()+": "+f.String())
			}
		}
		sort.Strings(failed)
		t.Logf("%s (%s): %d plugins installed (%d fetched from elsewhere, not installed here), %d components loaded, %d failed%s",
			d.Name(), k.Name, installed, remote, loaded, len(failed), indentList(failed))
		totalInstalled += installed
	}
	// 13 + 3 + 0 + 91 plugins stored in the marketplaces.
	if totalInstalled != 107 {
		t.Errorf("installed %d plugins; want all 107 stored in the shared marketplaces", totalInstalled)
	}
}

func indentList(items []string) string {
	if len(items) == 0 {
		return ""
	}
	return fmt.Sprintf(":\n  %s", strings.Join(items, "\n  "))
}
