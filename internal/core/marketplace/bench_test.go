package marketplace

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

// BenchmarkAddGit measures a shallow add of an 800-file marketplace over
// file://. Compare with git in bench/marketplace-add.sh.
func BenchmarkAddGit(b *testing.B) {
	files := map[string]string{}
	var entries []string
	for i := 0; i < 160; i++ {
		p := fmt.Sprintf("plugins/p%d/", i)
		entries = append(entries, fmt.Sprintf(`{"name":"p%d","source":"./plugins/p%d"}`, i, i))
		files[p+".claude-plugin/plugin.json"] = fmt.Sprintf(`{"name":"p%d","version":"1.0.0"}`, i)
		files[p+"commands/c.md"] = strings.Repeat("command text\n", 200)
		files[p+"agents/a.md"] = strings.Repeat("agent text\n", 100)
		files[p+"skills/s/SKILL.md"] = strings.Repeat("skill text\n", 400)
		files[p+"README.md"] = "readme\n"
	}
	files[ManifestPath] = `{"name":"bench","owner":{"name":"b"},"plugins":[` + strings.Join(entries, ",") + `]}`
	repo := newGitRepoB(b, files)
	src := plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "file://" + repo}
	b.ResetTimer()
	for b.Loop() {
		home := b.TempDir()
		st, err := store.OpenBolt(filepath.Join(home, "state.db"), store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		m := NewManager(st, Options{Dir: filepath.Join(home, "marketplaces"), Getenv: func(string) string { return "" }})
		if _, err := m.Add(context.Background(), src, ""); err != nil {
			b.Fatal(err)
		}
		st.Close()
	}
}
