package source

import (
	"errors"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// gitHTTPServer serves root over git's smart HTTP protocol (git http-backend
// as CGI) on 127.0.0.1, requiring basic auth with password token.
func gitHTTPServer(t *testing.T, root, token string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	backend, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	out, err := exec.Command(backend, "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	h := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	var denied atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pw, ok := r.BasicAuth(); !ok || pw != token {
			denied.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "auth required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &denied
}

func TestFetchGitHubOverHTTPWithToken(t *testing.T) {
	root := t.TempDir()
	repo := newTestRepo(t, filepath.Join(root, "acme", "private.git"))
	srv, denied := gitHTTPServer(t, root, "s3cret")
	env := map[string]string{"GH_TOKEN": "s3cret"}
	f := &Fetcher{GitHubBaseURL: srv.URL, Getenv: func(k string) string { return env[k] }}

	parent, dest := sandbox(t)
	res, err := fetch(t, f, plugin.Source{Kind: plugin.SourceGitHub, Repo: "acme/private", Ref: "v1"}, dest)
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit != repo.first || readFile(t, filepath.Join(dest, "bin/run.sh")) != "#!/bin/sh\necho v1\n" {
		t.Fatalf("res = %+v", res)
	}
	if strings.Contains(res.URL, "s3cret") {
		t.Errorf("result URL leaks the token: %s", res.URL)
	}
	assertOnlyDest(t, parent)

	t.Run("no token", func(t *testing.T) {
		_, dest := sandbox(t)
		f := &Fetcher{GitHubBaseURL: srv.URL, Getenv: func(string) string { return "" }}
		_, err := fetch(t, f, plugin.Source{Kind: plugin.SourceGitHub, Repo: "acme/private"}, dest)
		if err == nil || !strings.Contains(plugin.HintOf(err), "GITHUB_TOKEN") {
			t.Fatalf("err = %v (hint %q), want an auth error hinting at GITHUB_TOKEN", err, plugin.HintOf(err))
		}
	})
	t.Run("token not sent to another host", func(t *testing.T) {
		before := denied.Load()
		_, dest := sandbox(t)
		other := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/acme/private.git"
		_, err := fetch(t, f, plugin.Source{Kind: plugin.SourceURL, URL: other}, dest)
		if err == nil || denied.Load() == before {
			t.Fatalf("fetch from a non-GitHub host got through (err %v): the GitHub token was sent to it", err)
		}
		var pe *plugin.Error
		if !errors.As(err, &pe) {
			t.Fatalf("err %T", err)
		}
	})
}
