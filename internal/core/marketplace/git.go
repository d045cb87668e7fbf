package marketplace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/netidle"
	"github.com/wharfhq/wharf/plugin"
)

// DefaultGitHubHost is where owner/repo shorthand points unless the
// configured GitHub host (github-host, WHARF_GITHUB_HOST) names a GitHub
// Enterprise host.
const DefaultGitHubHost = fetch.DefaultGitHubHost

// gitClient runs the git network steps of one command. Every network step
// gets its own deadline, so a stalled server fails with a clear timeout.
type gitClient struct {
	net *fetch.Config
	// progress receives git's raw progress text; bar, a terminal, gets a
	// progress bar instead. Both nil: silent.
	progress io.Writer
	bar      io.Writer
	// redirect, when set, decides every repository a redirect leads to,
	// before it is followed (policy on the target, not only on the source
	// as written).
	redirect fetch.RedirectCheck
}

// redirectRefused carries the redirect check's refusal through go-git, so
// the command reports it as is (a policy denial stays one).
type redirectRefused struct{ err error }

func (r *redirectRefused) Error() string { return r.err.Error() }
func (r *redirectRefused) Unwrap() error { return r.err }

// RemoteURL returns the URL git fetches for a git-backed source; a github
// source points at cfg's GitHub host.
func RemoteURL(src plugin.MarketplaceSource, cfg *fetch.Config) string {
	if src.Kind != plugin.MktGitHub {
		return src.URL
	}
	return cfg.GitHubURL(src.Repo)
}

// clone makes a shallow, single-branch, tag-less clone of src into dir
// (which must not exist yet) and returns the checked-out commit.
func (g *gitClient) clone(ctx context.Context, src plugin.MarketplaceSource, dir string) (string, error) {
	remote := RemoteURL(src, g.net)
	auth, err := g.net.GitAuth(remote)
	if err != nil {
		return "", g.fail(src, "authenticate", err)
	}
	if sha := src.PinnedSHA(); sha != "" {
		return g.clonePinned(ctx, src, remote, auth, dir, sha)
	}
	refs := []plumbing.ReferenceName{""}
	if src.Ref != "" {
		refs = []plumbing.ReferenceName{plumbing.NewBranchReferenceName(src.Ref), plumbing.NewTagReferenceName(src.Ref)}
	}
	var lastErr error
	for _, ref := range refs {
		if err := os.RemoveAll(dir); err != nil {
			return "", err
		}
		sc := newStreamCheckout(dir)
		s := newIndexingStorage(dir, sc)
		repo, err := g.withTimeout(ctx, remote, func(ctx context.Context, progress io.Writer) (*git.Repository, error) {
			return git.CloneContext(ctx, s, osfs.New(dir), &git.CloneOptions{
				URL:           remote,
				Auth:          auth,
				ReferenceName: ref,
				SingleBranch:  true,
				Depth:         1,
				Tags:          git.NoTags,
				NoCheckout:    true,
				Progress:      progress,
				ProxyOptions:  g.proxy(ctx, remote),
				CABundle:      g.net.CABundle,
			})
		})
		if err != nil {
			sc.stop()
			s.Close()
			lastErr = err
			if isRefNotFound(err) {
				continue
			}
			return "", g.fail(src, "clone", err)
		}
		head, err := repo.Head()
		if err == nil {
			err = checkoutStreamed(s.Storage, sc, head.Hash())
		}
		sc.stop()
		s.Close()
		if err != nil {
			return "", g.fail(src, "check out", err)
		}
		return head.Hash().String(), nil
	}
	return "", g.fail(src, "clone", fmt.Errorf("no branch or tag named %q: %w", src.Ref, lastErr))
}

func (g *gitClient) clonePinned(ctx context.Context, src plugin.MarketplaceSource, remote string, auth transport.AuthMethod, dir, sha string) (string, error) {
	s, fs := openStorage(dir)
	defer s.Close()
	repo, err := git.Init(s, fs)
	if err != nil {
		return "", g.fail(src, "init", err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{remote}}); err != nil {
		return "", g.fail(src, "init", err)
	}
	if err := g.fetchSHA(ctx, repo, auth, sha); err != nil {
		return "", g.fail(src, "fetch "+sha, err)
	}
	h := plumbing.NewHash(sha)
	err = s.SetReference(plumbing.NewHashReference(plumbing.HEAD, h))
	if err == nil {
		err = checkoutNew(s, h, dir)
	}
	if err != nil {
		return "", g.fail(src, "check out "+sha, err)
	}
	return sha, nil
}

