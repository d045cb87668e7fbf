package source

import (
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	netfetch "github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/testutil/gitserve"
	"github.com/wharfhq/wharf/plugin"
)

// gitHTTPServer serves root over git's smart HTTP protocol (git http-backend
// as CGI) on https://127.0.0.1, requiring basic auth with password token.
// It returns the server and the count of refused requests.
func gitHTTPServer(t *testing.T, root, token string) (*gitserve.Server, *atomic.Int32) {
	t.Helper()
	var denied atomic.Int32
	srv := gitserve.Start(t, root, gitserve.Options{Allow: func(r *http.Request) bool {
		if _, pw, ok := r.BasicAuth(); !ok || pw != token {
			denied.Add(1)
			return false
		}
		return true
	}})
	return srv, &denied
}

func TestFetchGitHubOverHTTPSWithToken(t *testing.T) {
	root := t.TempDir()
	repo := newTestRepo(t, filepath.Join(root, "acme", "private.git"))
	srv, denied := gitHTTPServer(t, root, "s3cret")
	env := map[string]string{"GH_TOKEN": "s3cret"}
	f := &Fetcher{Net: netfetch.Config{GitHubHost: srv.URL, CABundle: srv.CA, Getenv: func(k string) string { return env[k] }}}

	parent, dest := sandbox(t)
	res, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceGitHub, Repo: "acme/private", Ref: "v1"}, dest)
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
		f := &Fetcher{Net: netfetch.Config{GitHubHost: srv.URL, CABundle: srv.CA, Getenv: func(string) string { return "" }}}
		_, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceGitHub, Repo: "acme/private"}, dest)
		if err == nil || !strings.Contains(plugin.HintOf(err), "GITHUB_TOKEN") {
			t.Fatalf("err = %v (hint %q), want an auth error hinting at GITHUB_TOKEN", err, plugin.HintOf(err))
		}
	})
	t.Run("token not sent to another host", func(t *testing.T) {
		before := denied.Load()
		_, dest := sandbox(t)
		other := gitserve.Localhost(srv.URL) + "/acme/private.git"
		_, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceURL, URL: other}, dest)
		if err == nil || denied.Load() == before {
			t.Fatalf("fetch from a non-GitHub host got through (err %v): the GitHub token was sent to it", err)
		}
		var pe *plugin.Error
		if !errors.As(err, &pe) {
			t.Fatalf("err %T", err)
		}
	})
}
