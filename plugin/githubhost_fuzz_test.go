package plugin

import (
	"strings"
	"testing"
)

// FuzzGitHubHostPort reads GitHub host settings (managed githubHost,
// github-host, WHARF_GITHUB_HOST): never a panic; a setting that reads
// gives a valid lower-case host without scheme or path, and the github
// shorthand on it canonicalizes to that host.
func FuzzGitHubHostPort(f *testing.F) {
	for _, s := range []string{"", "github.com", "GHE.corp.example", "ghe.corp.example:8443", "https://ghe.corp.example/",
		"http://127.0.0.1:8080", "https://www.github.com", "ftp://x", "https://u:p@h", "https://h/path", "[::1]:9", "https://[fe80::1%25lo]:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		host, port, ok := GitHubHostPort(s)
		if !ok {
			return
		}
		if !validHost(host) || host != strings.ToLower(host) || strings.ContainsAny(host, "/@") {
			t.Fatalf("%q: host %q", s, host)
		}
		if port == "443" && !strings.HasPrefix(strings.ToLower(strings.TrimSpace(s)), "http://") {
			t.Fatalf("%q: default https port kept", s)
		}
		c, err := MarketplaceSource{Kind: MktGitHub, Repo: "o/r"}.Canonical(CanonOptions{GitHubHost: s})
		if err != nil {
			t.Fatalf("%q: github o/r: %v", s, err)
		}
		if c.Host != host || c.Port != port || !c.GitHub {
			t.Fatalf("%q: github o/r on %s:%s, want %s:%s", s, c.Host, c.Port, host, port)
		}
	})
}
