package marketplace

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/wharfhq/wharf/internal/testutil/silentnet"
	"github.com/wharfhq/wharf/plugin"
)

// sshUser gives the test a home with a throwaway ssh key and an empty
// known_hosts, so a clone over ssh gets as far as dialing.
func sshUser(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	kh := filepath.Join(home, "known_hosts")
	if err := os.WriteFile(kh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("SSH_KNOWN_HOSTS", kh)
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv("ALL_PROXY", "")
	t.Setenv("all_proxy", "")
}

// addWithin runs m.Add and fails the test if it has not returned within
// limit: a step that ignores its limits would hang there.
func addWithin(t *testing.T, m *Manager, src plugin.MarketplaceSource, limit time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := m.Add(context.Background(), src, "")
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("marketplace add of %s still waiting for a silent ssh server after %s", src, limit)
		return nil
	}
}

func TestSilentSSHServerFailsAfterTheIdleLimit(t *testing.T) {
	sshUser(t)
	addr := silentnet.Listen(t)
	src := gitSource(t, "ssh://git@"+addr+"/corp.git")

	m, _ := newTestManager(t, Options{GitTimeout: 600 * time.Second, NetIdleTimeout: 300 * time.Millisecond})
	err := addWithin(t, m, src, 2*time.Minute)
	if err == nil {
		t.Fatal("marketplace add from a silent ssh server succeeded")
	}
	for _, want := range []string{"no data from " + addr, "net-idle-timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	var pe *plugin.Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Hint, "WHARF_NET_IDLE_TIMEOUT") || !strings.Contains(pe.Hint, addr) {
		t.Errorf("hint does not name the host and the setting: %#v", pe)
	}

	// Without an idle limit, the overall limit ends the ssh handshake too.
	m, _ = newTestManager(t, Options{GitTimeout: 300 * time.Millisecond, NetIdleTimeout: -1})
	err = addWithin(t, m, src, 2*time.Minute)
	if !errors.Is(err, ErrTimeout) || strings.Contains(err.Error(), "net-idle-timeout") {
		t.Fatalf("want the overall timeout, got %v", err)
	}
}

// On a terminal, a clone draws a bar naming the remote instead of git's
// raw progress text.
func TestCloneDrawsABarInsteadOfGitText(t *testing.T) {
	backend, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skip("git not installed")
	}
	repo := newGitRepo(t, marketFiles("corp", "deploy"))
	root := t.TempDir()
	if out, err := exec.Command("git", "clone", "-q", "--bare", repo.dir, filepath.Join(root, "corp.git")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	srv := httptest.NewServer(gitHTTPBackend(t, filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend"), root, func(*http.Request) bool { return true }))
	defer srv.Close()

	var term, raw bytes.Buffer
	m, _ := newTestManager(t, Options{ProgressBar: &term, Progress: &raw})
	if _, err := m.Add(context.Background(), gitSource(t, srv.URL+"/corp.git"), ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(term.String(), "fetching "+srv.URL+"/corp.git") {
		t.Errorf("no clone bar drawn: %q", term.String())
	}
	if strings.Contains(term.String(), "objects:") || raw.Len() != 0 {
		t.Errorf("git's raw progress shown with a bar: %q / %q", term.String(), raw.String())
	}

	// Without a terminal, git's text goes where Progress says.
	raw.Reset()
	m, _ = newTestManager(t, Options{Progress: &raw})
	if _, err := m.Add(context.Background(), gitSource(t, srv.URL+"/corp.git"), ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(raw.String(), "objects") {
		t.Errorf("git progress = %q", raw.String())
	}
}
