package gitserver

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
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
	rec  *packRecorder // when set, records the packs the server sends
}

// packRecorder notes the object count of every pack the server sends.
type packRecorder struct {
	mu     sync.Mutex
	counts []int
}

type teeWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (t *teeWriter) Write(p []byte) (int, error) {
	t.buf.Write(p)
	return t.ResponseWriter.Write(p)
}

func (t *teeWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

func (p *packRecorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &teeWriter{ResponseWriter: w}
		h.ServeHTTP(tw, r)
		b := tw.buf.Bytes()
		if i := bytes.Index(b, []byte("PACK\x00\x00\x00\x02")); i >= 0 && len(b) >= i+12 {
			p.mu.Lock()
			p.counts = append(p.counts, int(binary.BigEndian.Uint32(b[i+8:i+12])))
			p.mu.Unlock()
		}
	})
}

func (p *packRecorder) take() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts
	p.counts = nil
	return c
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
	var h http.Handler = srv
	if s.rec != nil {
		h = s.rec.wrap(srv)
	}
	hs := httptest.NewServer(h)
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

func TestCloneCarriesAnnotatedTags(t *testing.T) {
	needGit(t)
	for _, proto := range protocols {
		t.Run("v"+proto, func(t *testing.T) {
			src := newSrcRepo(t)
			tip := src.commit(map[string]string{"a.txt": "1\n"})
			sig := &object.Signature{Name: "wharf", Email: "wharf@example.invalid", When: time.Unix(1700000000, 0).UTC()}
			if _, err := src.repo.CreateTag("v1", tip, &git.CreateTagOptions{Tagger: sig, Message: "v1"}); err != nil {
				t.Fatal(err)
			}
			url := src.serve(nil)
			for _, depth := range []string{"", "--depth=1"} {
				dst := filepath.Join(t.TempDir(), "clone")
				args := []string{"-c", "protocol.version=" + proto, "clone"}
				if depth != "" {
					args = append(args, depth)
				}
				mustGit(t, "", append(args, url+"/repo.git", dst)...)
				if got := mustGit(t, dst, "rev-parse", "v1^{commit}"); got != tip.String() {
					t.Fatalf("clone %s: tag v1 -> %s, want %s", depth, got, tip)
				}
				if got := mustGit(t, dst, "cat-file", "-t", "v1"); got != "tag" {
					t.Fatalf("clone %s: v1 is a %s, want an annotated tag", depth, got)
				}
			}
		})
	}
}

// manyFiles returns n files spread over a few directories.
func manyFiles(n int, version string) map[string]string {
	files := map[string]string{}
	for i := 0; i < n; i++ {
		files[fmt.Sprintf("plugins/p%02d/f%03d.txt", i%10, i)] = fmt.Sprintf("file %d %s\n", i, version)
	}
	return files
}

func TestFetchSendsOnlyWhatTheClientLacks(t *testing.T) {
	needGit(t)
	for _, proto := range protocols {
		for _, depth := range []string{"", "--depth=1"} {
			t.Run("v"+proto+depth, func(t *testing.T) {
				src := newSrcRepo(t)
				src.rec = &packRecorder{}
				src.commit(manyFiles(200, "v1"))
				url := src.serve(nil)
				dst := filepath.Join(t.TempDir(), "clone")
				pv := "protocol.version=" + proto
				args := []string{"-c", pv, "clone"}
				if depth != "" {
					args = append(args, depth)
				}
				mustGit(t, "", append(args, url+"/repo.git", dst)...)
				first := src.rec.take()
				if len(first) != 1 || first[0] < 200 {
					t.Fatalf("clone packs = %v, want one pack of more than 200 objects", first)
				}
				next := src.commit(map[string]string{"plugins/p03/f003.txt": "changed\n"})
				fetchArgs := []string{"-c", pv, "fetch"}
				if depth != "" {
					fetchArgs = append(fetchArgs, depth)
				}
				mustGit(t, dst, append(fetchArgs, "origin")...)
				got := src.rec.take()
				// commit, root tree, plugins/, plugins/p03/, the blob
				if len(got) != 1 || got[0] > 5 {
					t.Fatalf("fetch of a one-file change sent packs %v, want one pack of at most 5 objects", got)
				}
				if h := mustGit(t, dst, "rev-parse", "origin/main"); h != next.String() {
					t.Fatalf("origin/main = %s, want %s", h, next)
				}
				mustGit(t, dst, "checkout", "-q", "origin/main")
				if b, err := os.ReadFile(filepath.Join(dst, "plugins/p03/f003.txt")); err != nil || string(b) != "changed\n" {
					t.Fatalf("changed file after fetch = %q, %v", b, err)
				}
				mustGit(t, dst, "fsck")
			})
		}
	}
}

