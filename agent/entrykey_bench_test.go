package agent

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// BenchmarkIndexKeyEntry is the marketplace entry's share of indexKey over
// the entries of the real marketplaces in ../shared/realworld (skipped when
// absent): "fields" appends them as indexKey does, "json" marshals them as
// it did before format 6. Per entry.
func BenchmarkIndexKeyEntry(b *testing.B) {
	var entries []*plugin.Entry
	for _, m := range []string{"anthropics-claude-code", "wshobson-agents"} {
		mk, _, err := plugin.ReadMarketplace(filepath.Join("..", "..", "shared", "realworld", m))
		if err != nil {
			b.Skipf("real-world marketplace %s: %v", m, err)
		}
		for i := range mk.Plugins {
			entries = append(entries, &mk.Plugins[i])
		}
	}
	var buf [4096]byte
	b.Run("fields", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			appendEntry(buf[:0], entries[i%len(entries)])
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			js, _ := json.Marshal(entries[i%len(entries)])
			keyStrs(buf[:0], string(js))
		}
	})
}
