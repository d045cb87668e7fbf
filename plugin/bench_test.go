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

// relativeEntry is a marketplace entry of a plugin stored in the
// marketplace, with the plugin's directory.
type relativeEntry struct {
	dir   string
	entry *Entry
}

// relativeEntries are the plugins the real marketplace name stores itself.
func relativeEntries(b *testing.B, name string) []relativeEntry {
	root := filepath.Join(realworldDir(b), name)
	m, _, err := ReadMarketplace(root)
	if err != nil {
		b.Fatal(err)
	}
	out, errs := relativeEntriesOf(m, root)
	if len(errs) > 0 {
		b.Fatal(errs[0])
	}
	return out
}

// relativeEntriesOf are the plugins m, read from root, stores itself, and
// the errors of those whose directory cannot be used.
func relativeEntriesOf(m *Marketplace, root string) (out []relativeEntry, errs []error) {
	for i := range m.Plugins {
		e := &m.Plugins[i]
		if e.Source.Kind != SourceRelative {
			continue
		}
		dir, err := e.LocalDir(root)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, relativeEntry{dir, e})
	}
	return out, errs
}

// BenchmarkLoadMarketplace loads every relative plugin of the largest real
// marketplace: manifests, directory walks, hooks files.
func BenchmarkLoadMarketplace(b *testing.B) {
	entries := relativeEntries(b, "wshobson-agents")
	for b.Loop() {
		for _, r := range entries {
			if _, _, err := Load(r.dir, r.entry); err != nil {
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
	var ps []*Plugin
	for _, r := range relativeEntries(b, "wshobson-agents") {
		p, _, err := Load(r.dir, r.entry)
		if err != nil {
			b.Fatal(err)
		}
		ps = append(ps, p)
	}
	for b.Loop() {
		for _, p := range ps {
			p.AlwaysOnTokens()
		}
	}
}
