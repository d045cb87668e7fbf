package fetch

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// The one credential rule: a token goes only to the host it is configured
// for, only over https.
func TestCredentialRule(t *testing.T) {
	all := []string{"GITHUB_TOKEN", "g1", "GH_TOKEN", "g2", "GITLAB_TOKEN", "l"}
	tests := []struct {
		name, url  string
		cfg        Config
		env        []string
		wantVar    string
		wantSentTo string
	}{
		{"github.com gets GITHUB_TOKEN", "https://github.com/a/b.git", Config{}, all, "GITHUB_TOKEN", "github.com"},
		{"github.com falls back to GH_TOKEN", "https://github.com/a/b.git", Config{}, []string{"GH_TOKEN", "g2"}, "GH_TOKEN", "github.com"},
		{"github.com without a GitHub token", "https://github.com/a/b.git", Config{}, []string{"GITLAB_TOKEN", "l"}, "", ""},
		{"github.com, explicit 443", "https://github.com:443/a/b.git", Config{}, all, "GITHUB_TOKEN", "github.com"},
		{"github.com, upper case", "https://GitHub.com/a/b.git", Config{}, all, "GITHUB_TOKEN", "github.com"},
		{"gitlab.com gets GITLAB_TOKEN", "https://gitlab.com/a/b.git", Config{}, all, "GITLAB_TOKEN", "gitlab.com"},
		{"configured GitHub host", "https://ghe.corp.example/a/b.git", Config{GitHubHost: "ghe.corp.example"}, all, "GITHUB_TOKEN", "ghe.corp.example"},
		{"configured GitHub host as a URL with a port", "https://ghe.corp.example:8443/a/b.git", Config{GitHubHost: "https://ghe.corp.example:8443/"}, all, "GITHUB_TOKEN", "ghe.corp.example:8443"},
		{"configured GitHub host, other port", "https://ghe.corp.example:9999/a/b.git", Config{GitHubHost: "ghe.corp.example:8443"}, all, "", ""},
		{"configured GitLab host", "https://code.corp.example/a/b.git", Config{GitLabHost: "code.corp.example"}, all, "GITLAB_TOKEN", "code.corp.example"},
		{"a host named gitlab but not configured", "https://gitlab.corp.example/a/b.git", Config{}, all, "", ""},
		{"a host containing gitlab", "https://mygitlab.evil.example/a/b.git", Config{}, all, "", ""},
		{"GitHub token not to the GitLab host", "https://code.corp.example/a/b.git", Config{GitLabHost: "code.corp.example"}, []string{"GITHUB_TOKEN", "g1"}, "", ""},
		{"other host", "https://git.example.org/a/b.git", Config{}, all, "", ""},
		{"look-alike host", "https://github.com.evil.example/a/b.git", Config{}, all, "", ""},
		{"look-alike suffix", "https://evilgithub.com/a/b.git", Config{}, all, "", ""},
		{"plain http to github.com", "http://github.com/a/b.git", Config{}, all, "", ""},
		{"plain http to the configured host", "http://ghe.corp.example/a/b.git", Config{GitHubHost: "ghe.corp.example"}, all, "", ""},
		{"plain http to a loopback stand-in", "http://127.0.0.1:8080/a/b.git", Config{GitHubHost: "127.0.0.1:8080"}, all, "", ""},
		{"ssh", "ssh://git@github.com/a/b.git", Config{}, all, "", ""},
		{"scp-like", "git@github.com:a/b.git", Config{}, all, "", ""},
		{"file", "file:///srv/git/a.git", Config{}, all, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			c.Getenv = envOf(tt.env...)
			cr, ok := c.Credential(tt.url)
			if ok != (tt.wantVar != "") || cr.EnvVar != tt.wantVar || cr.Host != tt.wantSentTo {
				t.Fatalf("Credential(%s) = %+v, %v; want %q for %q", tt.url, cr, ok, tt.wantVar, tt.wantSentTo)
			}
			if ok && (cr.Token == "" || cr.Username == "") {
				t.Errorf("credential without user or token: %+v", cr)
			}
			// The go-git auth sets the header on that https host only.
			a, err := c.GitAuth(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				if ta, isTok := a.(*tokenAuth); isTok {
					t.Fatalf("GitAuth(%s) = token auth %v", tt.url, ta)
				}
				return
			}
			ta := a.(*tokenAuth)
			for _, to := range []string{tt.url, strings.Replace(tt.url, "https://", "http://", 1), "https://elsewhere.example/a/b.git"} {
				u, _ := url.Parse(to)
				r := &http.Request{URL: u, Header: http.Header{}}
				ta.SetAuth(r)
				sent := r.Header.Get("Authorization") != ""
				if want := to == tt.url; sent != want {
					t.Errorf("SetAuth on %s: sent=%v, want %v", to, sent, want)
				}
			}
		})
	}
}

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

func TestGitAuthSSHKeys(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	c := &Config{Getenv: envOf("GITHUB_TOKEN", "tok")}
	if a, err := c.GitAuth("ssh://git@git.example.org/corp/p.git"); a != nil || err != nil {
		t.Errorf("ssh without agent or keys got %T %v", a, err)
	}
	writeKey(t, home, "")
	for _, u := range []string{"ssh://deploy@git.example.org/corp/p.git", "git@github.com:corp/p.git"} {
		a, err := c.GitAuth(u)
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
	if _, err := c.GitAuth("git@github.com:corp/p.git"); err == nil || !strings.Contains(err.Error(), "ssh-add") {
		t.Errorf("passphrase-protected key: %v, want a hint to use ssh-agent", err)
	}
}
