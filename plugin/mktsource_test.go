package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

type mktSrc struct{ kind, repo, url, ref, path string }

func (s mktSrc) source() MarketplaceSource {
	return MarketplaceSource{Kind: MarketplaceKind(s.kind), Repo: s.repo, URL: s.url, Ref: s.ref, Path: s.path}
}

func canon(t *testing.T, s mktSrc, o CanonOptions) CanonicalSource {
	t.Helper()
	c, err := s.source().Canonical(o)
	if err != nil {
		t.Fatalf("%+v: %v", s, err)
	}
	return c
}

// Every spelling of github.com/acme/tools has the canonical form of
// {"source":"github","repo":"acme/tools"}.
func TestCanonicalGitAliases(t *testing.T) {
	want := canon(t, mktSrc{kind: "github", repo: "acme/tools"}, CanonOptions{})
	for _, u := range []string{
		"https://github.com/acme/tools",
		"https://github.com/acme/tools.git",
		"https://GitHub.COM/acme/tools",
		"https://github.com/ACME/Tools",
		"https://github.com:443/acme/tools",
		"https://user:tok@github.com/acme/tools",
		"https://github.com/acme/tools/",
		"https://github.com//acme//tools",
		"https://github.com/acme/tools.git/",
		"https://github.com./acme/tools",
		"http://github.com:80/acme/tools",
		"ssh://git@github.com/acme/tools.git",
		"ssh://git@github.com:22/acme/tools",
		"git://github.com/acme/tools",
		"git@github.com:acme/tools.git",
		"git@github.com:/acme/tools",
		"github.com:acme/tools",
		"git@GITHUB.com:Acme/Tools.GIT",
		// github.com's other names: the www host, and ssh.github.com
		// (ssh on port 443).
		"https://www.github.com/acme/tools",
		"https://WWW.GitHub.com/acme/tools.git",
		"ssh://git@ssh.github.com:443/acme/tools.git",
		"ssh://git@ssh.github.com/acme/tools.git",
		"git@ssh.github.com:acme/tools.git",
	} {
		got := canon(t, mktSrc{kind: "git", url: u}, CanonOptions{})
		if got.Key() != want.Key() {
			t.Errorf("%s: key %s, want %s", u, got.Key(), want.Key())
		}
	}
	for _, r := range []string{"ACME/tools", "acme/tools.git", "acme/tools/"} {
		if got := canon(t, mktSrc{kind: "github", repo: r}, CanonOptions{}); got.Key() != want.Key() {
			t.Errorf("github %s: key %s, want %s", r, got.Key(), want.Key())
		}
	}
}

// Sources that are not the same stay apart.
func TestCanonicalGitDistinct(t *testing.T) {
	base := canon(t, mktSrc{kind: "github", repo: "acme/tools"}, CanonOptions{})
	for _, s := range []mktSrc{
		{kind: "github", repo: "acme/tools2"},
		{kind: "github", repo: "acme/tools", ref: "v1"},
		{kind: "github", repo: "acme/tools", path: "sub"},
		{kind: "git", url: "https://gitlab.com/acme/tools"},
		{kind: "git", url: "https://github.com:8443/acme/tools"},
		{kind: "git", url: "https://github.com/acme-tools"},
		{kind: "git", url: "https://github.com/acme/tools/extra"},
	} {
		if got := canon(t, s, CanonOptions{}); got.Key() == base.Key() {
			t.Errorf("%+v has the key of github acme/tools: %s", s, got.Key())
		}
	}
	// Off GitHub, paths keep their case for Key, but not for RepoKey.
	a := canon(t, mktSrc{kind: "git", url: "https://git.corp/Team/Repo"}, CanonOptions{})
	b := canon(t, mktSrc{kind: "git", url: "https://git.corp/team/repo"}, CanonOptions{})
	if a.Key() == b.Key() {
		t.Errorf("a non-GitHub path compared case-insensitively for Key")
	}
	if a.RepoKey() != b.RepoKey() {
		t.Errorf("RepoKey %s != %s", a.RepoKey(), b.RepoKey())
	}
}

// A GitHub host setting may be a host, a host:port or a base URL; each
// names the same repository as the URL on that host.
func TestCanonicalGitHubHostForms(t *testing.T) {
	for _, h := range []string{"127.0.0.1:8080", "http://127.0.0.1:8080", "http://127.0.0.1:8080/"} {
		o := CanonOptions{GitHubHost: h}
		gh := canon(t, mktSrc{kind: "github", repo: "corp/plugins"}, o)
		u := canon(t, mktSrc{kind: "git", url: "http://127.0.0.1:8080/corp/plugins.git"}, o)
		if gh.Key() != u.Key() || gh.Host != "127.0.0.1" || gh.Port != "8080" {
			t.Errorf("github-host %q: shorthand %+v, URL %+v", h, gh, u)
		}
	}
	if _, _, ok := GitHubHostPort("ftp://x"); ok {
		t.Error("an ftp URL read as a GitHub host")
	}
	if h, p, ok := GitHubHostPort("https://www.github.com"); !ok || h != DefaultGitHubHost || p != "" {
		t.Errorf("www.github.com: %q %q %v", h, p, ok)
	}
}

func TestCanonicalGitHubEnterprise(t *testing.T) {
	o := CanonOptions{GitHubHost: "GHE.corp.example"}
	gh := canon(t, mktSrc{kind: "github", repo: "Acme/Tools"}, o)
	url := canon(t, mktSrc{kind: "git", url: "git@ghe.corp.example:acme/tools.git"}, o)
	if gh.Key() != url.Key() || gh.Host != "ghe.corp.example" || !url.GitHub || url.Owner() != "acme" {
		t.Fatalf("github shorthand %+v and GHE URL %+v differ", gh, url)
	}
	pub := canon(t, mktSrc{kind: "git", url: "https://github.com/acme/tools"}, o)
	if pub.Key() == gh.Key() {
		t.Fatalf("with a GHE host, github.com/acme/tools is not the shorthand's repository")
	}
}

