package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/lazyre"
	"github.com/wharfhq/wharf/internal/core/netidle"
	"github.com/wharfhq/wharf/internal/core/progress"
	"github.com/wharfhq/wharf/plugin"
)

var (
	ownerRepoRE = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._-]+$`)
	shaRE       = lazyre.New(`^[0-9a-fA-F]{40}$`)
)

const wharfPinRef = "refs/wharf/pin"

// gitURL returns the clone URL and the subdirectory to take ("" = root).
func (f *Fetcher) gitURL(ctx context.Context, req *Request) (string, string, error) {
	s := req.Source
	var raw, sub string
	configured := false // raw is the configured GitHub's URL
	switch s.Kind {
	case plugin.SourceGitHub:
		if !ownerRepoRE.MatchString(s.Repo) || strings.Contains(s.Repo, "..") {
			return "", "", failf(req, `write repo as "owner/repo"`, "%w: github repo %q is not owner/repo", ErrUnsupported, s.Repo)
		}
		raw, configured = f.Net.GitHubURL(s.Repo), true
	case plugin.SourceURL, plugin.SourceGitSubdir:
		raw = s.URL
		if raw == "" {
			raw = s.Repo
		}
		if ownerRepoRE.MatchString(raw) && !strings.Contains(raw, "..") {
			raw, configured = f.Net.GitHubURL(raw), true
		}
		sub = s.Path
		if s.Kind == plugin.SourceGitSubdir && strings.TrimPrefix(strings.TrimSpace(sub), "./") == "" {
			return "", "", failf(req, `set "path" to the plugin's directory in the repository`, "%w: git-subdir source without a path", ErrUnsupported)
		}
	}
	if err := f.checkGitURL(raw); err != nil {
		return "", "", fail(req, "use an https:// or git@host:owner/repo URL", err)
	}
	if !configured {
		// A URL the marketplace entry wrote (not the configured GitHub):
		// its host must be public. git dials by itself, so this is checked
		// once, before the clone.
		if err := f.Net.CheckGitHost(ctx, raw); err != nil {
			return "", "", fail(req, "use a repository on a public host, or set "+AllowPrivateEnv+"=1 to allow private ones", err)
		}
	}
	return raw, sub, nil
}

func (f *Fetcher) checkGitURL(raw string) error {
	if raw == "" {
		return fmt.Errorf("%w: empty git URL", ErrUnsupported)
	}
	if fetch.IsSCP(raw) {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: git URL %q: %v", ErrUnsupported, redactURL(raw), err)
	}
	switch u.Scheme {
	case "https", "ssh":
		return nil
	case "http":
		if fetch.IsLoopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("%w: plain http git URL %q (only https, or http to 127.0.0.1)", ErrUnsupported, redactURL(raw))
	case "file":
		if f.AllowFileURLs {
			return nil
		}
		return fmt.Errorf("%w: file:// git URL %q is not allowed in a marketplace entry (WHARF_ALLOW_FILE_SOURCES=1 allows it, for local testing)", ErrUnsupported, raw)
	}
	return fmt.Errorf("%w: git URL scheme %q in %q", ErrUnsupported, u.Scheme, redactURL(raw))
}

// redactURL drops user info (tokens) from a URL for messages.
func redactURL(raw string) string { return fetch.Redact(raw) }

type progressWriter struct{ w io.Writer }

func (p progressWriter) Write(b []byte) (int, error) {
	if p.w != nil {
		p.w.Write(b)
	}
	return len(b), nil
}

