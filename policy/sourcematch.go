package policy

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/wharfhq/wharf/plugin"
	"github.com/wharfhq/wharf/settings"
)

// Marketplace sources are compared in their canonical form (see
// plugin.CanonicalSource), on both sides: the source a request names and
// every entry of strictKnownMarketplaces and blockedMarketplaces. So a block
// of {"source":"github","repo":"acme/tools"} also refuses
// git@github.com:acme/tools.git, https://GitHub.com:443/acme/tools/ and a
// symlink to a blocked directory, and the decision needs no network: local
// paths are only resolved (symlinks), never read.
//
// Blocks are wider than allows, so that every spelling fails closed:
//   - a blocked repository blocks every ref and subdirectory of it unless the
//     entry names one, compares its path case-insensitively on any host, and
//     ignores the port; a github entry also blocks the repository on the
//     configured GitHub Enterprise host;
//   - a blocked directory blocks everything under it, and is matched by both
//     the resolved and the written path of the request;
//   - pathPattern blocks are tried on the resolved and the written path.
//
// strictKnownMarketplaces allows only the exact canonical source (ref and
// subdirectory included), and pathPattern allows only by the resolved path.

// gitHubHost is the host {"source":"github"} points at, set by the command
// line from WHARF_GITHUB_HOST or its config (SetGitHubHost); nil reads the
// environment.
var gitHubHost atomic.Pointer[string]

// SetGitHubHost names the GitHub Enterprise host that owner/repo sources
// point at ("" for github.com). Policy compiled afterwards reads sources
// with it; call it before building an Engine.
func SetGitHubHost(host string) {
	h := strings.TrimSpace(host)
	gitHubHost.Store(&h)
}

func currentGitHubHost() string {
	if h := gitHubHost.Load(); h != nil {
		return *h
	}
	return strings.TrimSpace(os.Getenv("WHARF_GITHUB_HOST"))
}

func canonOptions(ghHost string) plugin.CanonOptions {
	return plugin.CanonOptions{GitHubHost: ghHost, Resolve: plugin.ResolvePath}
}

// canonicalOf returns the canonical form of a non-pattern source.
func canonicalOf(s *settings.MarketplaceSource, ghHost string) (plugin.CanonicalSource, bool) {
	if s == nil || s.IsPattern() {
		return plugin.CanonicalSource{}, false
	}
	c, err := plugin.CanonicalizeMarketplaceSource(s.Source, s.Repo, s.URL, s.Ref, s.Path, canonOptions(ghHost))
	return c, err == nil
}

// lexicalPath is a local source's path as written, made absolute and
// cleaned but with its symlinks left alone; "" for other sources.
func lexicalPath(s *settings.MarketplaceSource) string {
	if s.Source != settings.KindDirectory && s.Source != settings.KindFile {
		return ""
	}
	p, err := filepath.Abs(s.Path)
	if err != nil {
		p = filepath.Clean(s.Path)
	}
	return filepath.ToSlash(p)
}

// blockEntry is one blocked repository or URL.
type blockEntry struct {
	layer int
	c     plugin.CanonicalSource
}

// addBlocked indexes a blockedMarketplaces entry that is not a pattern.
func (x *factIndex) addBlocked(e settings.MarketplaceSource, i int) {
	c, ok := canonicalOf(&e, x.githubHost)
	if !ok {
		addLayer(x.blockedExact, e.Key(), i)
		return
	}
	switch c.Kind {
	case plugin.CanonLocal:
		addLayer(x.blockedLocal, c.Path, i)
		if lp := lexicalPath(&e); lp != "" {
			addLayer(x.blockedLocal, lp, i)
		}
	default:
		x.blockedRepo[c.RepoKey()] = append(x.blockedRepo[c.RepoKey()], blockEntry{layer: i, c: c})
		if e.Source == settings.KindGitHub && c.Host != plugin.DefaultGitHubHost {
			pub := c
			pub.Host = plugin.DefaultGitHubHost
			x.blockedRepo[pub.RepoKey()] = append(x.blockedRepo[pub.RepoKey()], blockEntry{layer: i, c: pub})
		}
	}
}

// addStrict indexes a strictKnownMarketplaces entry that is not a pattern.
func (x *factIndex) addStrict(e settings.MarketplaceSource, i int) {
	if c, ok := canonicalOf(&e, x.githubHost); ok {
		addLayer(x.strictExact, c.Key(), i)
		return
	}
	addLayer(x.strictExact, e.Key(), i)
}

// blockedHits calls hit for every layer whose blockedMarketplaces names the
// request's source exactly (in canonical form) or covers it.
func (x *factIndex) blockedHits(src *sourceFacets, hit func(layer int)) {
	if !src.known {
		return
	}
	for _, i := range x.blockedExact[src.rawKey] {
		hit(i)
	}
	if !src.canonical {
		return
	}
	if src.canon.Kind == plugin.CanonLocal {
		seen := map[int]bool{}
		for _, p := range []string{src.path, src.lexPath} {
			for p != "" {
				for _, i := range x.blockedLocal[p] {
					if !seen[i] {
						seen[i] = true
						hit(i)
					}
				}
				parent := filepath.ToSlash(filepath.Dir(filepath.FromSlash(p)))
				if parent == p || parent == "." {
					break
				}
				p = parent
			}
		}
		return
	}
	last := -1
	for _, e := range x.blockedRepo[src.canon.RepoKey()] {
		if e.layer != last && e.c.Covers(src.canon) {
			hit(e.layer)
			last = e.layer
		}
	}
}
