package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
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
//     ignores the port; a github entry (and an "owner/*" entry) blocks the
//     repository on github.com, on its layer's GitHub host and on the host
//     owner/repo is fetched from;
//   - a blocked directory blocks everything under it, and is matched by both
//     the resolved and the written path of the request;
//   - pathPattern blocks are tried on the resolved and the written path.
//
// strictKnownMarketplaces allows only the exact canonical source (ref and
// subdirectory included), and pathPattern allows only by the resolved path.
//
// Two GitHub hosts take part, and only one of them is the user's. A request
// names the source it will be fetched from: owner/repo on the host the
// command fetches it from (WithGitHubHost: WHARF_GITHUB_HOST, github-host).
// A managed entry {"source":"github"} (or "owner/*") means github.com, or the
// host its own layer names in githubHost: nothing the user sets moves what
// an administrator allowed. So with WHARF_GITHUB_HOST pointing elsewhere, an
// allowed github entry no longer matches, and a blocked one still does.

// envGitHubHost is WHARF_GITHUB_HOST: where owner/repo requests are
// fetched from when the engine was given no host (WithGitHubHost).
func envGitHubHost() string { return strings.TrimSpace(os.Getenv("WHARF_GITHUB_HOST")) }

func canonOptions(ghHost string) plugin.CanonOptions {
	return plugin.CanonOptions{GitHubHost: ghHost, Resolve: plugin.ResolvePath}
}

// canonicalOf returns the canonical form of a non-pattern source.
func canonicalOf(s *plugin.MarketplaceSource, ghHost string) (plugin.CanonicalSource, bool) {
	if s == nil {
		return plugin.CanonicalSource{}, false
	}
	c, err := s.Canonical(canonOptions(ghHost))
	return c, err == nil
}

// lexicalPath is a local source's path as written, made absolute and
// cleaned but with its symlinks left alone; "" for other sources.
func lexicalPath(s *plugin.MarketplaceSource) string {
	if !s.IsLocal() {
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

// layerGitHubHost is the GitHub host a layer's github entries mean: the
// layer's own githubHost, else github.com.
func layerGitHubHost(cl compiledLayer) string {
	if _, _, ok := plugin.GitHubHostPort(cl.Settings.GitHubHost); ok {
		return cl.Settings.GitHubHost
	}
	return ""
}

// ownerHosts are the hosts an "owner/*" entry of layer cl covers: github.com
// and the layer's GitHub host, and for a block also the host owner/repo is
// fetched from.
func (x *factIndex) ownerHosts(layerHost string, block bool) []string {
	hosts := []string{plugin.DefaultGitHubHost}
	add := func(setting string) {
		if h, _, ok := plugin.GitHubHostPort(setting); ok && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	add(layerHost)
	if block {
		add(x.githubHost)
	}
	return hosts
}

// addBlocked indexes a blockedMarketplaces entry that is not a pattern; its
// github entries mean layerHost.
func (x *factIndex) addBlocked(e settings.PolicySource, i int, layerHost string) {
	c, ok := canonicalOf(&e.MarketplaceSource, layerHost)
	if !ok {
		addLayer(x.blockedExact, e.Key(), i)
		return
	}
	switch c.Kind {
	case plugin.CanonLocal:
		addLayer(x.blockedLocal, c.Path, i)
		if lp := lexicalPath(&e.MarketplaceSource); lp != "" {
			addLayer(x.blockedLocal, lp, i)
		}
	default:
		x.blockedRepo[c.RepoKey()] = append(x.blockedRepo[c.RepoKey()], blockEntry{layer: i, c: c})
		if e.Kind == plugin.MktGitHub {
			// Blocks fail closed: the repository is blocked on every
			// GitHub host in play, the user's included.
			for _, h := range x.ownerHosts(layerHost, true) {
				if h == c.Host {
					continue
				}
				other := c
				other.Host = h
				x.blockedRepo[other.RepoKey()] = append(x.blockedRepo[other.RepoKey()], blockEntry{layer: i, c: other})
			}
		}
	}
}

// addStrict indexes a strictKnownMarketplaces entry that is not a pattern;
// its github entries mean layerHost, never the user's GitHub host.
func (x *factIndex) addStrict(e settings.PolicySource, i int, layerHost string) {
	if c, ok := canonicalOf(&e.MarketplaceSource, layerHost); ok {
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
