package fetch

import (
	"context"
	"encoding/base64"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/wharfhq/wharf/internal/testutil/gitserve"
)

// bareRepo makes root/corp/tools.git with one commit.
func bareRepo(t *testing.T, root string) {
	t.Helper()
	work := t.TempDir()
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	run(work, "init", "-q", "-b", "main")
	run(work, "commit", "-q", "--allow-empty", "-m", "one")
	run(root, "clone", "-q", "--bare", work, filepath.Join(root, "corp", "tools.git"))
}

// list runs go-git's ls-remote on remote with the options c gives it.
func list(t *testing.T, c *Config, remote string) error {
	t.Helper()
	ctx, stop := c.Step(context.Background())
	defer stop()
	o, err := c.Git(ctx, remote)
	if err != nil {
		t.Fatal(err)
	}
	r := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{remote}})
	_, err = r.ListContext(ctx, &git.ListOptions{Auth: o.Auth, ProxyOptions: o.Proxy, CABundle: o.CABundle})
	return err
}

// A real git server on 127.0.0.1 records the Authorization headers it
// receives: the GitHub token reaches the configured GitHub host over https,
// and nothing else (the same server under another name, plain http, the
// target of a redirect to another host).
func TestTokenReachesOnlyItsHostOverHTTPS(t *testing.T) {
	root := t.TempDir()
	bareRepo(t, root)
	const token = "tok-123"
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
	env := envOf("GITHUB_TOKEN", token, "GITLAB_TOKEN", "lab-456")

	t.Run("configured GitHub host over https", func(t *testing.T) {
		srv := gitserve.Start(t, root, gitserve.Options{})
		c := &Config{GitHubHost: srv.URL, CABundle: srv.CA, Getenv: env}
		if err := list(t, c, c.GitHubURL("corp/tools")); err != nil {
			t.Fatal(err)
		}
		got := srv.Authorizations()
		if len(got) == 0 || got[0] != want {
			t.Fatalf("server saw Authorization %q, want %q", got, want)
		}
	})
	t.Run("the same server under another host name", func(t *testing.T) {
		srv := gitserve.Start(t, root, gitserve.Options{})
		c := &Config{GitHubHost: srv.URL, CABundle: srv.CA, Getenv: env}
		if err := list(t, c, gitserve.Localhost(srv.URL)+"/corp/tools.git"); err != nil {
			t.Fatal(err)
		}
		if got := srv.Authorizations(); len(got) != 0 || len(srv.Requests()) == 0 {
			t.Fatalf("another host got Authorization %q (requests %d)", got, len(srv.Requests()))
		}
	})
	t.Run("plain http to the configured host", func(t *testing.T) {
		srv := gitserve.Start(t, root, gitserve.Options{HTTP: true})
		c := &Config{GitHubHost: srv.URL, Getenv: env}
		if err := list(t, c, c.GitHubURL("corp/tools")); err != nil {
			t.Fatal(err)
		}
		if got := srv.Authorizations(); len(got) != 0 || len(srv.Requests()) == 0 {
			t.Fatalf("plain http got Authorization %q", got)
		}
	})
	t.Run("redirect to another host", func(t *testing.T) {
		target := gitserve.Start(t, root, gitserve.Options{})
		front := gitserve.Start(t, root, gitserve.Options{Redirect: gitserve.Localhost(target.URL)})
		c := &Config{GitHubHost: front.URL, CABundle: append(append([]byte{}, front.CA...), target.CA...), Getenv: env}
		err := list(t, c, c.GitHubURL("corp/tools"))
		if got := front.Authorizations(); len(got) == 0 || got[0] != want {
			t.Fatalf("the configured host saw Authorization %q, want %q", got, want)
		}
		if got := target.Authorizations(); len(got) != 0 {
			t.Fatalf("the redirect target got Authorization %q (err %v)", got, err)
		}
		if len(target.Requests()) == 0 && err == nil {
			t.Fatalf("the redirect was neither followed nor refused")
		}
	})
	t.Run("GitLab token to the configured GitLab host only", func(t *testing.T) {
		srv := gitserve.Start(t, root, gitserve.Options{})
		c := &Config{GitLabHost: srv.URL, CABundle: srv.CA, Getenv: env}
		if err := list(t, c, srv.URL+"/corp/tools.git"); err != nil {
			t.Fatal(err)
		}
		got := srv.Authorizations()
		wantLab := "Basic " + base64.StdEncoding.EncodeToString([]byte("oauth2:lab-456"))
		if len(got) == 0 || got[0] != wantLab || strings.Contains(strings.Join(got, ","), want) {
			t.Fatalf("GitLab host saw Authorization %q, want %q", got, wantLab)
		}
	})
}