// TestFetchNegotiatesOverManyRounds makes the client hold many commits the
// server lacks, so that git sends its haves over several rounds before the
// common one.
func TestFetchNegotiatesOverManyRounds(t *testing.T) {
	needGit(t)
	for _, proto := range protocols {
		t.Run("v"+proto, func(t *testing.T) {
			src := newSrcRepo(t)
			src.rec = &packRecorder{}
			src.commit(manyFiles(50, "v1"))
			url := src.serve(nil)
			dst := filepath.Join(t.TempDir(), "clone")
			pv := "protocol.version=" + proto
			mustGit(t, "", "-c", pv, "clone", url+"/repo.git", dst)
			for i := 0; i < 80; i++ {
				mustGit(t, dst, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("local %d", i))
			}
			src.rec.take()
			next := src.commit(map[string]string{"new.txt": "new\n"})
			mustGit(t, dst, "-c", pv, "fetch", "origin")
			if h := mustGit(t, dst, "rev-parse", "origin/main"); h != next.String() {
				t.Fatalf("origin/main = %s, want %s", h, next)
			}
			if got := src.rec.take(); len(got) != 1 || got[0] > 3 {
				t.Fatalf("fetch sent packs %v, want one pack of at most 3 objects", got)
			}
			mustGit(t, dst, "fsck")
		})
	}
}

func TestUnknownRepositoryIsNotFound(t *testing.T) {
	needGit(t)
	src := newSrcRepo(t)
	src.commit(map[string]string{"a.txt": "1\n"})
	url := src.serve(nil)
	for _, proto := range protocols {
		out, err := gitRun(t, "", "-c", "protocol.version="+proto, "clone", url+"/nope.git", filepath.Join(t.TempDir(), "c"))
		if err == nil {
			t.Fatalf("v%s: clone of an unknown repository succeeded:\n%s", proto, out)
		}
		if !strings.Contains(out, "not found") {
			t.Fatalf("v%s: git's error does not say not found:\n%s", proto, out)
		}
	}
	resp, err := http.Get(url + "/nope.git/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET info/refs of unknown repo: %d, want 404", resp.StatusCode)
	}
}

func TestPushIsRefused(t *testing.T) {
	needGit(t)
	src := newSrcRepo(t)
	src.commit(map[string]string{"a.txt": "1\n"})
	url := src.serve(nil)
	dst := filepath.Join(t.TempDir(), "clone")
	mustGit(t, "", "clone", url+"/repo.git", dst)
	mustGit(t, dst, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "local")
	out, err := gitRun(t, dst, "push", "origin", "HEAD:refs/heads/main")
	if err == nil {
		t.Fatalf("push succeeded:\n%s", out)
	}
	if !strings.Contains(out, "403") {
		t.Fatalf("push error does not show the 403 refusal:\n%s", out)
	}
	for _, req := range []struct{ method, path string }{
		{"GET", "/repo.git/info/refs?service=git-receive-pack"},
		{"POST", "/repo.git/git-receive-pack"},
	} {
		r, _ := http.NewRequest(req.method, url+req.path, strings.NewReader("0000"))
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "read-only") {
			t.Fatalf("%s %s: %d %q, want 403 saying read-only", req.method, req.path, resp.StatusCode, body)
		}
	}
}