// fetchGit fetches one commit into memory (depth 1, one ref, no tags) and
// writes its tree (or one directory of it) by reading tree objects, never a
// checkout, so the result has no .git and a subdirectory is exactly what the
// commit holds.
func (f *Fetcher) fetchGit(ctx context.Context, req *Request, t *tree) (*Result, error) {
	rawURL, sub, err := f.gitURL(ctx, req)
	if err != nil {
		return nil, err
	}
	s := req.Source
	if s.SHA != "" && !shaRE.MatchString(s.SHA) {
		return nil, failf(req, "pin the full 40-character commit SHA", "%w: sha %q is not a full commit SHA", ErrUnsupported, s.SHA)
	}
	ctx, stop := f.Net.Step(ctx)
	defer stop()
	// Every connection of the fetch, and every redirect, passes the same
	// address guard as the host checked above: a public host cannot send
	// the fetch to a private one.
	ctx = fetch.WithGuard(ctx, f.Net.Guard())

	gopt, err := f.Net.Git(ctx, rawURL)
	if err != nil {
		return nil, fail(req, "a passphrase-protected key needs ssh-agent: run ssh-add", err)
	}
	var prog io.Writer
	var bar *progress.Bar
	switch {
	case f.ProgressBar != nil:
		bar = progress.NewBar(f.ProgressBar, "fetching "+redactURL(rawURL))
		netidle.OnRead(ctx, bar.Add)
		defer bar.Finish()
		prog = bar
	case f.Progress != nil:
		prog = progressWriter{f.Progress}
	}
	// note prints a progress line, in place of the bar while it is up.
	note := func(format string, args ...any) {
		if bar != nil {
			bar.Clear()
		}
		f.progressf(format, args...)
	}
	// Objects go to a scratch directory outside the destination rather
	// than memory: a full-history fallback of a large repository must not
	// exhaust RAM. Nothing of it reaches the plugin tree.
	scratch, err := os.MkdirTemp("", "wharf-git-*")
	if err != nil {
		return nil, fail(req, "check that the temporary directory is writable", err)
	}
	defer os.RemoveAll(scratch)
	repo, err := git.Init(filesystem.NewStorage(osfs.New(scratch), cache.NewObjectLRUDefault()), nil)
	if err != nil {
		return nil, fail(req, "", err)
	}
	remote, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{rawURL}})
	if err != nil {
		return nil, fail(req, "", err)
	}
	f.progressf("%s: listing %s\n", req.Plugin, redactURL(rawURL))
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: gopt.Auth, ProxyOptions: gopt.Proxy, CABundle: gopt.CABundle})
	if err != nil {
		return nil, f.gitErr(ctx, req, rawURL, err)
	}
	fetchRef := func(spec string, depth int, tags git.TagMode) error {
		err := remote.FetchContext(ctx, &git.FetchOptions{
			RefSpecs: []config.RefSpec{config.RefSpec(spec)},
			Depth:    depth, Auth: gopt.Auth, Tags: tags, Progress: prog, Force: true,
			ProxyOptions: gopt.Proxy, CABundle: gopt.CABundle,
		})
		if errors.Is(err, git.NoErrAlreadyUpToDate) {
			return nil
		}
		return err
	}

	var want plumbing.Hash
	switch {
	case s.SHA != "":
		want = plumbing.NewHash(strings.ToLower(s.SHA))
		var tip plumbing.ReferenceName
		for _, r := range refs {
			if r.Type() == plumbing.HashReference && r.Hash() == want && r.Name() != plumbing.HEAD {
				tip = r.Name()
				break
			}
		}
		if tip != "" {
			err = fetchRef("+"+tip.String()+":"+wharfPinRef, 1, git.NoTags)
		} else {
			// Servers only serve a non-tip commit shallowly when they allow
			// it; otherwise fall back to a full fetch of branches and tags.
			err = fetchRef(want.String()+":"+wharfPinRef, 1, git.NoTags)
			if err != nil {
				if ctx.Err() != nil {
					return nil, f.gitErr(ctx, req, rawURL, err)
				}
				note("%s: commit %s not fetchable shallowly (%v); fetching full history\n", req.Plugin, want, err)
				err = fetchRef("+refs/heads/*:refs/wharf/heads/*", 0, git.NoTags)
				if err == nil {
					err = fetchRef("+refs/tags/*:refs/wharf/tags/*", 0, git.NoTags)
				}
			}
		}
	default:
		name, hash, ok := pickRef(refs, s.Ref)
		if !ok {
			what := "HEAD"
			if s.Ref != "" {
				what = fmt.Sprintf("ref %q", s.Ref)
			}
			return nil, failf(req, "check the ref (a branch or tag of the repository) in the marketplace entry",
				"%w: %s in %s", ErrNotFound, what, redactURL(rawURL))
		}
		err = fetchRef("+"+name.String()+":"+wharfPinRef, 1, git.NoTags)
		want = hash
	}
	if bar != nil {
		bar.Finish() // the transfer is over
	}
	if err != nil {
		return nil, f.gitErr(ctx, req, rawURL, err)
	}
	commit, err := peelCommit(repo, want)
	if err != nil {
		return nil, failf(req, "check the sha in the marketplace entry; it must be a commit of the repository",
			"%w: commit %s in %s: %v", ErrNotFound, want, redactURL(rawURL), err)
	}
	root, err := commit.Tree()
	if err != nil {
		return nil, fail(req, "", err)
	}
	if sub != "" {
		clean, err := CheckEntryPath(strings.TrimSpace(sub))
		if err != nil {
			return nil, fail(req, `write "path" as a directory inside the repository, e.g. "./plugins/deploy"`, err)
		}
		if clean != "" {
			subtree, err := root.Tree(clean)
			if err != nil {
				return nil, failf(req, `check "path" in the marketplace entry`,
					"%w: directory %q in commit %s of %s", ErrNotFound, clean, commit.Hash, redactURL(rawURL))
			}
			root = subtree
		}
	}
	f.progressf("%s: writing commit %s\n", req.Plugin, commit.Hash)
	if err := f.writeGitTree(repo, root, "", t); err != nil {
		return nil, fail(req, "remove the offending entry from the repository", err)
	}
	return &Result{Commit: commit.Hash.String(), URL: redactURL(rawURL)}, nil
}

