package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/gitserve"
	"github.com/wharfhq/wharf/internal/testutil/silentnet"
)

// fetchCLI runs the wharf binary on a throwaway home with only the WHARF_*
// variables a test sets.
type fetchCLI struct {
	t    *testing.T
	home string
	env  []string
}

func newFetchCLI(t *testing.T, env ...string) *fetchCLI {
	home := t.TempDir()
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WHARF_") && !strings.HasPrefix(kv, "GITHUB_TOKEN=") && !strings.HasPrefix(kv, "GH_TOKEN=") {
			base = append(base, kv)
		}
	}
	base = append(base, "WHARF_HOME="+home, "HOME="+filepath.Join(home, "userhome"),
		"WHARF_MANAGED_DIR="+filepath.Join(home, "no-managed"), "GIT_CONFIG_NOSYSTEM=1")
	return &fetchCLI{t: t, home: home, env: append(base, env...)}
}

func (c *fetchCLI) run(args ...string) (int, string) {
	c.t.Helper()
	cmd := exec.Command(wharfBinary(c.t), args...)
	cmd.Env = c.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return code, out.String()
}

// marketplaceWith writes a directory marketplace "corp" listing one plugin
// "tool" with the given source JSON.
func marketplaceWith(t *testing.T, sourceJSON string) string {
	dir := filepath.Join(t.TempDir(), "corp")
	writeFile(t, filepath.Join(dir, ".claude-plugin", "marketplace.json"),
		`{"name": "corp", "owner": {"name": "x"}, "plugins": [{"name": "tool", "source": `+sourceJSON+`}]}`)
	return dir
}

// bareToolRepo makes root/acme/tool.git holding a plugin "tool".
func bareToolRepo(t *testing.T, root string) {
	t.Helper()
	work := t.TempDir()
	writeFile(t, filepath.Join(work, ".claude-plugin", "plugin.json"), `{"name": "tool", "version": "1.0.0"}`)
	writeFile(t, filepath.Join(work, "commands", "t.md"), "t\n")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	git(work, "init", "-q", "-b", "main")
	git(work, "add", "-A")
	git(work, "commit", "-q", "-m", "tool")
	git(root, "clone", "-q", "--bare", work, filepath.Join(root, "acme", "tool.git"))
}

// The configured GitHub host (the config file's github-host, or
// WHARF_GITHUB_HOST) is where `install` fetches a {"source":"github"}
// plugin from, as `show` already said.
func TestGitHubHostReachesInstall(t *testing.T) {
	root := t.TempDir()
	bareToolRepo(t, root)
	srv := gitserve.Start(t, root, gitserve.Options{HTTP: true})
	host := strings.TrimPrefix(srv.URL, "http://")
	mkt := marketplaceWith(t, `{"source": "github", "repo": "acme/tool"}`)

	for _, how := range []string{"config file", "environment"} {
		t.Run(how, func(t *testing.T) {
			var c *fetchCLI
			if how == "config file" {
				c = newFetchCLI(t)
				writeFile(t, filepath.Join(c.home, "config.json"), `{"github-host": "`+host+`"}`)
			} else {
				c = newFetchCLI(t, "WHARF_GITHUB_HOST="+host)
			}
			before := len(srv.Requests())
			if code, out := c.run("marketplace", "add", mkt); code != 0 {
				t.Fatalf("marketplace add: exit %d\n%s", code, out)
			}
			if code, out := c.run("show", "tool@corp"); code != 0 || !strings.Contains(out, srv.URL+"/acme/tool.git") {
				t.Fatalf("show: exit %d, want the configured host\n%s", code, out)
			}
			code, out := c.run("install", "tool@corp")
			if code != 0 {
				t.Fatalf("install: exit %d\n%s", code, out)
			}
			var paths []string
			for _, r := range srv.Requests()[before:] {
				paths = append(paths, r.Path)
			}
			if !strings.Contains(strings.Join(paths, " "), "/acme/tool.git/") {
				t.Fatalf("the configured GitHub host saw %v; install fetched elsewhere\n%s", paths, out)
			}
		})
	}
}

// git-timeout from the config file bounds a plugin fetch: against a server
// that accepts and never answers, install fails after the configured limit
// and says which setting it was.
func TestGitTimeoutFromConfigReachesPluginFetch(t *testing.T) {
	addr := silentnet.Listen(t)
	mkt := marketplaceWith(t, `{"source": "url", "url": "http://`+addr+`/tool.git"}`)
	c := newFetchCLI(t, "WHARF_ALLOW_PRIVATE_SOURCES=1")
	writeFile(t, filepath.Join(c.home, "config.json"), `{"git-timeout": "1s", "net-idle-timeout": "600s"}`)
	if code, out := c.run("marketplace", "add", mkt); code != 0 {
		t.Fatalf("marketplace add: exit %d\n%s", code, out)
	}
	code, out := c.run("install", "tool@corp")
	if code != 1 {
		t.Fatalf("install against a silent server: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{"after 1s", "git-timeout"} {
		if !strings.Contains(out, want) {
			t.Errorf("install error does not name the configured limit (%q):\n%s", want, out)
		}
	}
}
