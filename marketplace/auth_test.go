package marketplace

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
)

func writeKey(t *testing.T, home, passphrase string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "test")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "test", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".ssh")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "id_ed25519"), pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestAuthMethodSelection(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	env := map[string]string{"GITHUB_TOKEN": "tok"}
	g := &gitClient{opts: &Options{Getenv: func(k string) string { return env[k] }}}

	a, err := g.auth("https://github.com/corp/p.git")
	if ba, ok := a.(*githttp.BasicAuth); err != nil || !ok || ba.Password != "tok" {
		t.Errorf("https to github: %T %v", a, err)
	}
	if a, err := g.auth("https://git.example.org/corp/p.git"); a != nil || err != nil {
		t.Errorf("https to another host got %T %v", a, err)
	}
	if a, err := g.auth("ssh://git@git.example.org/corp/p.git"); a != nil || err != nil {
		t.Errorf("ssh without agent or keys got %T %v", a, err)
	}

	writeKey(t, home, "")
	for _, u := range []string{"ssh://deploy@git.example.org/corp/p.git", "git@github.com:corp/p.git"} {
		a, err := g.auth(u)
		pk, ok := a.(*gitssh.PublicKeys)
		if err != nil || !ok {
			t.Fatalf("ssh %s with ~/.ssh/id_ed25519: %T %v", u, a, err)
		}
		wantUser := "git"
		if strings.HasPrefix(u, "ssh://deploy@") {
			wantUser = "deploy"
		}
		if pk.User != wantUser {
			t.Errorf("ssh user = %q, want %q", pk.User, wantUser)
		}
	}

	writeKey(t, home, "secret")
	_, err = g.auth("git@github.com:corp/p.git")
	if err == nil || !strings.Contains(err.Error(), "ssh-add") {
		t.Errorf("passphrase-protected key: %v, want a hint to use ssh-agent", err)
	}
}
