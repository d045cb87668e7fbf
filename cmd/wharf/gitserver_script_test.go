package main

import (
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdGitServer serves the bare repositories under a directory over git's
// smart HTTP protocol (git http-backend) on 127.0.0.1, and answers every
// request under /r/ with a 302 to the same path under /git/: a repository
// URL that redirects to another. Sets $GIT_URL.
func cmdGitServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gitserver <dir>")
	}
	out, err := exec.Command("git", "--exec-path").Output()
	ts.Check(err)
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + ts.MkAbs(args[0]), "GIT_HTTP_EXPORT_ALL=1"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/r/"); ok {
			u := *r.URL
			u.Path = "/git/" + rest
			http.Redirect(w, r, u.RequestURI(), http.StatusFound)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	ts.Defer(srv.Close)
	ts.Setenv("GIT_URL", srv.URL)
}

// cmdBareClone makes <dst> a bare clone of the repository <src>.
func cmdBareClone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: bareclone <src> <dst>")
	}
	dst := ts.MkAbs(args[1])
	ts.Check(os.MkdirAll(filepath.Dir(dst), 0o755))
	gitIn(ts, ts.MkAbs("."), "clone", "-q", "--bare", ts.MkAbs(args[0]), dst)
}

// cmdExpandEnv replaces $VAR and ${VAR} in a file with the script's
// environment.
func cmdExpandEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: expandenv <file>")
	}
	p := ts.MkAbs(args[0])
	b, err := os.ReadFile(p)
	ts.Check(err)
	ts.Check(os.WriteFile(p, []byte(os.Expand(string(b), ts.Getenv)), 0o644))
}
