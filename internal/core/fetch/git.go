package fetch

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/wharfhq/wharf/internal/core/lazyre"
	"github.com/wharfhq/wharf/internal/core/netidle"
	"github.com/wharfhq/wharf/internal/core/progress"
)

// init routes go-git's HTTP and HTTPS through netidle, so a git step under
// a netidle.Watch fails when its server goes silent (ssh reaches netidle
// through Git.Proxy), and through the address guard and redirect check the
// step's context carries (WithGuard, WithRedirectCheck), so git obeys the
// same rules as downloads: every connection dials a checked address, every
// redirect is checked before it is followed. This is the only place wharf
// installs go-git transports.
func init() {
	c := githttp.NewClient(&http.Client{Transport: gitTransport(), CheckRedirect: checkGitRedirect})
	client.InstallProtocol("https", c)
	client.InstallProtocol("http", c)
}

// gitTransport is netidle's transport whose dialer and proxy obey the
// guard of the request's context (none: as netidle dials). go-git clones it
// when a step names a proxy or CA bundle; the clone keeps both.
func gitTransport() *http.Transport {
	t := netidle.Transport()
	dial := t.DialContext
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if g := guardOf(ctx); g != nil {
			return g.dial(ctx, dial, network, addr)
		}
		return dial(ctx, network, addr)
	}
	if proxy := t.Proxy; proxy != nil {
		t.Proxy = func(req *http.Request) (*url.URL, error) {
			u, err := proxy(req)
			if g := guardOf(req.Context()); g != nil && u != nil && err == nil {
				// A proxy from the environment is the operator's.
				g.Trust(u.Hostname())
			}
			return u, err
		}
	}
	return t
}

// checkGitRedirect is the redirect check of git over http(s), after
// go-git's own (no https to http, redirects of the first request only): the
// target passes the URL rule and the guard of the step, and the redirect
// check of the step is asked about the repository it leads to.
func checkGitRedirect(req *http.Request, via []*http.Request) error {
	ctx := req.Context()
	if g := guardOf(ctx); g != nil {
		if _, err := CheckHTTPURL(req.URL.String()); err != nil {
			return fmt.Errorf("redirect refused: %w", err)
		}
		if err := g.CheckURL(ctx, req.URL); err != nil {
			return fmt.Errorf("redirect to %s refused: %w", Redact(req.URL.String()), err)
		}
	}
	if check := redirectCheckOf(ctx); check != nil {
		if err := check(ctx, GitRepoURL(req.URL)); err != nil {
			return err
		}
	}
	return nil
}

// GitRepoURL is the repository a request of git's smart HTTP protocol is
// for: u without user info, query and the protocol's path suffix
// (/info/refs, /git-upload-pack).
func GitRepoURL(u *url.URL) *url.URL {
	r := *u
	r.User, r.RawQuery, r.ForceQuery, r.Fragment = nil, "", false, ""
	for _, suffix := range []string{"/info/refs", "/git-upload-pack", "/git-receive-pack"} {
		r.Path = strings.TrimSuffix(r.Path, suffix)
	}
	r.RawPath = ""
	return &r
}

// RedirectCheck decides whether a fetch may follow a redirect to u (for
// git, the repository the redirect leads to; see GitRepoURL); a non-nil
// error refuses the redirect and is the fetch's error.
type RedirectCheck func(ctx context.Context, u *url.URL) error

type guardKey struct{}

type redirectKey struct{}

// WithGuard returns ctx under which git over http(s) connects only where g
// allows: each connection dials an address g checked and each redirect is
// refused unless g allows its host. Downloads (Open) build their own guard.
func WithGuard(ctx context.Context, g *Guard) context.Context {
	return context.WithValue(ctx, guardKey{}, g)
}

func guardOf(ctx context.Context) *Guard {
	g, _ := ctx.Value(guardKey{}).(*Guard)
	return g
}

// WithRedirectCheck returns ctx under which every redirect of a git step or
// a download is passed to check before it is followed (after any check ctx
// already carries).
func WithRedirectCheck(ctx context.Context, check RedirectCheck) context.Context {
	if prev := redirectCheckOf(ctx); prev != nil {
		next := check
		check = func(ctx context.Context, u *url.URL) error {
			if err := prev(ctx, u); err != nil {
				return err
			}
			return next(ctx, u)
		}
	}
	return context.WithValue(ctx, redirectKey{}, check)
}

func redirectCheckOf(ctx context.Context) RedirectCheck {
	c, _ := ctx.Value(redirectKey{}).(RedirectCheck)
	return c
}

// Git is what one git network step against a remote needs: pass Auth,
// Proxy and CABundle to go-git's List, Clone and Fetch options.
type Git struct {
	Auth     transport.AuthMethod
	Proxy    transport.ProxyOptions
	CABundle []byte
}

// Git returns the options of a git step on remote under ctx (a Step
// context): the credential rule's auth, ssh dialed under the idle limit
// (through ALL_PROXY when set), https through the configured proxy.
func (c *Config) Git(ctx context.Context, remote string) (*Git, error) {
	auth, err := c.GitAuth(remote)
	if err != nil {
		return nil, err
	}
	g := &Git{Auth: auth, CABundle: c.CABundle}
	if ep, err := transport.NewEndpoint(remote); err == nil {
		switch ep.Protocol {
		case "ssh":
			// go-git's ssh transport dials through golang.org/x/net/proxy:
			// this makes it dial under the step's idle limit (a server that
			// accepts and never speaks would otherwise hold the handshake).
			g.Proxy.URL = netidle.ProxyURL(ctx)
		case "https", "http":
			if c.Proxy != "" {
				g.Proxy.URL = c.Proxy
			}
		}
	}
	return g, nil
}

var scpRE = lazyre.New(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\\\x00-\x1f]+$`)

// IsSCP reports whether raw is an scp-like git address (git@host:path).
func IsSCP(raw string) bool {
	return scpRE.MatchString(raw) && !strings.Contains(raw, "://")
}

// GitHost is the host of an https://, ssh:// or scp-like git URL; "" for
// file:// and anything else.
func GitHost(raw string) string {
	if IsSCP(raw) {
		head, _, _ := strings.Cut(raw, ":")
		return head[strings.LastIndex(head, "@")+1:]
	}
	if u, err := url.Parse(raw); err == nil && u.Scheme != "file" {
		return u.Hostname()
	}
	return ""
}

// CheckGitHost refuses a git URL named by a marketplace entry whose host is
// not public (see AllowPrivateEnv). git dials by itself, so this is checked
// once, before the clone; the configured GitHub host is trusted.
func (c *Config) CheckGitHost(ctx context.Context, raw string) error {
	host := GitHost(raw)
	if host == "" {
		return nil
	}
	_, err := c.Guard().Resolve(ctx, host)
	return err
}

// Progress returns where a git step's progress goes: a bar on term (a
// terminal), else plain receives git's raw text, else nothing. Call done
// when the transfer is over.
func Progress(ctx context.Context, term, plain io.Writer, desc string) (w io.Writer, done func()) {
	if term != nil {
		b := progress.NewBar(term, desc)
		netidle.OnRead(ctx, b.Add)
		return b, b.Finish
	}
	if plain != nil {
		return plain, func() {}
	}
	return nil, func() {}
}
