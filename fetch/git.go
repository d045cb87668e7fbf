package fetch

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/wharfhq/wharf/internal/lazyre"
	"github.com/wharfhq/wharf/netidle"
)

// init routes go-git's HTTP and HTTPS through netidle, so a git step under
// a netidle.Watch fails when its server goes silent (ssh reaches netidle
// through Git.Proxy). This is the only place wharf installs go-git
// transports.
func init() {
	c := githttp.NewClient(&http.Client{Transport: netidle.Transport()})
	client.InstallProtocol("https", c)
	client.InstallProtocol("http", c)
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
		b := netidle.NewBar(term, desc)
		b.Track(ctx)
		return b, b.Finish
	}
	if plain != nil {
		return plain, func() {}
	}
	return nil, func() {}
}
