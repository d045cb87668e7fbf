package source

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wharfhq/wharf/netidle"
	"github.com/wharfhq/wharf/plugin"
)

// Defaults used when a Fetcher field is zero.
const (
	DefaultGitHubBaseURL = "https://github.com"
	DefaultNPMRegistry   = "https://registry.npmjs.org"
	DefaultTimeout       = 120 * time.Second
)

// Fetcher fetches plugin sources. The zero value is usable; NewFetcher fills
// it from the environment. A Fetcher is safe for concurrent use as long as
// its fields are not changed while fetches run.
type Fetcher struct {
	// GitHubBaseURL replaces https://github.com for `github` sources
	// (owner/repo → <base>/owner/repo.git).
	GitHubBaseURL string
	// NPMRegistry is the registry used when an npm source names none
	// (WHARF_NPM_REGISTRY, else https://registry.npmjs.org).
	NPMRegistry string
	// Timeout bounds each network step (WHARF_GIT_TIMEOUT; default 120s).
	Timeout time.Duration
	// IdleTimeout fails a network step (a git fetch over HTTP(S) or ssh, a
	// download) whose connection moves no byte for this long (zero:
	// DefaultIdleTimeout; negative: no idle limit).
	IdleTimeout time.Duration
	// HTTPClient is used for npm and archive downloads (default: a client
	// without a global timeout; each step runs under Timeout).
	HTTPClient *http.Client
	// Getenv reads the token variables GITHUB_TOKEN, GH_TOKEN, GITLAB_TOKEN
	// (default os.Getenv).
	Getenv func(string) string
	// AllowFileURLs permits file:// git URLs. Off by default: a marketplace
	// entry must not be able to copy an arbitrary local repository.
	AllowFileURLs bool
	// AllowPrivateNetworks lets archive, npm and git sources reach loopback,
	// link-local and private addresses; WHARF_ALLOW_PRIVATE_SOURCES=1 does
	// the same (see AllowPrivateEnv).
	AllowPrivateNetworks bool
	// Limits bound entries and bytes written per source.
	Limits Limits
	// Progress receives human-readable progress lines; nil is silent.
	Progress io.Writer
	// ProgressBar is a terminal on which downloads draw a byte progress
	// bar; nil draws none (not a terminal, --quiet, --json).
	ProgressBar io.Writer
}

// NewFetcher returns a Fetcher configured from WHARF_NPM_REGISTRY and
// WHARF_GIT_TIMEOUT (a Go duration such as "90s", or a number of seconds).
func NewFetcher() (*Fetcher, error) {
	f := &Fetcher{NPMRegistry: os.Getenv("WHARF_NPM_REGISTRY")}
	if v := os.Getenv("WHARF_GIT_TIMEOUT"); v != "" {
		d, err := parseTimeout(v)
		if err != nil {
			return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeSource, Object: "WHARF_GIT_TIMEOUT",
				Err: err, Hint: `set WHARF_GIT_TIMEOUT to a duration such as "120s" or a number of seconds`}
		}
		f.Timeout = d
	}
	return f, nil
}

