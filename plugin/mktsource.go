package plugin

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultGitHubHost is where a {"source":"github"} marketplace source points
// unless a GitHub Enterprise host is configured (WHARF_GITHUB_HOST).
const DefaultGitHubHost = "github.com"

// The kinds of a canonical marketplace source: what is fetched, whatever
// spelling named it.
const (
	CanonGit   = "git"   // a git repository on a remote host (github, git)
	CanonURL   = "url"   // a marketplace.json served over HTTP(S)
	CanonLocal = "local" // a path on this machine (directory, file, file:// git)
)

// CanonicalSource is the one form of a marketplace source that allow and
// block decisions compare. Two spellings of one source have the same
// CanonicalSource:
//
//   - git: the scheme (https, http, ssh, git, scp-like user@host:path), the
//     userinfo, a default port, a trailing ".git", "/" and doubled slashes
//     do not count; the host is lower case; on a GitHub host (github.com or
//     the configured GitHub Enterprise host) the owner/repo path is lower
//     case, as GitHub compares it. {"source":"github","repo":"o/r"} is the
//     git repository o/r on the GitHub host.
//   - url: lower-case host, default port dropped, userinfo dropped, path
//     cleaned.
//   - local: the absolute path with symlinks resolved (when a resolver is
//     given), and a marketplace.json file inside a marketplace directory
//     (dir/marketplace.json, dir/.claude-plugin/marketplace.json) maps to
//     the directory.
type CanonicalSource struct {
	Kind  string // CanonGit, CanonURL or CanonLocal
	Host  string // lower-case host name (no port, no brackets); "" for local
	Port  string // a port other than the scheme's default; "" otherwise
	Path  string // git: "owner/repo"; url: "/path"; local: the absolute path
	Query string // url only: the raw query
	Ref   string // git ref (git and local git sources)
	Sub   string // git only: the marketplace's directory inside the repository
	// GitHub reports a repository or URL on a GitHub host (its owner is
	// the first element of Path).
	GitHub bool
}

// CanonOptions says how to read hosts and local paths.
type CanonOptions struct {
	// GitHubHost is the host {"source":"github"} points at: "host[:port]"
	// or a base URL such as "https://ghe.corp.example:8443"; "" means
	// github.com. Paths on it and on github.com compare case-insensitively.
	GitHubHost string
	// Resolve makes a local path absolute and resolves its symlinks (see
	// ResolvePath). nil leaves the path as written, cleaned.
	Resolve func(string) string
}

// githubHost is the GitHub host's name and its port when not the default
// of its scheme; github.com when none is set or the setting does not read.
func (o CanonOptions) githubHost() (host, port string) {
	h, p, ok := GitHubHostPort(o.GitHubHost)
	if !ok {
		return DefaultGitHubHost, ""
	}
	return h, p
}

// GitHubHostPort reads a GitHub host setting ("host[:port]" or a base URL
// such as "https://ghe.corp.example:8443") as a canonical host name (lower
// case, an alias of github.com mapped to it) and the port when it is not
// the default of the URL's scheme. "" is github.com; ok is false for a
// setting that names no valid host.
func GitHubHostPort(setting string) (host, port string, ok bool) {
	v := strings.TrimRight(strings.TrimSpace(setting), "/")
	if v == "" {
		return DefaultGitHubHost, "", true
	}
	if !strings.Contains(v, "://") {
		v = "https://" + v
	}
	u, err := url.Parse(v)
	if err != nil || u.User != nil || (u.Path != "" && u.Path != "/") {
		return "", "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return "", "", false
	}
	host, port, err = canonHost(u, scheme)
	if err != nil {
		return "", "", false
	}
	return host, port, true
}

func (o CanonOptions) isGitHub(host string) bool {
	h, _ := o.githubHost()
	return host == DefaultGitHubHost || host == h
}

