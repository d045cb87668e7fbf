package plugin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func realMarketplaceBytes(b *testing.B) []byte {
	data, err := os.ReadFile(MarketplaceFile(filepath.Join(realworldDir(b), "wshobson-agents")))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkParseMarketplace parses the largest real marketplace (92 plugins)
// with positions, field paths and unknown-key warnings.
func BenchmarkParseMarketplace(b *testing.B) {
	data := realMarketplaceBytes(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := ParseMarketplace(data, "marketplace.json"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseMarketplaceEncodingJSON is the baseline: encoding/json into
// the same types, without positions, paths or warnings.
func BenchmarkParseMarketplaceEncodingJSON(b *testing.B) {
	data := realMarketplaceBytes(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var m Marketplace
		if err := json.Unmarshal(data, &m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadMarketplace loads every relative plugin of the largest real
// marketplace: manifests, directory walks, hooks files.
func BenchmarkLoadMarketplace(b *testing.B) {
	root := filepath.Join(realworldDir(b), "wshobson-agents")
	m, _, err := ReadMarketplace(root)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		for i := range m.Plugins {
			e := &m.Plugins[i]
			if e.Source.Kind != SourceRelative {
				continue
			}
			dir, err := e.LocalDir(root)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := Load(dir, e); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkAlwaysOnTokens estimates the always-on context of every
// relative plugin of the largest real marketplace (what `wharf list`
// computes per installed plugin): each skill, command and agent file read
// and its front matter parsed as Claude Code does.
func BenchmarkAlwaysOnTokens(b *testing.B) {
	root := filepath.Join(realworldDir(b), "wshobson-agents")
	m, _, err := ReadMarketplace(root)
	if err != nil {
		b.Fatal(err)
	}
	var ps []*Plugin
	for i := range m.Plugins {
		e := &m.Plugins[i]
		if e.Source.Kind != SourceRelative {
			continue
		}
		dir, err := e.LocalDir(root)
		if err != nil {
			b.Fatal(err)
		}
		p, _, err := Load(dir, e)
		if err != nil {
			b.Fatal(err)
		}
		ps = append(ps, p)
	}
	b.ResetTimer()
	for b.Loop() {
		for _, p := range ps {
			p.AlwaysOnTokens()
		}
	}
}
