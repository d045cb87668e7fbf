package githttp

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// srcRepo is a repository built with go-git that the test server serves.
type srcRepo struct {
	t    *testing.T
	dir  string
	repo *git.Repository
	n    int
}

func newSrcRepo(t *testing.T) *srcRepo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "src")
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	// HEAD -> refs/heads/main
	if err := r.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, "refs/heads/main")); err != nil {
		t.Fatal(err)
	}
	return &srcRepo{t: t, dir: dir, repo: r}
}

// commit writes files (path -> content) and commits them.
func (s *srcRepo) commit(files map[string]string) plumbing.Hash {
	s.t.Helper()
	wt, err := s.repo.Worktree()
	if err != nil {
		s.t.Fatal(err)
	}
	for p, c := range files {
		full := filepath.Join(s.dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			s.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			s.t.Fatal(err)
		}
		if _, err := wt.Add(p); err != nil {
			s.t.Fatal(err)
		}
	}
	s.n++
	sig := &object.Signature{Name: "wharf", Email: "wharf@example.invalid", When: time.Unix(1700000000+int64(s.n), 0).UTC()}
	h, err := wt.Commit(fmt.Sprintf("commit %d", s.n), &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		s.t.Fatal(err)
	}
	return h
}

func (s *srcRepo) tree(h plumbing.Hash) plumbing.Hash {
	c, err := s.repo.CommitObject(h)
	if err != nil {
		s.t.Fatal(err)
	}
	return c.TreeHash
}

// serve starts the server on 127.0.0.1 serving this repository as "repo".
func (s *srcRepo) serve(srv *Server) string {
	s.t.Helper()
	if srv == nil {
		srv = &Server{}
	}
	if srv.Open == nil {
		srv.Open = func(ctx context.Context, name string) (storage.Storer, error) {
			if name != "repo" {
				return nil, fmt.Errorf("repository %q: %w", name, ErrNotFound)
			}
			return filesystem.NewStorage(osfs.New(filepath.Join(s.dir, ".git")), cache.NewObjectLRUDefault()), nil
		}
	}
	hs := httptest.NewServer(srv)
	s.t.Cleanup(hs.Close)
	return hs.URL
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git binary not on PATH: the interoperability tests need it")
	}
}

// gitRun runs git with a clean environment and returns its combined output.
func gitRun(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=true", "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitRun(t, dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

var protocols = []string{"0", "2"}

func TestCloneMatchesSource(t *testing.T) {
	needGit(t)
	for _, proto := range protocols {
		t.Run("v"+proto, func(t *testing.T) {
			src := newSrcRepo(t)
			src.commit(map[string]string{"README.md": "hello\n", "plugins/a/x.txt": "a\n"})
			tip := src.commit(map[string]string{"plugins/b/y.txt": "b\n"})
			url := src.serve(nil)
			dst := filepath.Join(t.TempDir(), "clone")
			mustGit(t, "", "-c", "protocol.version="+proto, "clone", url+"/repo.git", dst)
			if got := mustGit(t, dst, "rev-parse", "HEAD"); got != tip.String() {
				t.Fatalf("clone HEAD = %s, want %s", got, tip)
			}
			if got := mustGit(t, dst, "rev-parse", "HEAD^{tree}"); got != src.tree(tip).String() {
				t.Fatalf("clone tree = %s, want %s", got, src.tree(tip))
			}
			if got := mustGit(t, dst, "rev-list", "--count", "HEAD"); got != "2" {
				t.Fatalf("clone has %s commits, want 2", got)
			}
			mustGit(t, dst, "fsck", "--strict")
			if got := mustGit(t, dst, "symbolic-ref", "HEAD"); got != "refs/heads/main" {
				t.Fatalf("clone HEAD -> %s, want refs/heads/main", got)
			}
		})
	}
}

func TestShallowCloneAndFetch(t *testing.T) {
	needGit(t)
	for _, proto := range protocols {
		t.Run("v"+proto, func(t *testing.T) {
			src := newSrcRepo(t)
			src.commit(map[string]string{"a.txt": "1\n"})
			src.commit(map[string]string{"a.txt": "2\n"})
			tip := src.commit(map[string]string{"b.txt": "3\n"})
			url := src.serve(nil)
			dst := filepath.Join(t.TempDir(), "clone")
			pv := "protocol.version=" + proto
			mustGit(t, "", "-c", pv, "clone", "--depth", "1", url+"/repo.git", dst)
			if got := mustGit(t, dst, "rev-list", "--count", "HEAD"); got != "1" {
				t.Fatalf("shallow clone has %s commits, want 1", got)
			}
			if got := mustGit(t, dst, "rev-parse", "--is-shallow-repository"); got != "true" {
				t.Fatalf("clone is not shallow")
			}
			if got := mustGit(t, dst, "rev-parse", "HEAD^{tree}"); got != src.tree(tip).String() {
				t.Fatalf("clone tree = %s, want %s", got, src.tree(tip))
			}
			mustGit(t, dst, "fsck")

			next := src.commit(map[string]string{"c.txt": "4\n"})
			mustGit(t, dst, "-c", pv, "fetch", "origin")
			if got := mustGit(t, dst, "rev-parse", "origin/main"); got != next.String() {
				t.Fatalf("after fetch origin/main = %s, want %s", got, next)
			}
			if got := mustGit(t, dst, "rev-list", "--count", "origin/main"); got != "2" {
				t.Fatalf("after fetch origin/main has %s commits, want 2", got)
			}
			mustGit(t, dst, "-c", pv, "fetch", "--unshallow", "origin")
			if got := mustGit(t, dst, "rev-list", "--count", "origin/main"); got != "4" {
				t.Fatalf("after unshallow origin/main has %s commits, want 4", got)
			}
			if got := mustGit(t, dst, "rev-parse", "--is-shallow-repository"); got != "false" {
				t.Fatalf("clone still shallow after --unshallow")
			}
			mustGit(t, dst, "fsck", "--strict")
		})
	}
}

var _ = sync.Mutex{}
var _ = http.StatusOK