// checkoutNew checks commit out into the new clone at dir (which holds
// only .git) and writes its index.
func checkoutNew(s *filesystem.Storage, commit plumbing.Hash, dir string) error {
	open, err := packOpener(s)
	if err != nil {
		return err
	}
	idx, err := checkoutFresh(open, commit, dir)
	if err != nil {
		return err
	}
	return s.SetIndex(idx)
}

// checkoutStreamed completes the checkout of commit that sc made while
// the clone's pack came, and writes its index.
func checkoutStreamed(s *filesystem.Storage, sc *streamCheckout, commit plumbing.Hash) error {
	open, err := packOpener(s)
	if err != nil {
		return err
	}
	idx, err := sc.finish(open, commit)
	if err != nil {
		return err
	}
	return s.SetIndex(idx)
}

// packOpener returns what opens a checkout worker's reader of the packs
// of s.
func packOpener(s *filesystem.Storage) (func() (objectReader, func(), error), error) {
	ps, err := openPackSet(s.Filesystem())
	if err != nil {
		return nil, err
	}
	return func() (objectReader, func(), error) {
		// Each blob is read once: a small cache keeps the bases of
		// deltas, not the files.
		r, err := ps.reader(checkoutCacheBytes)
		if err != nil {
			return nil, nil, err
		}
		return r, r.Close, nil
	}, nil
}

// fetchSHA fetches one commit. Servers that refuse a want by SHA get a full
// fetch of their branches instead, which must then contain the commit.
func (g *gitClient) fetchSHA(ctx context.Context, repo *git.Repository, auth transport.AuthMethod, sha string) error {
	h := plumbing.NewHash(sha)
	if _, err := repo.CommitObject(h); err == nil {
		return nil
	}
	err := g.fetch(ctx, repo, auth, 1, config.RefSpec(sha+":refs/wharf/pinned"))
	if errors.Is(err, git.ErrExactSHA1NotSupported) {
		err = g.fetch(ctx, repo, auth, 0, config.RefSpec("+refs/heads/*:refs/remotes/origin/*"))
	}
	if err != nil {
		return err
	}
	if _, err := repo.CommitObject(h); err != nil {
		return fmt.Errorf("commit %s is not on the remote: %w", sha, err)
	}
	return nil
}

func (g *gitClient) fetch(ctx context.Context, repo *git.Repository, auth transport.AuthMethod, depth int, specs ...config.RefSpec) error {
	remote := ""
	if r, err := repo.Remote(git.DefaultRemoteName); err == nil && len(r.Config().URLs) > 0 {
		remote = r.Config().URLs[0]
	}
	_, err := g.withTimeout(ctx, remote, func(ctx context.Context, progress io.Writer) (*git.Repository, error) {
		return nil, repo.FetchContext(ctx, &git.FetchOptions{
			RemoteName:   git.DefaultRemoteName,
			RefSpecs:     specs,
			Depth:        depth,
			Auth:         auth,
			Tags:         git.NoTags,
			Force:        true,
			Progress:     progress,
			ProxyOptions: g.proxy(ctx, remote),
			CABundle:     g.net.CABundle,
		})
	})
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}

// update fetches the tracked ref of the clone in dir and hard-resets the
// work tree to it. It returns the commits before and after. If the fetch
// fails, nothing in dir has changed.
func (g *gitClient) update(ctx context.Context, src plugin.MarketplaceSource, dir string) (before, after string, err error) {
	s, wt := openStorage(dir)
	defer s.Close()
	repo, err := git.Open(s, wt)
	if err != nil {
		return "", "", g.fail(src, "open the clone", err)
	}
	head, err := repo.Head()
	if err != nil {
		return "", "", g.fail(src, "read HEAD of the clone", err)
	}
	before = head.Hash().String()
	remote := RemoteURL(src, g.net)
	if err := repo.DeleteRemote(git.DefaultRemoteName); err == nil || errors.Is(err, git.ErrRemoteNotFound) {
		// The source's URL may have moved (WHARF_GITHUB_HOST); always fetch
		// from what the source says now.
		_, err = repo.CreateRemote(&config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{remote}})
		if err != nil {
			return before, "", g.fail(src, "configure remote", err)
		}
	}
	auth, err := g.net.GitAuth(remote)
	if err != nil {
		return before, "", g.fail(src, "authenticate", err)
	}
	var target plumbing.Hash
	switch {
	case src.PinnedSHA() != "":
		if err := g.fetchSHA(ctx, repo, auth, src.PinnedSHA()); err != nil {
			return before, "", g.fail(src, "fetch", err)
		}
		target = plumbing.NewHash(src.PinnedSHA())
	default:
		target, err = g.fetchTracked(ctx, src, repo, auth, head)
		if err != nil {
			return before, "", g.fail(src, "fetch", err)
		}
	}
	if target.String() == before {
		return before, before, nil
	}
	done, err := checkoutUpdate(s, dir, head.Hash(), target)
	if err == nil && !done {
		err = g.resetTo(repo, target)
	}
	if err != nil {
		return before, "", g.fail(src, "reset to "+target.String(), err)
	}
	return before, target.String(), nil
}