// githubAliases are other names of github.com's git service: the web
// host's www name, and ssh.github.com, which serves ssh on port 443 for
// networks that block port 22. A source on them is the same repository.
var githubAliases = map[string]string{"www.github.com": DefaultGitHubHost, "ssh.github.com": DefaultGitHubHost}

// TypeSourceCanonical is the error type of a marketplace source that has
// no canonical form (no host, an unknown kind, a control character).
const TypeSourceCanonical = "source-not-canonical"

// Canonical returns the canonical form of s, the one allow and block
// decisions compare. It touches neither network nor disk, except through
// o.Resolve for local paths. Headers take no part: they are credentials,
// not identity.
func (s MarketplaceSource) Canonical(o CanonOptions) (CanonicalSource, error) {
	kind, repo, rawURL, ref, p := s.Kind, s.Repo, s.URL, s.Ref, s.Path
	obj := string(kind) + " source"
	bad := func(format string, args ...any) (CanonicalSource, error) {
		return CanonicalSource{}, Errorf(LayerIntent, TypeSourceCanonical, obj,
			"write the source as owner/repo, an https://, ssh:// or git@host:path URL, or a local path", format, args...)
	}
	for _, f := range []string{repo, rawURL, ref, p} {
		if strings.ContainsFunc(f, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return bad("a field contains a control character")
		}
	}
	ref = strings.TrimSpace(ref)
	switch kind {
	case MktGitHub:
		r := strings.Trim(strings.TrimSpace(repo), "/")
		owner, name, ok := strings.Cut(r, "/")
		if !ok || owner == "" || name == "" {
			return bad("repo %q is not owner/repo", repo)
		}
		host, port := o.githubHost()
		c := CanonicalSource{Kind: CanonGit, Host: host, Port: port, GitHub: true, Ref: ref, Sub: canonSub(p)}
		c.Path = canonRepoPath(r, true)
		if !strings.Contains(c.Path, "/") {
			return bad("repo %q is not owner/repo", repo)
		}
		return c, nil
	case MktGit:
		return canonGitURL(strings.TrimSpace(rawURL), ref, p, o, bad)
	case MktURL:
		u, err := url.Parse(strings.TrimSpace(rawURL))
		if err != nil {
			return bad("url %q is not a URL: %v", rawURL, err)
		}
		scheme := strings.ToLower(u.Scheme)
		if scheme != "http" && scheme != "https" {
			return bad("url %q must be http:// or https://", rawURL)
		}
		host, port, err := canonHost(u, scheme)
		if err != nil {
			return bad("url %q: %v", rawURL, err)
		}
		up := u.Path
		if up == "" {
			up = "/"
		}
		return CanonicalSource{Kind: CanonURL, Host: host, Port: port, Path: path.Clean("/" + up), Query: u.RawQuery, GitHub: o.isGitHub(host)}, nil
	case MktDirectory, MktFile:
		if p == "" {
			return bad("%s source has no path", kind)
		}
		return CanonicalSource{Kind: CanonLocal, Path: canonLocal(p, o)}, nil
	}
	return bad("unknown marketplace source kind %q", kind)
}