func (f *Fetcher) gitErr(ctx context.Context, req *Request, rawURL string, err error) error {
	if e := netidle.Cause(ctx); e != nil {
		return failf(req, fmt.Sprintf("check that %s is up, or raise WHARF_NET_IDLE_TIMEOUT (config net-idle-timeout, now %s) if it is only slow", e.Host, e.Idle),
			"git %s: %w", redactURL(rawURL), fetch.IdleError(e, err))
	}
	if ctx.Err() != nil {
		return failf(req, "raise WHARF_GIT_TIMEOUT (config git-timeout, now "+f.Net.StepTimeout().String()+") or check the network",
			"git %s: timed out after %s (git-timeout): %w", redactURL(rawURL), f.Net.StepTimeout(), err)
	}
	switch {
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return failf(req, "check the repository URL", "%w: repository %s", ErrNotFound, redactURL(rawURL))
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return failf(req, fetch.TokenHint,
			"git %s: %w", redactURL(rawURL), err)
	}
	return failf(req, "check the repository URL and your network", "git %s: %w", redactURL(rawURL), err)
}

// pickRef finds ref among the advertised refs: a full name, a branch or a
// tag; an empty ref means HEAD.
func pickRef(refs []*plumbing.Reference, ref string) (plumbing.ReferenceName, plumbing.Hash, bool) {
	byName := map[plumbing.ReferenceName]*plumbing.Reference{}
	for _, r := range refs {
		byName[r.Name()] = r
	}
	resolve := func(n plumbing.ReferenceName) (plumbing.ReferenceName, plumbing.Hash, bool) {
		for i := 0; i < 5; i++ {
			r, ok := byName[n]
			if !ok {
				return "", plumbing.ZeroHash, false
			}
			if r.Type() == plumbing.HashReference {
				return r.Name(), r.Hash(), true
			}
			n = r.Target()
		}
		return "", plumbing.ZeroHash, false
	}
	if ref == "" {
		return resolve(plumbing.HEAD)
	}
	var cands []plumbing.ReferenceName
	if strings.HasPrefix(ref, "refs/") {
		cands = append(cands, plumbing.ReferenceName(ref))
	}
	cands = append(cands, plumbing.NewBranchReferenceName(ref), plumbing.NewTagReferenceName(ref))
	for _, c := range cands {
		if n, h, ok := resolve(c); ok {
			return n, h, true
		}
	}
	return "", plumbing.ZeroHash, false
}

// peelCommit returns the commit h names, peeling annotated tags.
func peelCommit(repo *git.Repository, h plumbing.Hash) (*object.Commit, error) {
	for i := 0; i < 5; i++ {
		if tag, err := repo.TagObject(h); err == nil {
			h = tag.Target
			continue
		}
		return repo.CommitObject(h)
	}
	return nil, fmt.Errorf("tag chain too long")
}

func (f *Fetcher) writeGitTree(repo *git.Repository, tr *object.Tree, prefix string, t *tree) error {
	for _, e := range tr.Entries {
		if strings.EqualFold(e.Name, ".git") {
			continue
		}
		if e.Name == "" || strings.Contains(e.Name, "/") {
			return fmt.Errorf("%w: git tree entry %q", ErrUnsafePath, e.Name)
		}
		name := e.Name
		if prefix != "" {
			name = prefix + "/" + e.Name
		}
		switch e.Mode {
		case filemode.Dir:
			if err := t.mkdir(name); err != nil {
				return err
			}
			sub, err := repo.TreeObject(e.Hash)
			if err != nil {
				return fmt.Errorf("tree %q: %w", name, err)
			}
			if err := f.writeGitTree(repo, sub, name, t); err != nil {
				return err
			}
		case filemode.Regular, filemode.Deprecated, filemode.Executable:
			blob, err := repo.BlobObject(e.Hash)
			if err != nil {
				return fmt.Errorf("blob %q: %w", name, err)
			}
			r, err := blob.Reader()
			if err != nil {
				return err
			}
			err = t.file(name, e.Mode == filemode.Executable, r)
			r.Close()
			if err != nil {
				return err
			}
		case filemode.Symlink:
			blob, err := repo.BlobObject(e.Hash)
			if err != nil {
				return fmt.Errorf("blob %q: %w", name, err)
			}
			r, err := blob.Reader()
			if err != nil {
				return err
			}
			target, err := io.ReadAll(io.LimitReader(r, 4097))
			r.Close()
			if err != nil {
				return err
			}
			if err := t.symlink(name, string(target)); err != nil {
				return err
			}
		case filemode.Submodule:
			f.progressf("skipping submodule %q (submodules are not fetched)\n", name)
		default:
			return fmt.Errorf("%w: git entry %q has mode %s", ErrUnsupported, name, e.Mode)
		}
	}
	return nil
}
