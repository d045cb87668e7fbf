package source

import (
	"os"
	"path/filepath"
	"testing"

	netfetch "github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/plugin"
)

func TestFetchGitHubBaseURL(t *testing.T) {
	base := t.TempDir()
	repo := newTestRepo(t, filepath.Join(base, "acme", "tools.git"))
	f := &Fetcher{Net: netfetch.Config{GitHubHost: "file://" + base}, AllowFileURLs: true}
	parent, dest := sandbox(t)
	res, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceGitHub, Repo: "acme/tools"}, dest)
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit != repo.second {
		t.Errorf("commit = %s, want main's head %s", res.Commit, repo.second)
	}
	if got := readFile(t, filepath.Join(dest, "bin/run.sh")); got != "#!/bin/sh\necho v2\n" {
		t.Errorf("bin/run.sh = %q", got)
	}
	fi, err := os.Stat(filepath.Join(dest, "bin/run.sh"))
	if err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("bin/run.sh lost its executable bit: %v %v", fi.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(dest, "run")); err != nil || target != "bin/run.sh" {
		t.Errorf("symlink run -> %q, %v", target, err)
	}
	if _, err := os.Stat(filepath.Join(dest, ".git")); !os.IsNotExist(err) {
		t.Errorf(".git exists in the materialized tree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dest, "feature.txt")); !os.IsNotExist(err) {
		t.Errorf("feature branch content leaked into main fetch")
	}
	assertOnlyDest(t, parent)
}

func TestFetchGitRefAndSHA(t *testing.T) {
	repo := newTestRepo(t, filepath.Join(t.TempDir(), "r.git"))
	f := &Fetcher{AllowFileURLs: true}
	url := "file://" + repo.bare
	cases := []struct {
		name       string
		src        plugin.Source
		wantCommit string
		wantRun    string
	}{
		{"tag", plugin.Source{Kind: plugin.SourceURL, URL: url, Ref: "v1"}, repo.first, "echo v1"},
		{"branch", plugin.Source{Kind: plugin.SourceURL, URL: url, Ref: "feature"}, repo.feature, "echo v2"},
		{"full ref", plugin.Source{Kind: plugin.SourceURL, URL: url, Ref: "refs/heads/main"}, repo.second, "echo v2"},
		{"sha of a tip", plugin.Source{Kind: plugin.SourceURL, URL: url, SHA: repo.feature}, repo.feature, "echo v2"},
		{"sha not a tip falls back to full fetch", plugin.Source{Kind: plugin.SourceURL, URL: url, SHA: repo.first}, repo.first, "echo v1"},
		{"sha wins over ref", plugin.Source{Kind: plugin.SourceURL, URL: url, Ref: "main", SHA: repo.first}, repo.first, "echo v1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, dest := sandbox(t)
			res, err := fetchTo(t, f, tc.src, dest)
			if err != nil {
				t.Fatal(err)
			}
			if res.Commit != tc.wantCommit {
				t.Errorf("commit = %s, want %s", res.Commit, tc.wantCommit)
			}
			if got := readFile(t, filepath.Join(dest, "bin/run.sh")); got != "#!/bin/sh\n"+tc.wantRun+"\n" {
				t.Errorf("bin/run.sh = %q", got)
			}
		})
	}
	t.Run("missing ref", func(t *testing.T) {
		_, dest := sandbox(t)
		_, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceURL, URL: url, Ref: "nope"}, dest)
		wantSourceErr(t, err, ErrNotFound)
	})
	t.Run("unknown sha", func(t *testing.T) {
		_, dest := sandbox(t)
		_, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceURL, URL: url, SHA: "0123456789abcdef0123456789abcdef01234567"}, dest)
		wantSourceErr(t, err, ErrNotFound)
	})
	t.Run("short sha", func(t *testing.T) {
		_, dest := sandbox(t)
		_, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceURL, URL: url, SHA: repo.first[:7]}, dest)
		wantSourceErr(t, err, ErrUnsupported)
	})
	t.Run("missing repository", func(t *testing.T) {
		_, dest := sandbox(t)
		_, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceURL, URL: "file://" + filepath.Join(t.TempDir(), "none.git")}, dest)
		if err == nil {
			t.Fatal("fetch of a missing repository succeeded")
		}
	})
}

