package source

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// TestFetchRelativeOmitted: Result.Omitted says a relative copy left out
// the plugin directory's top-level .git (a directory or a file), by
// directory descriptors and by path alike, and only then; a .git deeper in
// the tree is copied.
func TestFetchRelativeOmitted(t *testing.T) {
	mkt := t.TempDir()
	writeFile(t, filepath.Join(mkt, ".claude-plugin/marketplace.json"), `{}`, 0o644)
	writeFile(t, filepath.Join(mkt, "plugins/plain/commands/a.md"), "a", 0o644)
	writeFile(t, filepath.Join(mkt, "plugins/deep/sub/.git/config"), "kept", 0o644)
	writeFile(t, filepath.Join(mkt, "plugins/gitdir/.git/config"), "left out", 0o644)
	writeFile(t, filepath.Join(mkt, "plugins/gitdir/a.md"), "a", 0o644)
	writeFile(t, filepath.Join(mkt, "plugins/gitfile/.git"), "gitdir: elsewhere", 0o644)
	want := map[string]bool{"plain": false, "deep": false, "gitdir": true, "gitfile": true}
	for _, at := range []bool{true, false} {
		old := relativeAt
		relativeAt = at
		for name, omitted := range want {
			_, dest := sandbox(t)
			res, err := (&Fetcher{}).Fetch(context.Background(), Request{Plugin: name + "@m",
				Source: plugin.Source{Kind: plugin.SourceRelative, Path: "./plugins/" + name}, MarketplaceDir: mkt, Dest: dest})
			if err != nil {
				t.Fatalf("at=%v %s: %v", at, name, err)
			}
			if res.Omitted != omitted {
				t.Errorf("at=%v %s: Omitted = %v, want %v", at, name, res.Omitted, omitted)
			}
		}
		relativeAt = old
	}
}
