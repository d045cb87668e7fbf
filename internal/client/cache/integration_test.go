package cache_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// TestInstallFromGitSubdir runs the whole materialization flow: a git
// repository with a plugin directory, fetched by package source into the
// cache's temporary dir, sealed, verified, renamed and recorded.
func TestInstallFromGitSubdir(t *testing.T) {
	repo := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+repo,
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	os.MkdirAll(filepath.Join(repo, "plugins/deploy/hooks"), 0o755)
	os.WriteFile(filepath.Join(repo, "plugins/deploy/hooks/check.sh"), []byte("#!/bin/sh\nexit 0\n"), 0o755)
	os.WriteFile(filepath.Join(repo, "plugins/deploy/README.md"), []byte("deploy\n"), 0o644)
	git("add", "-A")
	git("commit", "-q", "-m", "deploy")
	head := git("rev-parse", "HEAD")

	home := t.TempDir()
	st, err := store.OpenBolt(filepath.Join(home, "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := cache.New(cache.Options{Home: home, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	f := &source.Fetcher{AllowFileURLs: true}
	id := plugin.MustParseID("deploy@corp")
	src := plugin.Source{Kind: plugin.SourceGitSubdir, URL: "file://" + repo, Path: "./plugins/deploy"}
	var commit string
	v, err := c.Ensure(context.Background(), cache.Request{ID: id, Version: "1.0.0", Fill: func(ctx context.Context, dir string) error {
		res, err := f.Fetch(ctx, source.Request{Plugin: id.String(), Source: src, Dest: dir})
		if err != nil {
			return err
		}
		commit = res.Commit
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	rec := cache.RecordFor(v, "user")
	rec.GitCommitSha = commit
	if err := c.Put(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if got.GitCommitSha != head || got.InstallPath != filepath.Join(home, "cache/corp/deploy/1.0.0") {
		t.Fatalf("record = %+v", got)
	}
	if err := trust.CheckPin(id, "1.0.0", got.Digest, got.InstallPath); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(got.InstallPath, "hooks/check.sh")); err != nil || fi.Mode().Perm() != 0o555 {
		t.Errorf("hooks/check.sh: %v %v, want read-only executable", fi.Mode(), err)
	}
}