func TestFetchGitSubdir(t *testing.T) {
	repo := newTestRepo(t, filepath.Join(t.TempDir(), "r.git"))
	f := &Fetcher{AllowFileURLs: true}
	url := "file://" + repo.bare
	for _, p := range []string{"./plugins/deploy", "plugins/deploy", "plugins/deploy/"} {
		t.Run(p, func(t *testing.T) {
			parent, dest := sandbox(t)
			res, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceGitSubdir, URL: url, Path: p, Ref: "v1"}, dest)
			if err != nil {
				t.Fatal(err)
			}
			if res.Commit != repo.first {
				t.Errorf("commit = %s, want %s", res.Commit, repo.first)
			}
			ents, _ := os.ReadDir(dest)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if len(names) != 2 || names[0] != "README.md" || names[1] != "commands" {
				t.Errorf("subdir tree = %v, want [README.md commands]", names)
			}
			if got := readFile(t, filepath.Join(dest, "commands/ship.md")); got != "ship it\n" {
				t.Errorf("commands/ship.md = %q", got)
			}
			assertOnlyDest(t, parent)
		})
	}
	errCases := []struct {
		name string
		path string
		want error
	}{
		{"missing dir", "./plugins/missing", ErrNotFound},
		{"a file, not a dir", "./outside.txt", ErrNotFound},
		{"outside the repo", "../other", ErrUnsafePath},
		{"absolute", "/plugins/deploy", ErrUnsafePath},
		{"empty", "./", ErrUnsupported},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			parent, dest := sandbox(t)
			_, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceGitSubdir, URL: url, Path: tc.path}, dest)
			wantSourceErr(t, err, tc.want)
			assertOnlyDest(t, parent)
		})
	}
}

func TestFetchGitRefusesEscapingSymlink(t *testing.T) {
	work := t.TempDir()
	gitCmd(t, work, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(work, "plugins/p/ok.md"), "ok\n", 0o644)
	if err := os.Symlink("../../../../etc/passwd", filepath.Join(work, "plugins/p/evil")); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, work, "add", "-A")
	gitCmd(t, work, "commit", "-q", "-m", "evil")
	f := &Fetcher{AllowFileURLs: true}
	parent, dest := sandbox(t)
	_, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceGitSubdir, URL: "file://" + work, Path: "plugins/p"}, dest)
	wantSourceErr(t, err, ErrLink)
	assertOnlyDest(t, parent)
}

func TestGitURLPolicy(t *testing.T) {
	cases := []struct {
		name string
		f    *Fetcher
		url  string
	}{
		{"file URL without opt-in", &Fetcher{}, "file:///etc"},
		{"plain http to a remote host", &Fetcher{}, "http://example.com/r.git"},
		{"unknown scheme", &Fetcher{}, "ftp://example.com/r.git"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent, dest := sandbox(t)
			_, err := fetchTo(t, tc.f, plugin.Source{Kind: plugin.SourceURL, URL: tc.url}, dest)
			wantSourceErr(t, err, ErrUnsupported)
			assertOnlyDest(t, parent)
		})
	}
	t.Run("bad github repo", func(t *testing.T) {
		_, dest := sandbox(t)
		_, err := fetchTo(t, &Fetcher{}, plugin.Source{Kind: plugin.SourceGitHub, Repo: "../etc"}, dest)
		wantSourceErr(t, err, ErrUnsupported)
	})
}

func TestFetchGitOldSHAWithoutTags(t *testing.T) {
	work := t.TempDir()
	gitCmd(t, work, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(work, "a.md"), "old\n", 0o644)
	gitCmd(t, work, "add", "-A")
	gitCmd(t, work, "commit", "-q", "-m", "old")
	old := gitCmd(t, work, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(work, "a.md"), "new\n", 0o644)
	gitCmd(t, work, "commit", "-q", "-am", "new")
	_, dest := sandbox(t)
	res, err := fetchTo(t, &Fetcher{AllowFileURLs: true}, plugin.Source{Kind: plugin.SourceURL, URL: "file://" + work, SHA: old}, dest)
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit != old || readFile(t, filepath.Join(dest, "a.md")) != "old\n" {
		t.Fatalf("res = %+v, a.md = %q", res, readFile(t, filepath.Join(dest, "a.md")))
	}
}