func parseTimeout(v string) (time.Duration, error) {
	if n, err := strconv.Atoi(v); err == nil {
		if n <= 0 {
			return 0, fmt.Errorf("WHARF_GIT_TIMEOUT=%q must be positive", v)
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("WHARF_GIT_TIMEOUT=%q is not a positive duration", v)
	}
	return d, nil
}

// Request is one fetch: which plugin, its source, and where to write it.
type Request struct {
	// Plugin names the plugin in errors and progress, e.g. "deploy@corp".
	Plugin string
	Source plugin.Source
	// MarketplaceDir is the marketplace clone; required for relative sources.
	MarketplaceDir string
	// Dest is an existing empty directory that receives the tree.
	Dest string
}

func (r *Request) object() string {
	return fmt.Sprintf("%s (source %s)", r.Plugin, Describe(r.Source))
}

// Result says what was fetched.
type Result struct {
	Kind string
	// Commit is the git commit SHA for github, url and git-subdir sources.
	Commit string
	// Version is the npm package version that was fetched.
	Version string
	// URL is where the tree came from (repository, tarball or archive).
	URL string
	// Entries and Bytes count what was written.
	Entries int
	Bytes   int64
}

// Describe renders a source for messages, e.g. "github:owner/repo@v1".
func Describe(s plugin.Source) string {
	var b strings.Builder
	b.WriteString(string(s.Kind))
	b.WriteString(":")
	switch s.Kind {
	case plugin.SourceRelative:
		b.WriteString(s.Path)
	case plugin.SourceGitHub:
		b.WriteString(s.Repo)
	case plugin.SourceNPM:
		b.WriteString(s.Package)
		if s.Version != "" {
			b.WriteString("@" + s.Version)
		}
		return b.String()
	default:
		if s.URL != "" {
			b.WriteString(redactURL(s.URL))
		} else {
			b.WriteString(s.Repo)
		}
		if s.Path != "" && s.Kind != plugin.SourceArchive {
			b.WriteString("//" + s.Path)
		}
	}
	switch {
	case s.SHA != "":
		b.WriteString("@" + s.SHA)
	case s.Ref != "":
		b.WriteString("@" + s.Ref)
	}
	return b.String()
}

// Fetch writes the plugin tree of req.Source into req.Dest, which must be an
// existing empty directory. On error the destination may hold a partial tree;
// the caller (package cache) discards it.
func (f *Fetcher) Fetch(ctx context.Context, req Request) (*Result, error) {
	t, err := newTree(req.Dest, f.Limits)
	if err != nil {
		return nil, fail(&req, "pass an existing empty directory as the destination", err)
	}
	defer t.close()
	var res *Result
	switch req.Source.Kind {
	case plugin.SourceRelative:
		res, err = f.fetchRelative(&req, t)
	case plugin.SourceGitHub, plugin.SourceURL, plugin.SourceGitSubdir:
		res, err = f.fetchGit(ctx, &req, t)
	case plugin.SourceNPM:
		res, err = f.fetchNPM(ctx, &req, t)
	case plugin.SourceArchive:
		res, err = f.fetchArchive(ctx, &req, t)
	default:
		return nil, failf(&req, "use one of the source forms: ./path, github, url, git-subdir, npm, archive",
			"%w: source kind %q", ErrUnsupported, req.Source.Kind)
	}
	if err != nil {
		return nil, err
	}
	if err := t.verifyLinks(); err != nil {
		return nil, fail(&req, "remove the symlink from the plugin or make it point inside the plugin", err)
	}
	res.Kind = string(req.Source.Kind)
	res.Entries, res.Bytes = t.entries, t.bytes
	f.progressf("%s: %d entries, %d bytes\n", req.Plugin, t.entries, t.bytes)
	return res, nil
}

// DefaultIdleTimeout is the idle limit of a network step unless
// Fetcher.IdleTimeout says otherwise.
const DefaultIdleTimeout = 30 * time.Second

func (f *Fetcher) idle() time.Duration {
	if f.IdleTimeout == 0 {
		return DefaultIdleTimeout
	}
	return f.IdleTimeout
}

// idleErr names the silent host and the setting that limits it.
func idleErr(e *netidle.Error, err error) error {
	if strings.Contains(err.Error(), e.Error()) {
		// The transport already reported the cause; say it once.
		return fmt.Errorf("%w (net-idle-timeout; raise WHARF_NET_IDLE_TIMEOUT if the server is only slow)", e)
	}
	return fmt.Errorf("%w (net-idle-timeout; raise WHARF_NET_IDLE_TIMEOUT if the server is only slow): %v", e, err)
}

func (f *Fetcher) timeout() time.Duration {
	if f.Timeout > 0 {
		return f.Timeout
	}
	return DefaultTimeout
}

func (f *Fetcher) getenv(k string) string {
	if f.Getenv != nil {
		return f.Getenv(k)
	}
	return os.Getenv(k)
}

func (f *Fetcher) progressf(format string, args ...any) {
	if f.Progress != nil {
		fmt.Fprintf(f.Progress, format, args...)
	}
}
