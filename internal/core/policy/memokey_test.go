package policy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// A memoized decision about a local marketplace is not reused once the
// link it was reached through points elsewhere: policy matches the resolved
// path, so the memo key carries it.
func TestMemoKeyFollowsRepointedLink(t *testing.T) {
	tmp := t.TempDir()
	ok, blocked, link := filepath.Join(tmp, "ok"), filepath.Join(tmp, "blocked"), filepath.Join(tmp, "mkt")
	for _, d := range []string{ok, blocked} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(ok, link); err != nil {
		t.Skip("symlinks unavailable:", err)
	}
	req := Request{Action: ActionLoad, Plugin: plugin.MustParseID("a@m"),
		Marketplace: Marketplace{Name: "m", Source: &plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: link}}}
	before := string(memoKey(nil, req, nil))
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(blocked, link); err != nil {
		t.Fatal(err)
	}
	if after := string(memoKey(nil, req, nil)); after == before {
		t.Fatalf("the memo key did not change when %s was repointed from %s to %s", link, ok, blocked)
	}
}

// Every field of a request is part of its memo key: two requests that
// differ only in a field policy reads never share a memoized decision.
func TestMemoKeyCoversEveryField(t *testing.T) {
	base := Request{Action: ActionInstall, Plugin: plugin.MustParseID("a@m"), Marketplace: Marketplace{Name: "m"}}
	variants := map[string]Request{}
	r := base
	r.RequiredBy = plugin.MustParseID("b@m")
	variants["requiredBy"] = r
	r = base
	r.DeclaredCross = []string{"other"}
	variants["declaredCross"] = r
	r = base
	r.Signatures = []string{"key1"}
	variants["signatures"] = r
	r = base
	r.Surface, r.From = settings.SurfaceHooks, FromPlugin
	variants["surface"] = r
	r = base
	r.Path = "/x"
	variants["path"] = r
	r = base
	r.Surface, r.From, r.ManagedDir = settings.SurfaceHooks, FromManaged, "/etc/wharf-extra"
	variants["managedDir"] = r
	r = base
	r.Surface, r.From = settings.SurfaceHooks, FromManaged
	variants["managed"] = r
	r = base
	r.Marketplace.Source = &plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "o/r"}
	variants["source"] = r
	r = base
	r.Content = &Content{Capabilities: capability.Set{Plugin: "a"}}
	variants["content"] = r
	r = base
	r.Content = &Content{Capabilities: capability.Set{Plugin: "a", SensitiveConfig: []string{"token"}}}
	variants["capabilities"] = r
	r = base
	r.Content = &Content{Capabilities: capability.Set{Plugin: "a"}, Findings: []capability.Finding{{Kind: capability.KindBidiUnicode, File: "x.md", Line: 1}}}
	variants["findings"] = r
	seen := map[string]string{string(memoKey(nil, base, nil)): "base"}
	for name, v := range variants {
		k := string(memoKey(nil, v, nil))
		if other, dup := seen[k]; dup {
			t.Errorf("%s and %s share a memo key", name, other)
		}
		seen[k] = name
	}
}