// canonGitURL reads https://, http://, ssh://, git://, file:// and scp-like
// git URLs.
func canonGitURL(raw, ref, sub string, o CanonOptions, bad func(string, ...any) (CanonicalSource, error)) (CanonicalSource, error) {
	if raw == "" {
		return bad("git source has no url")
	}
	var host, port, p string
	if i := strings.Index(raw, "://"); i > 0 && !strings.ContainsAny(raw[:i], "/@:") {
		u, err := url.Parse(raw)
		if err != nil {
			return bad("url %q is not a URL: %v", raw, err)
		}
		scheme := strings.ToLower(u.Scheme)
		switch scheme {
		case "https", "http", "ssh", "git", "git+ssh", "ssh+git":
		case "file":
			if u.Path == "" {
				return bad("file URL %q has no path", raw)
			}
			return CanonicalSource{Kind: CanonLocal, Path: canonLocal(u.Path, o), Ref: ref}, nil
		default:
			return bad("url %q has an unsupported scheme %q", raw, u.Scheme)
		}
		if host, port, err = canonHost(u, scheme); err != nil {
			return bad("url %q: %v", raw, err)
		}
		p = u.Path
	} else {
		// scp-like: [user@]host:path. A colon after a slash is a local path.
		head, rest, ok := strings.Cut(raw, ":")
		if !ok || strings.Contains(head, "/") {
			return bad("url %q is neither a URL nor user@host:path", raw)
		}
		if at := strings.LastIndex(head, "@"); at >= 0 {
			head = head[at+1:]
		}
		host = strings.TrimRight(strings.ToLower(strings.Trim(head, "[]")), ".")
		if !validHost(host) {
			return bad("url %q has no valid host", raw)
		}
		if gh, ok := githubAliases[host]; ok {
			host = gh
		}
		p = rest
	}
	gh := o.isGitHub(host)
	c := CanonicalSource{Kind: CanonGit, Host: host, Port: port, GitHub: gh, Ref: ref, Sub: canonSub(sub)}
	c.Path = canonRepoPath(p, gh)
	if c.Path == "" {
		return bad("url %q names no repository", raw)
	}
	return c, nil
}

// defaultPorts are the ports a URL of each scheme uses when it names none.
var defaultPorts = map[string]string{"https": "443", "http": "80", "ssh": "22", "git+ssh": "22", "ssh+git": "22", "git": "9418"}

func canonHost(u *url.URL, scheme string) (host, port string, err error) {
	host = strings.TrimRight(strings.ToLower(u.Hostname()), ".")
	if !validHost(host) {
		return "", "", fmt.Errorf("no valid host")
	}
	port = u.Port()
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n <= 0 || n > 65535 {
			return "", "", fmt.Errorf("port %q is not a port number", port)
		}
		port = strconv.Itoa(n)
	}
	if port == defaultPorts[scheme] {
		port = ""
	}
	if gh, ok := githubAliases[host]; ok {
		// ssh.github.com's ssh port is 443: that is its default.
		if host == "ssh.github.com" && port == "443" && scheme != "https" && scheme != "http" {
			port = ""
		}
		host = gh
	}
	return host, port, nil
}

// validHost accepts DNS names and IP literals: letters, digits, '.', '-',
// '_' and (IPv6) ':'.
func validHost(h string) bool {
	if h == "" || h == "." {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' || c == ':') {
			return false
		}
	}
	return true
}

// canonRepoPath cleans a repository path: no leading or trailing slash, no
// doubled slashes, no trailing ".git"; lower case on GitHub.
func canonRepoPath(p string, github bool) string {
	for {
		p = strings.TrimPrefix(path.Clean("/"+p), "/")
		if len(p) >= 4 && strings.EqualFold(p[len(p)-4:], ".git") {
			p = p[:len(p)-4]
			continue
		}
		break
	}
	if github {
		p = strings.ToLower(p)
	}
	return p
}

// canonSub cleans the marketplace's path inside a repository; a
// marketplace.json file maps to the directory it describes.
func canonSub(p string) string {
	if p == "" {
		return ""
	}
	p = strings.TrimPrefix(path.Clean("/"+filepath.ToSlash(p)), "/")
	p = manifestDir(p, path.Base, path.Dir)
	if p == "." || p == "/" {
		return ""
	}
	return strings.TrimPrefix(p, "/")
}

// manifestDir strips a trailing "marketplace.json" and ".claude-plugin"
// (repeatedly, so that the result is stable).
func manifestDir(p string, base, dir func(string) string) string {
	for p != "" {
		b := base(p)
		if !strings.EqualFold(b, "marketplace.json") && !strings.EqualFold(b, ".claude-plugin") {
			return p
		}
		d := dir(p)
		if d == p {
			return p
		}
		p = d
	}
	return p
}

