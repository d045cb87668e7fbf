package api

import (
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// FuzzForwardedFor feeds arbitrary X-Forwarded-For headers and connection
// addresses to the client address the rate limits key on, with trusted
// proxies 10.0.0.0/8 and ::1: never a panic; the key is a canonical address
// (or "unparsed"); and an address taken from the header is one whose every
// hop to its right, the connection included, is a trusted proxy, so an
// address a client writes into the header is believed only when a trusted
// proxy put it there.
func FuzzForwardedFor(f *testing.F) {
	for _, s := range []struct{ remote, xff string }{
		{"10.0.0.1:5000", "203.0.113.7"},
		{"10.0.0.1:5000", "198.51.100.1, 203.0.113.7, 10.0.0.2"},
		{"203.0.113.9:5000", "10.0.0.3"},
		{"[::1]:5000", "[2001:db8::1], ::1"},
		{"10.0.0.1:5000", "not-an-ip, 203.0.113.7"},
		{"10.0.0.1:5000", "10.0.0.5,10.0.0.6"},
		{"10.0.0.1:5000", " , ,"},
		{"10.0.0.1", "::ffff:10.0.0.4, 203.0.113.7"},
		{"garbage", "203.0.113.7"},
		{"10.0.0.1:5000", "1.2.3.4%eth0"},
		{"10.0.0.1:5000", ""},
	} {
		f.Add(s.remote, s.xff)
	}
	trusted, err := ParseTrustedProxies([]string{"10.0.0.0/8", "::1"})
	if err != nil {
		f.Fatal(err)
	}
	isTrusted := func(s string) bool {
		ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "["), "]"))
		if ip == nil {
			return false
		}
		for _, n := range trusted {
			if n.Contains(ip) {
				return true
			}
		}
		return false
	}
	canon := func(s string) string {
		ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "["), "]"))
		if ip == nil {
			return ""
		}
		return ip.String()
	}
	e := echo.New()
	e.IPExtractor = ipExtractor(trusted)
	f.Fuzz(func(t *testing.T, remote, xff string) {
		r := httptest.NewRequest("GET", "/v1/catalog", nil)
		r.RemoteAddr = remote
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		key := clientKey(e.NewContext(r, httptest.NewRecorder()))
		if key == "unparsed" {
			return
		}
		if p := net.ParseIP(key); p == nil || p.String() != key {
			t.Fatalf("key %q is not a canonical address", key)
		}
		direct := remote
		if h, _, err := net.SplitHostPort(remote); err == nil {
			direct = h
		}
		if key == canon(direct) {
			return
		}
		// Taken from the header: some entry is key, and everything to its
		// right was a trusted proxy.
		hops := append(strings.Split(r.Header.Get("X-Forwarded-For"), ","), direct)
		for i := len(hops) - 2; i >= 0; i-- {
			if !isTrusted(hops[i+1]) {
				break
			}
			if canon(hops[i]) == key {
				return
			}
		}
		t.Fatalf("key %q from X-Forwarded-For %q behind %q crosses an untrusted hop", key, xff, remote)
	})
}
