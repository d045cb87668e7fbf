package marketplace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/wharfhq/wharf/netidle"
	"github.com/wharfhq/wharf/plugin"
)

// DefaultGitHubHost is where owner/repo shorthand points unless
// WHARF_GITHUB_HOST names a GitHub Enterprise host.
const DefaultGitHubHost = "github.com"

// gitClient runs the git network steps of one command. Every network step
// gets its own deadline, so a stalled server fails with a clear timeout.
type gitClient struct {
	opts *Options
	// progress receives git's raw progress text; bar, a terminal, gets a
	// progress bar instead. Both nil: silent.
	progress io.Writer
	bar      io.Writer
}

// RemoteURL returns the URL git fetches for a git-backed source.
func RemoteURL(src Source, getenv func(string) string) string {
	if src.Kind != KindGitHub {
		return src.URL
	}
	host := githubHost(getenv)
	scheme := "https"
	if h, _, _ := strings.Cut(host, ":"); isLoopback(h) {
		scheme = "http" // a local GitHub stand-in in tests
	}
	return scheme + "://" + host + "/" + src.Repo + ".git"
}

func githubHost(getenv func(string) string) string {
	if h := strings.TrimSpace(getenv("WHARF_GITHUB_HOST")); h != "" {
		return h
	}
	return DefaultGitHubHost
}

// Credential is what authenticates a git fetch over HTTPS: the token's
// source variable (for messages) and the basic-auth pair git hosts expect.
type Credential struct {
	EnvVar   string
	Username string
	Token    string
}

// HTTPSCredential picks the token for a remote URL from the environment:
// GITHUB_TOKEN, then GH_TOKEN, for the GitHub host (github.com or
// WHARF_GITHUB_HOST); GITLAB_TOKEN for gitlab.com and hosts named gitlab.*.
// Other hosts, and anything that is not http(s), get no token, so a token
// is never sent where it does not belong.
func HTTPSCredential(remote string, getenv func(string) string) (Credential, bool) {
	u, err := url.Parse(remote)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return Credential{}, false
	}
	host := strings.ToLower(u.Host)
	if host == strings.ToLower(githubHost(getenv)) || host == DefaultGitHubHost {
		for _, v := range []string{"GITHUB_TOKEN", "GH_TOKEN"} {
			if t := strings.TrimSpace(getenv(v)); t != "" {
				return Credential{EnvVar: v, Username: "x-access-token", Token: t}, true
			}
		}
		return Credential{}, false
	}
	hn := strings.ToLower(u.Hostname())
	if hn == "gitlab.com" || strings.HasPrefix(hn, "gitlab.") {
		if t := strings.TrimSpace(getenv("GITLAB_TOKEN")); t != "" {
			return Credential{EnvVar: "GITLAB_TOKEN", Username: "oauth2", Token: t}, true
		}
	}
	return Credential{}, false
}

func (g *gitClient) auth(remote string) (transport.AuthMethod, error) {
	if c, ok := HTTPSCredential(remote, g.opts.getenv); ok {
		return &githttp.BasicAuth{Username: c.Username, Password: c.Token}, nil
	}
	ep, err := transport.NewEndpoint(remote)
	if err != nil {
		return nil, err
	}
	if ep.Protocol != "ssh" {
		return nil, nil
	}
	user := ep.User
	if user == "" {
		user = "git"
	}
	if g.opts.getenv("SSH_AUTH_SOCK") != "" {
		a, err := gitssh.NewSSHAgentAuth(user)
		if err == nil {
			return a, nil
		}
	}
	home, _ := os.UserHomeDir()
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

// clone makes a shallow, single-branch, tag-less clone of src into dir
// (which must not exist yet) and returns the checked-out commit.
func (g *gitClient) clone(ctx context.Context, src Source, dir string) (string, error) {
	remote := RemoteURL(src, g.opts.getenv)
	auth, err := g.auth(remote)
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
		repo, err := g.withTimeout(ctx, remote, func(ctx context.Context, progress io.Writer) (*git.Repository, error) {
			s, wt := openStorage(dir)
			defer s.Close()
			return git.CloneContext(ctx, s, wt, &git.CloneOptions{
				URL:           remote,
				Auth:          auth,
				ReferenceName: ref,
				SingleBranch:  true,
				Depth:         1,
				Tags:          git.NoTags,
				Progress:      progress,
				ProxyOptions:  proxyOptions(ctx, remote),
			})
		})
		if err != nil {
			lastErr = err
			if isRefNotFound(err) {
				continue
			}
			return "", g.fail(src, "clone", err)
		}
		head, err := repo.Head()
		if err != nil {
			return "", g.fail(src, "read HEAD of the clone", err)
		}
		return head.Hash().String(), nil
	}
	return "", g.fail(src, "clone", fmt.Errorf("no branch or tag named %q: %w", src.Ref, lastErr))
}

