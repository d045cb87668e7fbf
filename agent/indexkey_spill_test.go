package agent

import (
	"fmt"
	"testing"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// indexKey hashes its buffer in pieces once it passes keySpill; the key
// must be the one hashing the whole buffer at once gives, and still change
// with every fingerprint entry.
func TestIndexKeySpillEqualsWhole(t *testing.T) {
	record := func(files int) cache.Record {
		r := cache.Record{ID: plugin.ID{Name: "big", Source: "corp"}, Version: "1.0.0", InstallPath: "/c/corp/big/1.0.0", Digest: "w1:abc"}
		for i := 0; i < files; i++ {
			r.Fingerprint.Entries = append(r.Fingerprint.Entries, trust.FPEntry{
				Path: fmt.Sprintf("skills/s%d/SKILL.md", i), Kind: "f", Size: int64(i), Mtime: int64(1e9 + i), Ctime: int64(2e9 + i), Mode: 0o444,
				Hash: fmt.Sprintf("%064x", i)})
		}
		return r
	}
	entry := &plugin.Entry{Manifest: plugin.Manifest{Name: "big", Description: "d"}, Source: plugin.Source{Kind: plugin.SourceRelative, Path: "./big"}}
	x := expander{root: "/c/corp/big/1.0.0", data: "/d", project: "/p", uc: map[string]string{"k": "v"}, held: []string{"secret"}}
	saved := keySpill
	defer func() { keySpill = saved }()
	for _, files := range []int{0, 1, 20, 21, 500} {
		for _, e := range []*plugin.Entry{nil, entry} {
			r := record(files)
			keySpill = 1 << 30
			whole := indexKey(r, e, x)
			for _, spill := range []int{0, 1, 100, saved} {
				keySpill = spill
				if got := indexKey(r, e, x); got != whole {
					t.Fatalf("%d files, spill at %d bytes: key %s, whole buffer %s", files, spill, got, whole)
				}
			}
			if files > 0 {
				keySpill = saved
				r.Fingerprint.Entries[files-1].Mtime++
				if indexKey(r, e, x) == whole {
					t.Fatalf("%d files: the last entry's mtime does not change the key", files)
				}
			}
		}
	}
}
