package fetch

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzCredential: whatever the remote URL and the configured hosts, a
// token goes only over https, only to github.com, gitlab.com or the
// configured hosts, and nothing panics.
func FuzzCredential(f *testing.F) {
	for _, s := range [][3]string{
		{"https://github.com/a/b.git", "", ""},
		{"https://ghe.corp.example:8443/a/b.git", "https://ghe.corp.example:8443", ""},
		{"http://github.com/a/b.git", "", ""},
		{"https://github.com.evil.example/a/b.git", "", ""},
		{"https://gitlab.corp.example/a/b.git", "", "gitlab.corp.example"},
		{"git@github.com:a/b.git", "", ""},
		{"https://user:pw@github.com:443/a", "github.com", ""},
		{"HTTPS://GITHUB.COM/a", "", ""},
		{"https://[::1]:443/a", "[::1]", ""},
	} {
		f.Add(s[0], s[1], s[2])
	}
	env := envOf("GITHUB_TOKEN", "g", "GITLAB_TOKEN", "l")
	f.Fuzz(func(t *testing.T, remote, gh, gl string) {
		c := &Config{GitHubHost: gh, GitLabHost: gl, Getenv: env}
		_ = c.Check()
		_ = c.GitHubURL("o/r")
		cr, ok := c.Credential(remote)
		if !ok {
			return
		}
		u, err := url.Parse(remote)
		if err != nil || u.Scheme != "https" {
			t.Fatalf("token for a non-https remote %q", remote)
		}
		allowed := map[string]bool{"github.com": true, "gitlab.com": true,
			normAuthority(c.githubAuthority()): true, normAuthority(c.gitlabAuthority()): true}
		if !allowed[cr.Host] || cr.Host != normAuthority(u.Host) {
			t.Fatalf("token for %q went to host %q (allowed %v)", remote, cr.Host, allowed)
		}
		if strings.Contains(cr.Host, "/") {
			t.Fatalf("host %q", cr.Host)
		}
	})
}