func (g *gitClient) clonePinned(ctx context.Context, src Source, remote string, auth transport.AuthMethod, dir, sha string) (string, error) {
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
	wt, err := repo.Worktree()
	if err == nil {
		err = wt.Checkout(&git.CheckoutOptions{Hash: plumbing.NewHash(sha), Force: true})
	}
	if err != nil {
		return "", g.fail(src, "check out "+sha, err)
	}
	return sha, nil
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
			ProxyOptions: proxyOptions(ctx, remote),
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
func (g *gitClient) update(ctx context.Context, src Source, dir string) (before, after string, err error) {
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
	remote := RemoteURL(src, g.opts.getenv)
	if err := repo.DeleteRemote(git.DefaultRemoteName); err == nil || errors.Is(err, git.ErrRemoteNotFound) {
		// The source's URL may have moved (WHARF_GITHUB_HOST); always fetch
		// from what the source says now.
		_, err = repo.CreateRemote(&config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{remote}})
		if err != nil {
			return before, "", g.fail(src, "configure remote", err)
		}
	}
	auth, err := g.auth(remote)
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
	if err := g.resetTo(repo, target); err != nil {
		return before, "", g.fail(src, "reset to "+target.String(), err)
	}
	return before, target.String(), nil
}

// fetchTracked fetches the branch or tag the clone follows and returns its
// new commit.
func (g *gitClient) fetchTracked(ctx context.Context, src Source, repo *git.Repository, auth transport.AuthMethod, head *plumbing.Reference) (plumbing.Hash, error) {
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
		if err := g.fetch(ctx, repo, auth, 1, spec); err != nil {
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

// init routes go-git's HTTP and HTTPS through netidle, so every git
// network step under a netidle.Watch fails when its server goes silent.
// ssh goes through netidle by proxyOptions.
func init() {
	c := githttp.NewClient(&http.Client{Transport: netidle.Transport()})
	client.InstallProtocol("https", c)
	client.InstallProtocol("http", c)
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

// proxyOptions makes go-git's ssh transport, which dials through
// golang.org/x/net/proxy, dial remote under the step's netidle.Watch: an
// ssh server that accepts and never speaks fails after the idle limit
// instead of holding the handshake forever. Other protocols get none
// (HTTP(S) is routed by init; a proxy there would replace that).
func proxyOptions(ctx context.Context, remote string) transport.ProxyOptions {
	if ep, err := transport.NewEndpoint(remote); err == nil && ep.Protocol == "ssh" {
		return transport.ProxyOptions{URL: netidle.ProxyURL(ctx)}
	}
	return transport.ProxyOptions{}
}

// withTimeout runs one git network step on remote under the overall and
// the idle limit, with a progress bar on a terminal.
func (g *gitClient) withTimeout(ctx context.Context, remote string, fn func(context.Context, io.Writer) (*git.Repository, error)) (*git.Repository, error) {
	ctx, cancel := context.WithTimeout(ctx, g.opts.timeout())
	defer cancel()
	ctx, stop := netidle.Watch(ctx, g.opts.idle())
	defer stop()
	progress := g.progress
	if g.bar != nil {
		b := netidle.NewBar(g.bar, "fetching "+redactRemote(remote))
		b.Track(ctx)
		defer b.Finish()
		progress = b
	}
	r, err := fn(ctx, progress)
	if e := netidle.Cause(ctx); err != nil && e != nil {
		return nil, &idleFailure{e: e, err: idleErr(e, err)}
	}
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("%w after %s (raise WHARF_GIT_TIMEOUT if the network is slow): %v", ErrTimeout, g.opts.timeout(), err)
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

// openStorage returns the object storage and work tree of a clone at dir.
// wharf is the only writer of its clones while it holds the store lock, so
// the storage may cache pack indexes and keep pack files open; without that,
// go-git reopens the pack for every object it checks out. Close the storage
// when done.
func openStorage(dir string) (*filesystem.Storage, billy.Filesystem) {
	wt := osfs.New(dir)
	dot, _ := wt.Chroot(git.GitDirName)
	s := filesystem.NewStorageWithOptions(dot, cache.NewObjectLRUDefault(), filesystem.Options{ExclusiveAccess: true, KeepDescriptors: true})
	return s, wt
}

func isRefNotFound(err error) bool {
	var nm git.NoMatchingRefSpecError
	return errors.Is(err, plumbing.ErrReferenceNotFound) || errors.As(err, &nm) ||
		strings.Contains(err.Error(), "couldn't find remote ref")
}

func (g *gitClient) fail(src Source, step string, err error) error {
	hint := "check that the repository exists and that you can reach it, then retry"
	remote := RemoteURL(src, g.opts.getenv)
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
		hint = "if the repository is private, set GITHUB_TOKEN (or GH_TOKEN / GITLAB_TOKEN) or use an ssh:// URL with your SSH key"
	}
	return &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeSource, Object: src.String(),
		Err: fmt.Errorf("git %s of %s: %w", step, remote, err), Hint: hint}
}

// redactRemote drops user info (a token) from a remote URL for display.
func redactRemote(remote string) string {
	if u, err := url.Parse(remote); err == nil && u.User != nil && u.Scheme != "" {
		u.User = nil
		return u.String()
	}
	return remote
}

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
