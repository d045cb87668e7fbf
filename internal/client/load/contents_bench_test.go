package load

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/testutil/sharedtest"
	"github.com/wharfhq/wharf/plugin"
)

// BenchmarkPassContent is a load pass (`wharf list`) over 100 installed
// plugins cycled from the real marketplaces, under a policy with a
// deniedCapabilities entry: without the capability sets (no policy
// reads content), computing every set from its tree, and reading the
// kept sets back (a new Contents each pass, as a new process).
func BenchmarkPassContent(b *testing.B) {
	rw := sharedtest.RealWorldDir(b)
	var srcs []string
	var entries []*plugin.Entry
	dirs, _ := os.ReadDir(rw)
	for _, d := range dirs {
		root := filepath.Join(rw, d.Name())
		m, _, err := plugin.ReadMarketplace(root)
		if err != nil {
			continue
		}
		for i := range m.Plugins {
			e := &m.Plugins[i]
			if e.Source.Kind != plugin.SourceRelative {
				continue
			}
			if dir, err := e.LocalDir(root); err == nil {
				srcs, entries = append(srcs, dir), append(entries, e)
			}
		}
	}
	if len(srcs) == 0 {
		b.Skip("no real plugins")
	}
	tc := newTreeCache(b)
	var recs []cache.Record
	enabled := map[plugin.ID]bool{}
	entryOf := map[plugin.ID]*plugin.Entry{}
	for i := range 100 {
		id := plugin.MustParseID(fmt.Sprintf("p%03d@corp", i))
		v, err := tc.c.Materialize(bg, id, "1.0.0", func(_ context.Context, dir string) error {
			return os.CopyFS(dir, os.DirFS(srcs[i%len(srcs)]))
		})
		if err != nil {
			b.Fatal(err)
		}
		rec := cache.RecordFor(v, "user")
		recs = append(recs, rec)
		enabled[id] = true
		entryOf[id] = entries[i%len(srcs)]
	}
	in := Input{Records: recs, Enabled: enabled}
	kept := filepath.Join(b.TempDir(), "capabilities")
	for _, c := range []struct {
		name     string
		settings string
		contents func() *Contents
	}{
		{"no-content-rules", `{}`, func() *Contents { return nil }},
		{"computed", `{"deniedCapabilities": [{"kind": "mcp-runtime-fetch"}]}`, func() *Contents { return nil }},
		{"kept", `{"deniedCapabilities": [{"kind": "mcp-runtime-fetch"}]}`, func() *Contents { return NewContents(kept) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			e, err := policy.NewEngine([]policy.Layer{{Name: "managed", Settings: []byte(c.settings)}})
			if err != nil {
				b.Fatal(err)
			}
			o := Options{Decider: NewDecider(e), Entries: func(id plugin.ID) *plugin.Entry { return entryOf[id] }}
			if c.name == "kept" {
				o.Contents = c.contents()
				if _, err := Pass(bg, o, in, nil); err != nil { // fill the files
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				o.Contents = c.contents()
				if _, err := Pass(bg, o, in, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
