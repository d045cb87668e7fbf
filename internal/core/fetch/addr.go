package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/wharfhq/wharf/plugin"
)

// AllowPrivateEnv names the switch that lets fetches named by a marketplace
// entry reach loopback, link-local and private addresses:
// WHARF_ALLOW_PRIVATE_SOURCES=1.
//
// A marketplace entry is written by the marketplace's author, not by the
// user: without this rule an archive or npm source could make wharf GET any
// URL on the user's machine or network (a metadata service, an admin port on
// 127.0.0.1) and, with a crafted archive, learn about it. Hosts the operator
// configured (the npm registry, the GitHub host) are trusted as they are.
const AllowPrivateEnv = "WHARF_ALLOW_PRIVATE_SOURCES"

// ErrPrivateAddress: a host is, or resolves to, a loopback, link-local or
// private address, and AllowPrivateEnv is not set.
var ErrPrivateAddress = errors.New("private network address refused")

// IsLoopback reports whether host (a name or an address, brackets allowed)
// is this machine: localhost, *.localhost, 127/8 or ::1. It is
// plugin.IsLoopbackHost, the one test of "plain http is acceptable here"
// in wharf, which a marketplace source's validation applies too.
func IsLoopback(host string) bool { return plugin.IsLoopbackHost(host) }

// PrivateKind names the class of a non-public address ("loopback",
// "private", "link-local", "unspecified", "multicast"); "" for a public one.
func PrivateKind(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsPrivate():
		return "private"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, p := range extraPrivate {
		if p.Contains(a) {
			return "private"
		}
	}
	return ""
}

// extraPrivate are ranges that are not public although netip does not
// call them private: "this network", shared address space (CGNAT), IETF
// protocol assignments, and IPv4 broadcast.
var extraPrivate = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("255.255.255.255/32"),
}

func privateErr(host string, a netip.Addr, kind string) error {
	at := ""
	if host != a.String() {
		at = " resolves to " + a.String() + ","
	}
	return fmt.Errorf("%w: host %s%s is a %s address; wharf fetches plugin sources only from public addresses unless %s=1 is set",
		ErrPrivateAddress, host, at, kind, AllowPrivateEnv)
}

// allowPrivate reports whether private addresses are allowed: the field,
// or AllowPrivateEnv=1 in the process environment.
func (c *Config) allowPrivate() bool {
	return c.AllowPrivate || strings.TrimSpace(os.Getenv(AllowPrivateEnv)) == "1"
}

// Guard checks the hosts one fetch connects to. Hosts the operator
// configured (the GitHub host, the npm registry, a proxy) are trusted.
type Guard struct {
	off     bool
	trusted sync.Map // lower-case host names
}

// Guard returns the address guard of one fetch.
func (c *Config) Guard() *Guard {
	g := &Guard{off: c.allowPrivate()}
	for _, raw := range []string{c.NPMRegistry, c.GitHubBase(), c.Proxy} {
		if u, err := url.Parse(raw); err == nil && u.Hostname() != "" {
			g.Trust(u.Hostname())
		}
	}
	return g
}

// Trust marks host as configured by the operator.
func (g *Guard) Trust(host string) {
	g.trusted.Store(strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), "."), true)
}

// Resolve returns the addresses to connect to for host, all public, or an
// error naming the first that is not. nil addresses (and no error) mean the
// host is trusted or the guard is off: connect as usual.
func (g *Guard) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	h := strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if g.off {
		return nil, nil
	}
	if _, ok := g.trusted.Load(h); ok {
		return nil, nil
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return nil, fmt.Errorf("%w: host %s is a loopback name; wharf fetches plugin sources only from public addresses unless %s=1 is set",
			ErrPrivateAddress, host, AllowPrivateEnv)
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if k := PrivateKind(a); k != "" {
			return nil, privateErr(host, a, k)
		}
		return []netip.Addr{a.Unmap()}, nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", h)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		// One private address refuses the host: a name that resolves to
		// both is how a rebinding attack starts.
		if k := PrivateKind(a); k != "" {
			return nil, privateErr(host, a, k)
		}
		out = append(out, a.Unmap())
	}
	return out, nil
}

// CheckURL refuses a URL whose host is not public (before any connection,
// and for every redirect).
func (g *Guard) CheckURL(ctx context.Context, u *url.URL) error {
	_, err := g.Resolve(ctx, u.Hostname())
	return err
}

// dial resolves addr's host, checks every address and dials a checked one
// (or addr as is when the host is trusted or the guard is off).
func (g *Guard) dial(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := g.Resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	if addrs == nil {
		return dial(ctx, network, addr)
	}
	var errs []error
	for _, a := range addrs {
		c, err := dial(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// Protect makes t connect only to the addresses the guard checked: the
// dialer resolves the host itself, checks every address and dials the
// checked address, so a DNS answer that changes between the check and the
// connection (rebinding) cannot reach a private address. A proxy is
// trusted (the target is checked before the proxy is chosen).
func (g *Guard) Protect(t *http.Transport) {
	if g.off {
		return
	}
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	if proxy := t.Proxy; proxy != nil {
		t.Proxy = func(req *http.Request) (*url.URL, error) {
			if err := g.CheckURL(req.Context(), req.URL); err != nil {
				return nil, err
			}
			u, err := proxy(req)
			if u != nil {
				g.Trust(u.Hostname())
			}
			return u, err
		}
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return g.dial(ctx, dial, network, addr)
	}
	// Each fetch builds its own transport: keep no idle connections.
	t.DisableKeepAlives = true
}
