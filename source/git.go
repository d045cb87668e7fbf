package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/wharfhq/wharf/netidle"
	"github.com/wharfhq/wharf/plugin"
)

var (
	ownerRepoRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._-]+$`)
	shaRE       = regexp.MustCompile(`^[0-9a-fA-F]{40}$`)
	scpRE       = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\\\x00-\x1f]+$`)
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
		raw, configured = f.githubURL(s.Repo), true
	case plugin.SourceURL, plugin.SourceGitSubdir:
		raw = s.URL
		if raw == "" {
			raw = s.Repo
		}
		if ownerRepoRE.MatchString(raw) && !strings.Contains(raw, "..") {
			raw, configured = f.githubURL(raw), true
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
		if host := gitHost(raw); host != "" {
			if _, err := f.guard().resolve(ctx, host); err != nil {
				return "", "", fail(req, "use a repository on a public host, or set "+AllowPrivateEnv+"=1 to allow private ones", err)
			}
		}
	}
	return raw, sub, nil
}

// gitHost is the host of an https://, ssh:// or scp-like git URL; "" for
// file:// and anything else.
func gitHost(raw string) string {
	if scpRE.MatchString(raw) && !strings.Contains(raw, "://") {
		head, _, _ := strings.Cut(raw, ":")
		return head[strings.LastIndex(head, "@")+1:]
	}
	if u, err := url.Parse(raw); err == nil && u.Scheme != "file" {
		return u.Hostname()
	}
	return ""
}

func (f *Fetcher) githubURL(repo string) string {
	base := f.GitHubBaseURL
	if base == "" {
		base = DefaultGitHubBaseURL
	}
	return strings.TrimRight(base, "/") + "/" + strings.TrimSuffix(repo, ".git") + ".git"
}

