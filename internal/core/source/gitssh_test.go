package source

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/agent"

	netfetch "github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/testutil/silentnet"
	"github.com/wharfhq/wharf/plugin"
)

// sshAgent runs an ssh agent holding a throwaway key and points
// SSH_AUTH_SOCK at it, with an empty known_hosts, so a fetch over ssh gets
// as far as dialing.
func sshAgent(t *testing.T) {
	t.Helper()
	dir, err := os.MkdirTemp("", "wharf-agent-") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	kr := agent.NewKeyring()
	if err := kr.Add(agent.AddedKey{PrivateKey: priv}); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { agent.ServeAgent(kr, c); c.Close() }()
		}
	}()
	kh := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(kh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSH_AUTH_SOCK", sock)
	t.Setenv("SSH_KNOWN_HOSTS", kh)
	t.Setenv("ALL_PROXY", "")
	t.Setenv("all_proxy", "")
}

// fetchWithin runs a fetch and fails the test if it has not returned
// within limit: a step that ignores its limits would hang there.
func fetchWithin(t *testing.T, f *Fetcher, src plugin.Source, limit time.Duration) error {
	t.Helper()
	_, dest := sandbox(t)
	done := make(chan error, 1)
	go func() {
		_, err := f.Fetch(context.Background(), Request{Plugin: "p@m", Source: src, Dest: dest})
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("fetch of %s still waiting for a silent ssh server after %s", src.URL, limit)
		return nil
	}
}

func TestSilentSSHGitSourceFailsAfterTheIdleLimit(t *testing.T) {
	sshAgent(t)
	addr := silentnet.Listen(t)
	src := plugin.Source{Kind: plugin.SourceURL, URL: "ssh://git@" + addr + "/gitplug.git"}

	f := &Fetcher{Net: netfetch.Config{AllowPrivate: true, Timeout: 600 * time.Second, IdleTimeout: 300 * time.Millisecond}}
	err := fetchWithin(t, f, src, 2*time.Minute)
	if err == nil {
		t.Fatal("fetch from a silent ssh server succeeded")
	}
	for _, want := range []string{"no data from " + addr, "net-idle-timeout", "WHARF_NET_IDLE_TIMEOUT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	// Without an idle limit, the overall limit ends the ssh handshake too.
	f = &Fetcher{Net: netfetch.Config{AllowPrivate: true, Timeout: 300 * time.Millisecond, IdleTimeout: -1}}
	err = fetchWithin(t, f, src, 2*time.Minute)
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms") {
		t.Fatalf("want the overall timeout, got %v", err)
	}
}

// On a terminal, a git source draws a bar naming the remote instead of
// git's raw progress text.
func TestGitFetchDrawsABarInsteadOfGitText(t *testing.T) {
	root := t.TempDir()
	newTestRepo(t, filepath.Join(root, "acme", "tool.git"))
	srv, _ := gitHTTPServer(t, root, "s3cret")
	env := map[string]string{"GH_TOKEN": "s3cret"}
	var term, lines bytes.Buffer
	f := &Fetcher{Net: netfetch.Config{GitHubHost: srv.URL, CABundle: srv.CA, Getenv: func(k string) string { return env[k] }}, ProgressBar: &term, Progress: &lines}
	_, dest := sandbox(t)
	if _, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceGitHub, Repo: "acme/tool", Ref: "v1"}, dest); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(term.String(), "fetching "+srv.URL+"/acme/tool.git") {
		t.Errorf("no fetch bar drawn: %q", term.String())
	}
	if strings.Contains(term.String(), "objects:") || strings.Contains(lines.String(), "objects") {
		t.Errorf("git's raw progress shown with a bar: %q / %q", term.String(), lines.String())
	}

	// Without a terminal, git's text goes to the progress lines.
	lines.Reset()
	f.ProgressBar = nil
	_, dest = sandbox(t)
	if _, err := fetchTo(t, f, plugin.Source{Kind: plugin.SourceGitHub, Repo: "acme/tool", Ref: "v1"}, dest); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lines.String(), "objects") {
		t.Errorf("git progress = %q", lines.String())
	}
}