func TestCanonicalSubAndManifest(t *testing.T) {
	dir := canon(t, mktSrc{kind: "github", repo: "acme/tools", path: "mkt"}, CanonOptions{})
	for _, p := range []string{"mkt/", "./mkt", "mkt/.claude-plugin/marketplace.json", "mkt/marketplace.json", "/mkt//"} {
		if got := canon(t, mktSrc{kind: "github", repo: "acme/tools", path: p}, CanonOptions{}); got.Key() != dir.Key() {
			t.Errorf("path %q: %s, want %s", p, got.Key(), dir.Key())
		}
	}
	root := canon(t, mktSrc{kind: "github", repo: "acme/tools"}, CanonOptions{})
	if got := canon(t, mktSrc{kind: "github", repo: "acme/tools", path: ".claude-plugin/marketplace.json"}, CanonOptions{}); got.Key() != root.Key() {
		t.Errorf("the root manifest path is the root: %s", got.Key())
	}
	if !root.Covers(dir) || dir.Covers(root) {
		t.Errorf("a block of the whole repository covers its subdirectories, not the reverse")
	}
}

func TestCanonicalLocal(t *testing.T) {
	tmp := t.TempDir()
	real := filepath.Join(tmp, "real")
	if err := os.MkdirAll(filepath.Join(real, ".claude-plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, ".claude-plugin", "marketplace.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	o := CanonOptions{Resolve: ResolvePath}
	want := canon(t, mktSrc{kind: "directory", path: real}, o)
	for _, s := range []mktSrc{
		{kind: "directory", path: link},
		{kind: "directory", path: link + "/"},
		{kind: "directory", path: filepath.Join(link, "..", "real")},
		{kind: "file", path: filepath.Join(link, ".claude-plugin", "marketplace.json")},
		{kind: "file", path: filepath.Join(real, "marketplace.json")},
		{kind: "git", url: "file://" + filepath.ToSlash(link)},
	} {
		got := canon(t, s, o)
		if got.Kind != CanonLocal || got.Path != want.Path {
			t.Errorf("%+v: %+v, want path %s", s, got, want.Path)
		}
	}
	other := canon(t, mktSrc{kind: "directory", path: filepath.Join(tmp, "other")}, o)
	if other.Path == want.Path {
		t.Errorf("another directory has the same canonical path")
	}
	// A path that does not exist yet under a link resolves through the link.
	if got := ResolvePath(filepath.Join(link, "later", "x")); got != filepath.Join(want.Path, "later", "x") {
		t.Errorf("ResolvePath through a link to a missing path = %s", got)
	}
}

func TestCanonicalErrors(t *testing.T) {
	for _, s := range []mktSrc{
		{kind: "github", repo: "noslash"},
		{kind: "git", url: ""},
		{kind: "git", url: "ftp://host/x"},
		{kind: "git", url: "https:///x"},
		{kind: "git", url: "/local/path:with/colon"},
		{kind: "git", url: "https://host:99999/x"},
		{kind: "git", url: "https://host/"},
		{kind: "url", url: "file:///x.json"},
		{kind: "directory", path: ""},
		{kind: "hostPattern"},
		{kind: "github", repo: "a/b\n"},
	} {
		_, err := s.source().Canonical(CanonOptions{})
		var pe *Error
		if !errors.As(err, &pe) || pe.Type != TypeSourceCanonical || pe.Hint == "" {
			t.Errorf("%+v: err %v, want a %s error with a hint", s, err, TypeSourceCanonical)
		}
	}
}

// FuzzCanonicalMarketplaceSource: never a panic, and the canonical form of
// a canonical form is itself.
func FuzzCanonicalMarketplaceSource(f *testing.F) {
	seeds := []mktSrc{
		{kind: "github", repo: "acme/tools"},
		{kind: "github", repo: "Acme/Tools.git", ref: "v1", path: "sub/.claude-plugin/marketplace.json"},
		{kind: "git", url: "git@github.com:acme/tools.git"},
		{kind: "git", url: "ssh://u@h.example:2222//a//b.git/", ref: "main"},
		{kind: "git", url: "https://[::1]:443/x/y"},
		{kind: "git", url: "file:///srv/mkt/.claude-plugin/marketplace.json", ref: "main"},
		{kind: "git", url: "https://h/a.git.git"},
		{kind: "url", url: "https://User@H.example:443/m/./marketplace.json?x=1"},
		{kind: "directory", path: "/srv/a/../b/"},
		{kind: "file", path: "rel/marketplace.json/marketplace.json"},
	}
	for _, s := range seeds {
		f.Add(s.kind, s.repo, s.url, s.ref, s.path)
	}
	f.Fuzz(func(t *testing.T, kind, repo, rawURL, ref, p string) {
		for _, gh := range []string{"", "ghe.example"} {
			o := CanonOptions{GitHubHost: gh}
			c, err := mktSrc{kind, repo, rawURL, ref, p}.source().Canonical(o)
			if err != nil {
				return
			}
			_ = c.RepoKey()
			_ = c.Owner()
			back := c.Source()
			c2, err := back.Canonical(o)
			if err != nil {
				t.Fatalf("canonical form %+v (as %+v) does not canonicalize: %v", c, back, err)
			}
			if c2 != c {
				t.Fatalf("not idempotent:\n first  %+v\n second %+v", c, c2)
			}
		}
	})
}