// fetchTracked fetches the branch or tag the clone follows and returns its
// new commit.
//
// It asks for no depth. The clone's commit goes to the server as a have
// either way, but a deepening fetch makes the server cut the new commit off
// from its parent, and without a thin pack (go-git asks for none) the
// server then sends the new commit's whole tree again: at 31,000 files, a
// 26 MB pack for a 200-file change. Without deepening, the server sends the
// commits since the clone's and only the objects they add. The cost: a
// branch whose history was rewritten, so that the server knows none of the
// clone's commits, comes with its full history.
func (g *gitClient) fetchTracked(ctx context.Context, src plugin.MarketplaceSource, repo *git.Repository, auth transport.AuthMethod, head *plumbing.Reference) (plumbing.Hash, error) {
	var candidates []plumbing.ReferenceName
	switch {
	case src.Ref != "":
		candidates = []plumbing.ReferenceName{plumbing.NewBranchReferenceName(src.Ref), plumbing.NewTagReferenceName(src.Ref)}
	case head.Name().IsBranch():
		candidates = []plumbing.ReferenceName{head.Name()}
	default:
		candidates = []plumbing.ReferenceName{plumbing.HEAD}
	}
	var lastErr error
	for _, name := range candidates {
		local := plumbing.ReferenceName("refs/wharf/remote")
		spec := config.RefSpec("+" + name.String() + ":" + local.String())
		if err := g.fetch(ctx, repo, auth, 0, spec); err != nil {
			lastErr = err
			if isRefNotFound(err) {
				continue
			}
			return plumbing.ZeroHash, err
		}
		h, err := repo.ResolveRevision(plumbing.Revision(local))
		if err != nil {
			return plumbing.ZeroHash, err
		}
		return *h, nil
	}
	return plumbing.ZeroHash, fmt.Errorf("no branch or tag named %q on the remote: %w", src.Ref, lastErr)
}

func (g *gitClient) resetTo(repo *git.Repository, h plumbing.Hash) error {
	wt, err := repo.Worktree()
	if err != nil {
		return err
	}
	return wt.Reset(&git.ResetOptions{Commit: h, Mode: git.HardReset})
}

// idleErr is the error of a step whose server went silent: it names the
// host and the setting.
func idleErr(e *netidle.Error, err error) error {
	if strings.Contains(err.Error(), e.Error()) {
		// The transport already reported the cause; say it once.
		return fmt.Errorf("%w: %s (net-idle-timeout)", ErrTimeout, e)
	}
	return fmt.Errorf("%w: %s (net-idle-timeout): %v", ErrTimeout, e, err)
}

func idleHint(e *netidle.Error) string {
	return fmt.Sprintf("%s accepted the connection but stopped sending: check that it is up, or raise WHARF_NET_IDLE_TIMEOUT (config net-idle-timeout, now %s) if it is only slow", e.Host, e.Idle)
}

// proxy returns the proxy options of a git step on remote: ssh dials under
// the step's idle limit, https through the configured proxy (see
// fetch.Config.Git).
func (g *gitClient) proxy(ctx context.Context, remote string) transport.ProxyOptions {
	o, err := g.net.Git(ctx, remote)
	if err != nil {
		return transport.ProxyOptions{}
	}
	return o.Proxy
}