func canonLocal(p string, o CanonOptions) string {
	if o.Resolve != nil {
		p = o.Resolve(p)
	} else {
		p = filepath.Clean(p)
	}
	p = manifestDir(p, filepath.Base, filepath.Dir)
	return filepath.ToSlash(p)
}

// ResolvePath returns p absolute, cleaned, with every symlink resolved. A
// path that does not exist (yet) is resolved as far as it does: its longest
// existing prefix is resolved and the rest appended, so a link to a
// directory still maps to that directory.
func ResolvePath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		abs = filepath.Clean(p)
	}
	cur, rest := abs, ""
	for {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			if rest == "" {
				return r
			}
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// HostPort is the host with its non-default port, as a URL writes it.
func (c CanonicalSource) HostPort() string {
	if c.Port == "" {
		if strings.Contains(c.Host, ":") {
			return "[" + c.Host + "]"
		}
		return c.Host
	}
	return net.JoinHostPort(c.Host, c.Port)
}

// Key is the exact identity of the source: two sources with the same Key
// are the same marketplace.
func (c CanonicalSource) Key() string {
	var id string
	switch c.Kind {
	case CanonGit:
		id = c.HostPort() + "/" + c.Path
	case CanonURL:
		id = c.HostPort() + c.Path
		if c.Query != "" {
			id += "?" + c.Query
		}
	default:
		id = c.Path
	}
	return strconv.Quote(c.Kind) + " " + strconv.Quote(id) + " " + strconv.Quote(c.Ref) + " " + strconv.Quote(c.Sub)
}

// RepoKey is the identity of what a blocklist entry names, looser than Key:
// kind, host and path (lower case), without port, ref or subdirectory. A
// block matches every source with the same RepoKey whose ref and
// subdirectory it covers (see Covers).
func (c CanonicalSource) RepoKey() string {
	id := c.Path
	if c.Kind != CanonLocal {
		id = c.Host + "/" + strings.ToLower(strings.TrimPrefix(c.Path, "/"))
		if c.Query != "" {
			id += "?" + c.Query
		}
	}
	return c.Kind + " " + id
}

// Covers reports whether a block of c extends to o, given the same RepoKey:
// an entry without a ref covers every ref, one without a subdirectory
// covers every subdirectory.
func (c CanonicalSource) Covers(o CanonicalSource) bool {
	if c.Ref != "" && c.Ref != o.Ref {
		return false
	}
	return c.Sub == "" || c.Sub == o.Sub || strings.HasPrefix(o.Sub, c.Sub+"/")
}

// Owner is the lower-case owner of a repository on a GitHub host (or of a
// URL there: its first path element); "" for any other source.
func (c CanonicalSource) Owner() string {
	if c.Kind == CanonLocal || !c.GitHub {
		return ""
	}
	o, _, _ := strings.Cut(strings.TrimPrefix(c.Path, "/"), "/")
	return strings.ToLower(o)
}

// Source returns a marketplace source whose canonical form is c again.
func (c CanonicalSource) Source() MarketplaceSource {
	switch c.Kind {
	case CanonGit:
		u := url.URL{Scheme: "https", Host: c.HostPort(), Path: "/" + c.Path}
		if c.Port == defaultPorts["https"] {
			u.Scheme = "ssh"
		}
		return MarketplaceSource{Kind: MktGit, URL: u.String(), Ref: c.Ref, Path: c.Sub}
	case CanonURL:
		u := url.URL{Scheme: "https", Host: c.HostPort(), Path: c.Path, RawQuery: c.Query}
		if c.Port == defaultPorts["https"] {
			u.Scheme = "http"
		}
		return MarketplaceSource{Kind: MktURL, URL: u.String()}
	case CanonLocal:
		if c.Ref != "" {
			u := url.URL{Scheme: "file", Path: c.Path}
			return MarketplaceSource{Kind: MktGit, URL: u.String(), Ref: c.Ref}
		}
		return MarketplaceSource{Kind: MktDirectory, Path: c.Path}
	}
	return MarketplaceSource{}
}
