package api

import (
	"container/list"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"
)

// maxClientLimiters bounds the per-address buckets (sign-in attempts, audit
// of refusals): past it the least recently used address is forgotten, so a
// flood of addresses costs a fixed amount of memory.
const maxClientLimiters = 10000

// clientLimiters are rate-limit buckets keyed by client address, at most
// max of them, least recently used evicted first. Keys are addresses as
// the connection (or a trusted proxy) gives them, never a raw header.
type clientLimiters struct {
	mu    sync.Mutex
	max   int
	newL  func() *rate.Limiter
	order *list.List // front: most recently used; values are *clientEntry
	byKey map[string]*list.Element
}

type clientEntry struct {
	key string
	l   *rate.Limiter
	// suppressed counts the events this bucket refused since the last one
	// it let through (audit of refusals); guarded by clientLimiters.mu.
	suppressed int
}

func newClientLimiters(max int, newL func() *rate.Limiter) *clientLimiters {
	return &clientLimiters{max: max, newL: newL, order: list.New(), byKey: map[string]*list.Element{}}
}

// get returns key's bucket, creating it (and evicting the least recently
// used one when full) on first use.
func (cl *clientLimiters) get(key string) *rate.Limiter {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.entry(key).l
}

// admit takes one token from key's bucket at now. When it is granted it
// returns true and how many events were refused since the last grant.
func (cl *clientLimiters) admit(key string, now time.Time) (bool, int) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	e := cl.entry(key)
	if !e.l.AllowN(now, 1) {
		e.suppressed++
		return false, 0
	}
	n := e.suppressed
	e.suppressed = 0
	return true, n
}

// entry is get under cl.mu.
func (cl *clientLimiters) entry(key string) *clientEntry {
	if el, ok := cl.byKey[key]; ok {
		cl.order.MoveToFront(el)
		return el.Value.(*clientEntry)
	}
	for cl.order.Len() >= cl.max {
		last := cl.order.Back()
		cl.order.Remove(last)
		delete(cl.byKey, last.Value.(*clientEntry).key)
	}
	e := &clientEntry{key: key, l: cl.newL()}
	cl.byKey[key] = cl.order.PushFront(e)
	return e
}

// len is the number of buckets held.
func (cl *clientLimiters) len() int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return len(cl.byKey)
}

// ipExtractor is how both routers learn the client's address: from the
// connection, unless trusted proxies are configured; then from
// X-Forwarded-For, read right to left and only across those proxies (an
// address a client wrote into the header itself is never believed). No
// proxy is trusted implicitly, not even loopback or private ranges.
func ipExtractor(trusted []*net.IPNet) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range trusted {
		opts = append(opts, echo.TrustIPRange(n))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// clientKey normalizes the address echo extracted: an IP in its canonical
// form, so one client has one bucket however its address was spelled.
func clientKey(c echo.Context) string {
	ip := c.RealIP()
	if p := net.ParseIP(ip); p != nil {
		return p.String()
	}
	return "unparsed"
}

// ParseTrustedProxies parses --trusted-proxy values: CIDR ranges or single
// addresses.
func ParseTrustedProxies(vals []string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, v := range vals {
		if _, n, err := net.ParseCIDR(v); err == nil {
			out = append(out, n)
			continue
		}
		ip := net.ParseIP(v)
		if ip == nil {
			return nil, &proxyError{Value: v}
		}
		bits := 128
		if ip.To4() != nil {
			ip, bits = ip.To4(), 32
		}
		out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
	}
	return out, nil
}

// proxyError is a --trusted-proxy value that is neither a CIDR range nor
// an address.
type proxyError struct{ Value string }

func (e *proxyError) Error() string {
	return "trusted proxy " + strconv.Quote(e.Value) + " is neither a CIDR range (10.0.0.0/8) nor an IP address"
}