func TestCloneEmptyRepository(t *testing.T) {
	needGit(t)
	src := newSrcRepo(t)
	url := src.serve(nil)
	for _, proto := range protocols {
		dst := filepath.Join(t.TempDir(), "clone")
		out := mustGit(t, "", "-c", "protocol.version="+proto, "clone", url+"/repo.git", dst)
		if !strings.Contains(out, "empty repository") {
			t.Fatalf("v%s: clone of an empty repository: %q, want git's empty-repository warning", proto, out)
		}
	}
}

// TestShallowBySinceExcludeAndDeepen covers the other ways git cuts
// history: --shallow-since, --shallow-exclude and fetch --deepen.
func TestShallowBySinceExcludeAndDeepen(t *testing.T) {
	needGit(t)
	for _, proto := range protocols {
		t.Run("v"+proto, func(t *testing.T) {
			src := newSrcRepo(t)
			var commits []plumbing.Hash
			for i := 1; i <= 5; i++ {
				commits = append(commits, src.commit(map[string]string{"a.txt": fmt.Sprintf("%d\n", i)}))
			}
			sig := &object.Signature{Name: "wharf", Email: "wharf@example.invalid", When: time.Unix(1700000000, 0).UTC()}
			if _, err := src.repo.CreateTag("v2", commits[1], &git.CreateTagOptions{Tagger: sig, Message: "v2"}); err != nil {
				t.Fatal(err)
			}
			url := src.serve(nil)
			pv := "protocol.version=" + proto
			count := func(dir string) string { return mustGit(t, dir, "rev-list", "--count", "HEAD") }

			// commit i has time 1700000000+i: since commit 3 keeps 3, 4, 5
			since := filepath.Join(t.TempDir(), "since")
			mustGit(t, "", "-c", pv, "clone", "--shallow-since=@1700000003", url+"/repo.git", since)
			if got := count(since); got != "3" {
				t.Fatalf("--shallow-since: %s commits, want 3", got)
			}
			mustGit(t, since, "fsck")

			excl := filepath.Join(t.TempDir(), "exclude")
			mustGit(t, "", "-c", pv, "clone", "--shallow-exclude=v2", url+"/repo.git", excl)
			if got := count(excl); got != "3" {
				t.Fatalf("--shallow-exclude=v2: %s commits, want 3", got)
			}
			mustGit(t, excl, "fsck")

			deep := filepath.Join(t.TempDir(), "deepen")
			mustGit(t, "", "-c", pv, "clone", "--depth=1", url+"/repo.git", deep)
			mustGit(t, deep, "-c", pv, "fetch", "--deepen=2")
			if got := count(deep); got != "3" {
				t.Fatalf("--depth=1 then --deepen=2: %s commits, want 3", got)
			}
			mustGit(t, deep, "fsck")
			if got := mustGit(t, deep, "rev-parse", "HEAD"); got != commits[4].String() {
				t.Fatalf("HEAD %s, want %s", got, commits[4])
			}
		})
	}
}

// TestProtocolErrorReachesGit: a request the server refuses makes git stop
// with the server's reason, not hang or report a broken pack.
func TestProtocolErrorReachesGit(t *testing.T) {
	needGit(t)
	src := newSrcRepo(t)
	src.commit(map[string]string{"a.txt": "1\n"})
	url := src.serve(nil)
	for _, proto := range protocols {
		out, err := gitRun(t, "", "-c", "protocol.version="+proto, "clone", "--shallow-since=@1900000000", url+"/repo.git", filepath.Join(t.TempDir(), "c"))
		if err == nil {
			t.Fatalf("v%s: clone that excludes every commit succeeded:\n%s", proto, out)
		}
		if !strings.Contains(out, "remote error") || !strings.Contains(out, "excludes wanted commit") {
			t.Fatalf("v%s: git does not show the server's reason:\n%s", proto, out)
		}
	}
}