func (f *Fetcher) checkGitURL(raw string) error {
	if raw == "" {
		return fmt.Errorf("%w: empty git URL", ErrUnsupported)
	}
	if scpRE.MatchString(raw) && !strings.Contains(raw, "://") {
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
		if isLoopback(u.Hostname()) {
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

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redactURL drops user info (tokens) from a URL for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}

// gitAuth returns token auth for https/http git URLs from GITHUB_TOKEN /
// GH_TOKEN (GitHub, or the configured GitHub base) or GITLAB_TOKEN (hosts
// named gitlab). A token is only ever sent to the host it belongs to.
//
// Over ssh without an agent (SSH_AUTH_SOCK), it is the first of
// ~/.ssh/id_ed25519, id_ecdsa and id_rsa, as for git marketplaces; with an
// agent, go-git asks the agent.
func (f *Fetcher) gitAuth(raw string) (transport.AuthMethod, error) {
	if ep, err := transport.NewEndpoint(raw); err == nil && ep.Protocol == "ssh" {
		return f.sshKeyAuth(ep)
	}
	return f.tokenAuth(raw), nil
}

func (f *Fetcher) sshKeyAuth(ep *transport.Endpoint) (transport.AuthMethod, error) {
	if f.getenv("SSH_AUTH_SOCK") != "" {
		return nil, nil
	}
	user := ep.User
	if user == "" {
		user = "git"
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, nil
	}
	for _, k := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
		p := filepath.Join(home, ".ssh", k)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		a, err := gitssh.NewPublicKeysFromFile(user, p, "")
		if err != nil {
			return nil, fmt.Errorf("ssh key %s: %w", p, err)
		}
		return a, nil
	}
	return nil, nil
}

func (f *Fetcher) tokenAuth(raw string) transport.AuthMethod {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return nil
	}
	host := strings.ToLower(u.Hostname())
	gh := "github.com"
	if f.GitHubBaseURL != "" {
		if b, err := url.Parse(f.GitHubBaseURL); err == nil {
			gh = strings.ToLower(b.Hostname())
		}
	}
	switch {
	case host == gh || host == "github.com":
		tok := f.getenv("GITHUB_TOKEN")
		if tok == "" {
			tok = f.getenv("GH_TOKEN")
		}
		if tok != "" {
			return &githttp.BasicAuth{Username: "x-access-token", Password: tok}
		}
	case strings.Contains(host, "gitlab"):
		if tok := f.getenv("GITLAB_TOKEN"); tok != "" {
			return &githttp.BasicAuth{Username: "oauth2", Password: tok}
		}
	}
	return nil
}

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
	ctx, cancel := context.WithTimeout(ctx, f.timeout())
	defer cancel()
	ctx, stop := netidle.Watch(ctx, f.idle())
	defer stop()

	auth, err := f.gitAuth(rawURL)
	if err != nil {
		return nil, fail(req, "a passphrase-protected key needs ssh-agent: run ssh-add", err)
	}
	var prog io.Writer
	var bar *netidle.Bar
	switch {
	case f.ProgressBar != nil:
		bar = netidle.NewBar(f.ProgressBar, "fetching "+redactURL(rawURL))
		bar.Track(ctx)
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
	// go-git's ssh transport dials through golang.org/x/net/proxy: this
	// makes it dial under the step's idle limit (a server that accepts
	// and never speaks would otherwise hold the handshake forever).
	var proxyOpts transport.ProxyOptions
	if ep, err := transport.NewEndpoint(rawURL); err == nil && ep.Protocol == "ssh" {
		proxyOpts.URL = netidle.ProxyURL(ctx)
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
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: auth, ProxyOptions: proxyOpts})
	if err != nil {
		return nil, f.gitErr(ctx, req, rawURL, err)
	}
	fetch := func(spec string, depth int, tags git.TagMode) error {
		err := remote.FetchContext(ctx, &git.FetchOptions{
			RefSpecs: []config.RefSpec{config.RefSpec(spec)},
			Depth:    depth, Auth: auth, Tags: tags, Progress: prog, Force: true,
			ProxyOptions: proxyOpts,
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
			err = fetch("+"+tip.String()+":"+wharfPinRef, 1, git.NoTags)
		} else {
			// Servers only serve a non-tip commit shallowly when they allow
			// it; otherwise fall back to a full fetch of branches and tags.
			err = fetch(want.String()+":"+wharfPinRef, 1, git.NoTags)
			if err != nil {
				if ctx.Err() != nil {
					return nil, f.gitErr(ctx, req, rawURL, err)
				}
				note("%s: commit %s not fetchable shallowly (%v); fetching full history\n", req.Plugin, want, err)
				err = fetch("+refs/heads/*:refs/wharf/heads/*", 0, git.NoTags)
				if err == nil {
					err = fetch("+refs/tags/*:refs/wharf/tags/*", 0, git.NoTags)
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
		err = fetch("+"+name.String()+":"+wharfPinRef, 1, git.NoTags)
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

// init routes go-git's HTTP and HTTPS through netidle, so a git fetch
// under a netidle.Watch fails when its server goes silent (ssh goes
// through netidle by its ProxyOptions, in fetchGit).
func init() {
	c := githttp.NewClient(&http.Client{Transport: netidle.Transport()})
	client.InstallProtocol("https", c)
	client.InstallProtocol("http", c)
}

func (f *Fetcher) gitErr(ctx context.Context, req *Request, rawURL string, err error) error {
	if e := netidle.Cause(ctx); e != nil {
		return failf(req, fmt.Sprintf("check that %s is up, or raise WHARF_NET_IDLE_TIMEOUT (config net-idle-timeout, now %s) if it is only slow", e.Host, e.Idle),
			"git %s: %w", redactURL(rawURL), idleErr(e, err))
	}
	if ctx.Err() != nil {
		return failf(req, "raise WHARF_GIT_TIMEOUT or check the network", "git %s: timed out after %s: %w", redactURL(rawURL), f.timeout(), err)
	}
	switch {
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return failf(req, "check the repository URL", "%w: repository %s", ErrNotFound, redactURL(rawURL))
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return failf(req, "set GITHUB_TOKEN (or GH_TOKEN / GITLAB_TOKEN) to a token that can read the repository",
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
