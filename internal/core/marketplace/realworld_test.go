package marketplace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/sharedtest"
	"github.com/wharfhq/wharf/plugin"
)

// TestRealWorldMarketplaces adds every published marketplace in
// ../shared/realworld as a directory source and resolves every entry: a
// relative plugin must be a directory inside the marketplace, an external
// one a concrete URL or package.
func TestRealWorldMarketplaces(t *testing.T) {
	root := sharedtest.RealWorldDir(t)
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := newTestManager(t, Options{})
	total, reserved := 0, 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		abs, _ := filepath.Abs(filepath.Join(root, d.Name()))
		src := plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: abs}
		k, err := m.Add(context.Background(), src, "")
		if errors.Is(err, ErrReservedName) {
			// Copies of Anthropic's own marketplaces carry names reserved
			// for the anthropics GitHub organization: added from a
			// directory, they need another name, as in Claude Code.
			reserved++
			k, err = m.Add(context.Background(), src, "shared-"+strings.TrimPrefix(d.Name(), "anthropics-"))
		}
		if err != nil {
			t.Errorf("%s: %v", d.Name(), err)
			continue
		}
		t.Logf("%s: marketplace %s", d.Name(), k.Name)
	}
	// claude-code-plugins (anthropics/claude-code) and
	// anthropic-agent-skills (anthropics/skills).
	if reserved != 2 {
		t.Errorf("%d shared marketplaces needed another name; want 2", reserved)
	}
	c, err := m.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range c.Problems() {
		t.Error(p)
	}
	for _, h := range c.All() {
		total++
		rs, err := h.Resolve(func(string) string { return "" })
		if err != nil {
			t.Errorf("%s: %v", h.ID, err)
			continue
		}
		switch rs.Kind {
		case plugin.SourceRelative:
			if fi, err := os.Stat(rs.Dir); err != nil || !fi.IsDir() {
				t.Errorf("%s: relative source %s is not a directory: %v", h.ID, rs.Dir, err)
			}
		case plugin.SourceNPM:
			if rs.Package == "" {
				t.Errorf("%s: npm source without a package", h.ID)
			}
		default:
			if !strings.HasPrefix(rs.URL, "https://") && !strings.HasPrefix(rs.URL, "git@") {
				t.Errorf("%s: %s source resolved to %q", h.ID, rs.Kind, rs.URL)
			}
		}
	}
	// 13 + 92 + 3 + 10 entries, as published.
	if total != 118 {
		t.Errorf("catalog holds %d entries, want 118", total)
	}
	if hits := c.Search("superpowers"); len(hits) == 0 {
		t.Error("search found nothing for superpowers")
	}
}
