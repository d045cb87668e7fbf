package load

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/plugin"
	"github.com/wharfhq/wharf/policy"
	"github.com/wharfhq/wharf/settings"
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
	req := policy.Request{Action: policy.ActionLoad, Plugin: plugin.MustParseID("a@m"),
		Marketplace: policy.Marketplace{Name: "m", Source: &settings.MarketplaceSource{Source: settings.KindDirectory, Path: link}}}
	before := string(appendKey(nil, req))
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(blocked, link); err != nil {
		t.Fatal(err)
	}
	if after := string(appendKey(nil, req)); after == before {
		t.Fatalf("the memo key did not change when %s was repointed from %s to %s", link, ok, blocked)
	}
}
