package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

func TestFetchRelative(t *testing.T) {
	mkt := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret.txt")
	writeFile(t, secret, "secret", 0o644)
	writeFile(t, filepath.Join(mkt, ".claude-plugin/marketplace.json"), `{}`, 0o644)
	writeFile(t, filepath.Join(mkt, "plugins/good/commands/a.md"), "a", 0o644)
	writeFile(t, filepath.Join(mkt, "plugins/good/bin/run"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(mkt, "plugins/good/.git/config"), "nested repo metadata", 0o644)
	os.Symlink("commands/a.md", filepath.Join(mkt, "plugins/good/alias.md"))
	writeFile(t, filepath.Join(mkt, "plugins/leaky/ok.md"), "ok", 0o644)
	os.Symlink(secret, filepath.Join(mkt, "plugins/leaky/secret"))
	writeFile(t, filepath.Join(mkt, "plugins/sibling/x.md"), "x", 0o644)
	os.MkdirAll(filepath.Join(mkt, "plugins/peek"), 0o755)
	os.Symlink("../sibling/x.md", filepath.Join(mkt, "plugins/peek/x.md"))
	os.Symlink(filepath.Dir(secret), filepath.Join(mkt, "plugins/outside"))
	writeFile(t, filepath.Join(mkt, "plugins/file.md"), "not a dir", 0o644)

	f := &Fetcher{}
	rel := func(p string) plugin.Source { return plugin.Source{Kind: plugin.SourceRelative, Path: p} }
	run := func(src plugin.Source, dest string) (*Result, error) {
		return f.Fetch(context.Background(), Request{Plugin: "p@m", Source: src, MarketplaceDir: mkt, Dest: dest})
	}
	t.Run("copy", func(t *testing.T) {
		parent, dest := sandbox(t)
		if _, err := run(rel("./plugins/good"), dest); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, filepath.Join(dest, "commands/a.md")); got != "a" {
			t.Errorf("commands/a.md = %q", got)
		}
		if fi, _ := os.Stat(filepath.Join(dest, "bin/run")); fi == nil || fi.Mode()&0o100 == 0 {
			t.Errorf("bin/run lost its exec bit")
		}
		if l, err := os.Readlink(filepath.Join(dest, "alias.md")); err != nil || l != "commands/a.md" {
			t.Errorf("alias.md -> %q, %v", l, err)
		}
		if _, err := os.Stat(filepath.Join(dest, ".git")); !os.IsNotExist(err) {
			t.Errorf(".git was copied")
		}
		assertOnlyDest(t, parent)
	})
	cases := []struct {
		name, path string
		want       error
	}{
		{"dot-dot", "./plugins/../../x", ErrUnsafePath},
		{"absolute", "/etc", ErrUnsafePath},
		{"symlink to a file outside", "./plugins/leaky", ErrLink},
		{"symlink out of the plugin into the marketplace", "./plugins/peek", ErrLink},
		{"source dir is a symlink out of the marketplace", "./plugins/outside", ErrUnsafePath},
		{"missing", "./plugins/none", ErrNotFound},
		{"a file", "./plugins/file.md", ErrNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent, dest := sandbox(t)
			_, err := run(rel(tc.path), dest)
			wantSourceErr(t, err, tc.want)
			assertOnlyDest(t, parent)
		})
	}
	t.Run("destination not empty", func(t *testing.T) {
		_, dest := sandbox(t)
		writeFile(t, filepath.Join(dest, "junk"), "", 0o644)
		_, err := run(rel("./plugins/good"), dest)
		wantSourceErr(t, err, ErrNotEmpty)
	})
}

// TestFetchRelativeCommitOfCheckout: a plugin of a marketplace added as a
// local directory that is a git checkout gets the checkout's commit, which
// versions it when nothing else does (as Claude Code versions it); outside
// a checkout there is none.
func TestFetchRelativeCommitOfCheckout(t *testing.T) {
	f := &Fetcher{}
	fetch := func(mkt string) *Result {
		t.Helper()
		_, dest := sandbox(t)
		r, err := f.Fetch(context.Background(), Request{Plugin: "p@m", Source: plugin.Source{Kind: plugin.SourceRelative, Path: "./plugins/p"},
			MarketplaceDir: mkt, Dest: dest})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	plain := t.TempDir()
	writeFile(t, filepath.Join(plain, "plugins/p/commands/a.md"), "a", 0o644)
	if r := fetch(plain); r.Commit != "" {
		t.Errorf("commit outside a git checkout = %q", r.Commit)
	}

	repo := t.TempDir()
	writeFile(t, filepath.Join(repo, "plugins/p/commands/a.md"), "a", 0o644)
	gitCmd(t, repo, "init", "-q")
	gitCmd(t, repo, "add", ".")
	gitCmd(t, repo, "commit", "-q", "-m", "one")
	head := strings.TrimSpace(gitCmd(t, repo, "rev-parse", "HEAD"))
	if r := fetch(repo); r.Commit != head {
		t.Errorf("commit = %q; want the checkout's HEAD %s", r.Commit, head)
	}
	// A marketplace in a sub-directory of the checkout has the same commit.
	writeFile(t, filepath.Join(repo, "sub/plugins/p/commands/a.md"), "a", 0o644)
	if r := fetch(filepath.Join(repo, "sub")); r.Commit != head {
		t.Errorf("commit in a sub-directory = %q; want %s", r.Commit, head)
	}
}