// withTimeout runs one git network step on remote under the overall and
// the idle limit, with a progress bar on a terminal.
func (g *gitClient) withTimeout(ctx context.Context, remote string, fn func(context.Context, io.Writer) (*git.Repository, error)) (*git.Repository, error) {
	ctx, stop := g.net.Step(ctx)
	defer stop()
	// The user (or managed settings) named this repository: its host is
	// trusted as named, but every connection to another host, and every
	// redirect, passes the private-address guard.
	guard := g.net.Guard()
	if h := fetch.GitHost(remote); h != "" {
		guard.Trust(h)
	}
	ctx = fetch.WithGuard(ctx, guard)
	var refused error
	if g.redirect != nil {
		ctx = fetch.WithRedirectCheck(ctx, func(ctx context.Context, u *url.URL) error {
			if err := g.redirect(ctx, u); err != nil {
				refused = err
				return err
			}
			return nil
		})
	}
	progress, done := fetch.Progress(ctx, g.bar, g.progress, "fetching "+redactRemote(remote))
	defer done()
	r, err := fn(ctx, progress)
	if refused != nil {
		return nil, &redirectRefused{err: refused}
	}
	if e := netidle.Cause(ctx); err != nil && e != nil {
		return nil, &idleFailure{e: e, err: idleErr(e, err)}
	}
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("%w after %s (git-timeout; raise WHARF_GIT_TIMEOUT if the network is slow): %v", ErrTimeout, g.net.StepTimeout(), err)
	}
	return r, err
}

// idleFailure is a git step ended by the idle limit.
type idleFailure struct {
	e   *netidle.Error
	err error
}

func (f *idleFailure) Error() string { return f.err.Error() }
func (f *idleFailure) Unwrap() error { return f.err }

// storageCacheBytes bounds the object cache of a clone's storage (go-git's
// default, 96 MiB, is mostly file contents a checkout reads once).
const storageCacheBytes = 16 << 20

// checkoutCacheBytes bounds the object cache of each checkout worker.
const checkoutCacheBytes = 2 << 20

// openStorage returns the object storage and work tree of a clone at dir.
// wharf is the only writer of its clones while it holds the store lock, so
// the storage may cache pack indexes and keep pack files open; without that,
// go-git reopens the pack for every object it checks out. Close the storage
// when done.
func openStorage(dir string) (*filesystem.Storage, billy.Filesystem) {
	wt := osfs.New(dir)
	dot, _ := wt.Chroot(git.GitDirName)
	s := filesystem.NewStorageWithOptions(dot, cache.NewObjectLRU(storageCacheBytes), filesystem.Options{ExclusiveAccess: true, KeepDescriptors: true})
	return s, wt
}

func isRefNotFound(err error) bool {
	var nm git.NoMatchingRefSpecError
	return errors.Is(err, plumbing.ErrReferenceNotFound) || errors.As(err, &nm) ||
		strings.Contains(err.Error(), "couldn't find remote ref")
}

func (g *gitClient) fail(src plugin.MarketplaceSource, step string, err error) error {
	if rr := (*redirectRefused)(nil); errors.As(err, &rr) {
		return rr.err
	}
	hint := "check that the repository exists and that you can reach it, then retry"
	remote := RemoteURL(src, g.net)
	var idle *idleFailure
	var kh *knownhosts.KeyError
	switch {
	case errors.As(err, &idle):
		hint = idleHint(idle.e)
	case errors.Is(err, ErrTimeout):
		hint = "raise WHARF_GIT_TIMEOUT (e.g. WHARF_GIT_TIMEOUT=300s) or check the network"
	case strings.HasPrefix(remote, "file://") || filepath.IsAbs(remote):
		hint = "check that the path exists and is a git repository (git -C <path> log shows its commits)"
	case errors.As(err, &kh) || strings.Contains(err.Error(), "knownhosts") || strings.Contains(err.Error(), "known_hosts"):
		host := sshHost(remote)
		hint = "ssh checks the server's key against ~/.ssh/known_hosts (or SSH_KNOWN_HOSTS), and " + host +
			" is not there or its key changed: add it after checking its fingerprint, e.g. ssh-keyscan " + host + " >> ~/.ssh/known_hosts"
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed), errors.Is(err, transport.ErrRepositoryNotFound):
		hint = fetch.TokenHint
	}
	return &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeSource, Object: src.String(),
		Err: fmt.Errorf("git %s of %s: %w", step, remote, err), Hint: hint}
}

// redactRemote drops user info (a token) from a remote URL for display.
func redactRemote(remote string) string { return fetch.Redact(remote) }

// sshHost is the host of an ssh remote (git@host:path or ssh://host/path).
func sshHost(remote string) string {
	if u, err := url.Parse(remote); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	r := remote
	if _, after, ok := strings.Cut(r, "@"); ok {
		r = after
	}
	host, _, _ := strings.Cut(r, ":")
	if host == "" {
		return "<host>"
	}
	return host
}
