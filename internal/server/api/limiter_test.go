package api

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// signinFlood posts n sign-in forms, each with a random X-Forwarded-For,
// and returns how many were not refused with 429.
func signinFlood(t *testing.T, base string, n int, xff func(i int) string) int {
	t.Helper()
	passed := 0
	for i := range n {
		req, err := http.NewRequest(http.MethodPost, base+"/ui/signin", strings.NewReader(url.Values{"token": {"wharf_guess"}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if h := xff(i); h != "" {
			req.Header.Set("X-Forwarded-For", h)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusTooManyRequests {
			passed++
		}
	}
	return passed
}

func randomIP() string {
	return fmt.Sprintf("%d.%d.%d.%d", 1+rand.IntN(223), rand.IntN(256), rand.IntN(256), 1+rand.IntN(254))
}

// fixedClock stops time, so buckets never refill during a test: how many
// requests pass depends on the burst only, never on the machine's speed.
func fixedClock(d *Deps) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d.Now = func() time.Time { return at }
}

func TestSigninFloodWithSpoofedXFFIsLimited(t *testing.T) {
	e := newEnv(t, fixedClock, func(d *Deps) { d.RateLimit, d.RateBurst = 1, 5 })
	const n = 2000
	passed := signinFlood(t, e.hs.URL, n, func(int) string { return randomIP() + ", " + randomIP() })
	if passed != 5 {
		t.Errorf("%d of %d sign-in attempts with random X-Forwarded-For got through; want the burst of 5 for the one real client", passed, n)
	}
	if got := e.srv.clients.len(); got != 1 {
		t.Errorf("the limiter holds %d client buckets after a flood from one address; want 1", got)
	}
	e.srv.limMu.Lock()
	tokenBuckets := len(e.srv.limiters)
	e.srv.limMu.Unlock()
	if tokenBuckets > len(Roles) {
		t.Errorf("the token limiter grew to %d buckets during a sign-in flood", tokenBuckets)
	}
}

func TestSigninLimiterBehindTrustedProxyIsBounded(t *testing.T) {
	_, loop, _ := net.ParseCIDR("127.0.0.0/8")
	e := newEnv(t, fixedClock, func(d *Deps) {
		d.RateLimit, d.RateBurst = 1, 10
		d.TrustedProxies = []*net.IPNet{loop}
		d.MaxClients = 50
	})
	// Behind a trusted proxy every X-Forwarded-For address is a client of
	// its own: all pass, yet the buckets stay within MaxClients.
	const n = 1000
	if passed := signinFlood(t, e.hs.URL, n, func(int) string { return randomIP() }); passed < n-5 {
		t.Errorf("behind a trusted proxy only %d of %d distinct clients passed", passed, n)
	}
	if got := e.srv.clients.len(); got != 50 {
		t.Errorf("the limiter holds %d client buckets after %d addresses; want the bound of 50", got, n)
	}
	// One client is still limited on its own address, whatever it adds to
	// the left of the header (the proxy appends the address it saw).
	passed := signinFlood(t, e.hs.URL, 40, func(int) string { return randomIP() + ", 203.0.113.7" })
	if passed != 10 {
		t.Errorf("one client behind the proxy passed %d times; want its burst of 10", passed)
	}
}

func TestClientLimitersEvictLeastRecentlyUsed(t *testing.T) {
	e := newEnv(t)
	cl := newClientLimiters(3, e.srv.newLimiter)
	a := cl.get("a")
	cl.get("b")
	cl.get("c")
	if cl.get("a") != a {
		t.Fatal("a bucket in use was replaced")
	}
	cl.get("d") // evicts b, the least recently used
	if cl.len() != 3 {
		t.Fatalf("len = %d, want 3", cl.len())
	}
	if cl.get("a") != a {
		t.Error("the most recently used bucket was evicted instead of the oldest")
	}
	if _, ok := cl.byKey["b"]; ok {
		t.Error("b, the least recently used, is still held")
	}
}

func TestParseTrustedProxies(t *testing.T) {
	ns, err := ParseTrustedProxies([]string{"10.0.0.0/8", "192.0.2.1", "2001:db8::1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 3 || ns[1].String() != "192.0.2.1/32" || ns[2].String() != "2001:db8::1/128" {
		t.Errorf("parsed %v", ns)
	}
	_, err = ParseTrustedProxies([]string{"proxy.example"})
	var pe *proxyError
	if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), "neither a CIDR range") {
		t.Errorf("err = %v, want a proxyError", err)
	}
}
