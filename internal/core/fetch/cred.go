package fetch

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// Credential is a token for one host: the variable it came from (for
// messages), the basic-auth pair the host expects, and the host
// ("host[:port]", lower case) it may be sent to.
type Credential struct {
	EnvVar   string
	Username string
	Token    string
	Host     string
}

// Credential picks the token for a remote URL. The one rule: a token goes
// only to the host it is configured for, and only over https.
//
//   - GITHUB_TOKEN, else GH_TOKEN: github.com and the configured GitHub host.
//   - GITLAB_TOKEN: gitlab.com and the configured GitLab host.
//
// Any other host, any http:// or ssh URL, gets none. The host compares
// exactly (port included, 443 being https's own), so a look-alike such as
// github.com.evil.example gets nothing.
func (c *Config) Credential(remote string) (Credential, bool) {
	u, err := url.Parse(remote)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return Credential{}, false
	}
	host := normAuthority(u.Host)
	switch host {
	case DefaultGitHubHost, normAuthority(c.githubAuthority()):
		for _, v := range []string{"GITHUB_TOKEN", "GH_TOKEN"} {
			if t := strings.TrimSpace(c.getenv(v)); t != "" {
				return Credential{EnvVar: v, Username: "x-access-token", Token: t, Host: host}, true
			}
		}
	case DefaultGitLabHost, normAuthority(c.gitlabAuthority()):
		if t := strings.TrimSpace(c.getenv("GITLAB_TOKEN")); t != "" {
			return Credential{EnvVar: "GITLAB_TOKEN", Username: "oauth2", Token: t, Host: host}, true
		}
	}
	return Credential{}, false
}

// normAuthority lower-cases host[:port] and drops https's default port.
func normAuthority(a string) string {
	a = strings.ToLower(strings.TrimSuffix(a, ":443"))
	return strings.TrimSuffix(a, ".")
}

// TokenHint is the next step of a git fetch refused for credentials.
const TokenHint = "if the repository is private, set GITHUB_TOKEN (or GH_TOKEN) for the GitHub host, GITLAB_TOKEN for the GitLab host " +
	"(github-host / gitlab-host in the config file name self-hosted ones; tokens go over https only), or use an ssh URL with your SSH key"

// tokenAuth is go-git basic auth that re-checks the rule on every request:
// it sets the header only on an https request to the credential's host, so
// even a request go-git sends after a redirect to another host, or to http,
// goes without it.
type tokenAuth struct{ c Credential }

func (a *tokenAuth) SetAuth(r *http.Request) {
	if r == nil || r.URL == nil || r.URL.Scheme != "https" || normAuthority(r.URL.Host) != a.c.Host {
		return
	}
	r.SetBasicAuth(a.c.Username, a.c.Token)
}

func (a *tokenAuth) Name() string { return "http-basic-auth" }

func (a *tokenAuth) String() string {
	return fmt.Sprintf("%s - %s:*******", a.Name(), a.c.Username)
}

// GitAuth returns the authentication of a git remote: the token of the
// credential rule over https; over ssh, the SSH agent (SSH_AUTH_SOCK), else
// the first of ~/.ssh/id_ed25519, id_ecdsa and id_rsa; else none.
func (c *Config) GitAuth(remote string) (transport.AuthMethod, error) {
	if cr, ok := c.Credential(remote); ok {
		return &tokenAuth{cr}, nil
	}
	ep, err := transport.NewEndpoint(remote)
	if err != nil || ep.Protocol != "ssh" {
		return nil, nil
	}
	user := ep.User
	if user == "" {
		user = "git"
	}
	if c.getenv("SSH_AUTH_SOCK") != "" {
		if a, err := gitssh.NewSSHAgentAuth(user); err == nil {
			return a, nil
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, nil
	}
	for _, k := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
		p := filepath.Join(home, ".ssh", k)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		a, err := gitssh.NewPublicKeysFromFile(user, p, "")
		if err != nil {
			return nil, fmt.Errorf("ssh key %s: %w (a passphrase-protected key needs ssh-agent: run ssh-add)", p, err)
		}
		return a, nil
	}
	return nil, nil
}
