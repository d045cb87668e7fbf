package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// BenchmarkFetchGitShallow fetches a plugin repository (WHARF_BENCH_REPO, or
// one with 200 files made here) over file:// into a fresh directory per
// iteration. bench/source-fetch.sh compares it with `git clone --depth 1`.
func BenchmarkFetchGitShallow(b *testing.B) {
	repo := os.Getenv("WHARF_BENCH_REPO")
	if repo == "" {
		repo = b.TempDir()
		gitCmdB(b, repo, "init", "-q", "-b", "main")
		for i := 0; i < 200; i++ {
			p := filepath.Join(repo, fmt.Sprintf("skills/s%03d/SKILL.md", i))
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(fmt.Sprintf("---\nname: s%d\n---\n%0512d\n", i, i)), 0o644)
		}
		gitCmdB(b, repo, "add", "-A")
		gitCmdB(b, repo, "commit", "-q", "-m", "bench")
	}
	f := &Fetcher{AllowFileURLs: true}
	src := plugin.Source{Kind: plugin.SourceURL, URL: "file://" + repo}
	parent := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dest := filepath.Join(parent, fmt.Sprint(i))
		os.Mkdir(dest, 0o755)
		if _, err := f.Fetch(context.Background(), Request{Plugin: "bench@m", Source: src, Dest: dest}); err != nil {
			b.Fatal(err)
		}
	}
}

func gitCmdB(b *testing.B, dir string, args ...string) {
	b.Helper()
	cmd := execGit(dir, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
