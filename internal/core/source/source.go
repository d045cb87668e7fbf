package source

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/plugin"
)

// Defaults used when a Fetcher field is zero.
const (
	DefaultNPMRegistry = "https://registry.npmjs.org"
	DefaultTimeout     = fetch.DefaultTimeout
)

// Fetcher fetches plugin sources. The zero value is usable. A Fetcher is
// safe for concurrent use as long as its fields are not changed while
// fetches run.
type Fetcher struct {
	// Net is what every network step obeys: the GitHub host of `github`
	// sources (owner/repo → <host>/owner/repo.git), the npm registry of
	// npm sources that name none, the step timeout and idle limit, the
	// proxy, the size limits, private addresses, and the tokens. The
	// command builds it once from the config file and the environment.
	Net fetch.Config
	// AllowFileURLs permits file:// git URLs. Off by default: a marketplace
	// entry must not be able to copy an arbitrary local repository.
	AllowFileURLs bool
	// Limits bound entries and bytes written per source.
	Limits Limits
	// Progress receives human-readable progress lines; nil is silent.
	Progress io.Writer
	// ProgressBar is a terminal on which downloads draw a byte progress
	// bar; nil draws none (not a terminal, --quiet, --json).
	ProgressBar io.Writer
	// Gate, when set, decides every source a plugin's tree comes from
	// (managed blockedMarketplaces); nil allows every source.
	Gate Gate
	// Sync is how a Request.Durable tree is made durable; the zero value,
	// SyncAuto, chooses per tree.
	Sync SyncMode
}

// Gate decides whether a plugin's tree may come from a source. Fetch asks
// it before any network step with the source the marketplace entry names,
// and again, before a redirect is followed, with every URL the fetch is
// redirected to: a url source (the repository) for git, an archive source
// for downloads. A non-nil error refuses the fetch and is returned as is, so
// a policy engine can return its own typed error. Implementations must be
// safe for concurrent use.
type Gate interface {
	AllowFetch(ctx context.Context, plugin string, src plugin.Source) error
}

// NewFetcher returns a Fetcher whose network steps obey cfg.
func NewFetcher(cfg fetch.Config) *Fetcher {
	return &Fetcher{Net: cfg}
}

// Request is one fetch: which plugin, its source, and where to write it.
type Request struct {
	// Plugin names the plugin in errors and progress, e.g. "deploy@corp".
	Plugin string
	Source plugin.Source
	// MarketplaceDir is the marketplace clone; required for relative sources.
	MarketplaceDir string
	// Marketplace, when set, is MarketplaceDir as ResolveMarketplace
	// resolved it: a caller fetching many plugins of one marketplace
	// resolves the directory and its checkout once, not once per plugin.
	// It is ignored unless its Dir is MarketplaceDir.
	Marketplace *Marketplace
	// Dest is an existing empty directory that receives the tree.
	Dest string
	// Durable has Fetch make the tree durable before it returns, as
	// Fetcher.Sync says: each file fsynced as soon as it is written (on
	// the descriptor that wrote it) and each directory once it is
	// complete, the deepest first and Dest last; or one syncfs of Dest's
	// file system once the tree is complete. A caller that renames Dest
	// into place then needs only to fsync Dest's parent.
	Durable bool
	// ReadOnly has Fetch create every file read-only (0444, or 0555 when
	// executable) and make every directory, Dest included, 0555 once the
	// tree is complete: the modes of a sealed cache version, without a
	// second pass over the tree.
	ReadOnly bool
}

func (r *Request) object() string {
	return fmt.Sprintf("%s (source %s)", r.Plugin, Describe(r.Source))
}

// Result says what was fetched.
type Result struct {
	Kind string
	// Commit is the git commit SHA for github, url and git-subdir sources,
	// and for a relative source the commit checked out in the git work
	// tree that holds the marketplace directory, if any.
	Commit string
	// Version is the npm package version that was fetched.
	Version string
	// URL is where the tree came from (repository, tarball or archive).
	URL string
	// Entries and Bytes count what was written.
	Entries int
	Bytes   int64
	// Written is every regular file written, by slash-separated path
	// relative to Dest, with its size and content hash, taken from the
	// bytes as they were written.
	Written map[string]WrittenFile
	// Omitted is set when the source had entries that were not written:
	// the entries of a .git directory, which a plugin's tree never holds.
	// Without it, a relative source's copy holds every entry of the
	// plugin directory, each with the same name, type and content.
	Omitted bool
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
	t.readOnly = req.ReadOnly
	if req.Durable {
		t.syncAll = t.fs.syncAllChosen(f.Sync)
		t.durable = !t.syncAll
	}
	return f.fetch(ctx, req, t)
}

// fetch writes the tree of req.Source into t: Fetch's work once the tree
// exists.
func (f *Fetcher) fetch(ctx context.Context, req Request, t *tree) (*Result, error) {
	var err error
	// refused is the gate's refusal of a redirect, returned as is in
	// place of the transport error that carries it.
	var refused error
	if f.Gate != nil && req.Source.Kind != plugin.SourceRelative {
		if err := f.Gate.AllowFetch(ctx, req.Plugin, req.Source); err != nil {
			return nil, err
		}
		ctx = fetch.WithRedirectCheck(ctx, func(ctx context.Context, u *url.URL) error {
			hop := plugin.Source{Kind: plugin.SourceArchive, URL: u.String()}
			switch req.Source.Kind {
			case plugin.SourceGitHub, plugin.SourceURL, plugin.SourceGitSubdir:
				hop = plugin.Source{Kind: plugin.SourceURL, URL: u.String(), Ref: req.Source.Ref, SHA: req.Source.SHA}
				if req.Source.Kind == plugin.SourceGitSubdir {
					hop.Kind, hop.Path = plugin.SourceGitSubdir, req.Source.Path
				}
			}
			if err := f.Gate.AllowFetch(ctx, req.Plugin, hop); err != nil {
				refused = err
				return err
			}
			return nil
		})
	}
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
	if refused != nil {
		return nil, refused
	}
	if err != nil {
		return nil, err
	}
	if err := t.verifyLinks(); err != nil {
		return nil, fail(&req, "remove the symlink from the plugin or make it point inside the plugin", err)
	}
	if err := t.finish(); err != nil {
		return nil, fail(&req, "check the disk and the permissions of "+req.Dest, err)
	}
	res.Kind = string(req.Source.Kind)
	res.Entries, res.Bytes, res.Written, res.Omitted = t.entries, t.bytes, t.written, t.omitted
	f.progressf("%s: %d entries, %d bytes\n", req.Plugin, t.entries, t.bytes)
	return res, nil
}

// DefaultIdleTimeout is the idle limit of a network step unless
// Fetcher.Net says otherwise.
const DefaultIdleTimeout = fetch.DefaultIdleTimeout

func (f *Fetcher) progressf(format string, args ...any) {
	if f.Progress != nil {
		fmt.Fprintf(f.Progress, format, args...)
	}
}
