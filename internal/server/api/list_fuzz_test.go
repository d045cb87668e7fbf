package api

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// FuzzListCursor: any cursor and limit sent to the list routes paged by
// key (tokens, revocations, the fleet's plugins) get a page or a 400 naming
// the field, never a 5xx or a panic; a page holds at most limit items.
func FuzzListCursor(f *testing.F) {
	e := newEnv(f)
	admin := e.tokens[RoleAdmin]
	for i := range 3 {
		e.createToken(RoleCI)
		e.do("POST", "/v1/revocations", admin, map[string]string{"plugin": "p" + strconv.Itoa(i) + "@corp", "version": "1", "reason": "r"})
	}
	fleet := e.fleetToken(1)
	e.report(fleet, invReport(1, invPlugin("a@corp", "1", ""), invPlugin("b@corp", "1", ""), invPlugin("c@corp", "1", "")))
	for _, s := range [][2]string{{"", ""}, {"", "1"}, {"a@corp", "1"}, {"20260101T000000.000000000Z_tok_x", "2"}, {"\x00", "5"},
		{strings.Repeat("x", 600), "1"}, {"a b@corp", "0"}, {"zzz", "1000"}, {"a@corp|000", "1"}, {"%", "-1"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, cursor, limit string) {
		for _, path := range []string{"/v1/tokens", "/v1/revocations", "/v1/inventory/plugins"} {
			body, ok := getPage(t, e, admin, path, cursor, limit)
			if !ok {
				continue
			}
			max := maxPageSize
			if limit != "" {
				max, _ = strconv.Atoi(limit)
			}
			var n int
			switch path {
			case "/v1/tokens":
				var items []Token
				json.Unmarshal(body, &items)
				n = len(items)
			case "/v1/revocations":
				var page RevocationList
				json.Unmarshal(body, &page)
				n = len(page.Revocations)
			default:
				var page PluginInventoryList
				json.Unmarshal(body, &page)
				n = len(page.Plugins)
			}
			if n > max {
				t.Fatalf("%s: %d items for limit %d", path, n, max)
			}
		}
	})
}

// FuzzSessionCookie: a made-up session cookie and X-Forwarded-Proto never
// sign anyone in nor fail the server: the console sends the browser to
// sign in. Only a trusted proxy's "https" makes a cookie Secure.
func FuzzSessionCookie(f *testing.F) {
	e := newEnv(f)
	loopback := []*net.IPNet{{IP: net.IPv4(127, 0, 0, 1), Mask: net.CIDRMask(32, 32)}}
	trusting, err := New(Deps{Store: e.st, Policy: PolicyEngine, RateLimit: -1, TrustedProxies: loopback})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range [][2]string{{"", ""}, {"wsess_", "https"}, {"wsess_" + strings.Repeat("A", 43), "http, https"}, {e.tokens[RoleAdmin], "HTTPS"},
		{"wsess_\x00", "https,http"}, {strings.Repeat("wsess_", 40), " https "}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, cookie, proto string) {
		req := httptest.NewRequest(http.MethodGet, "/ui/admin/audit", nil)
		req.Header.Set("Cookie", sessionCookie+"="+url.QueryEscape(cookie))
		req.Header.Set("X-Forwarded-Proto", proto)
		rec := httptest.NewRecorder()
		e.srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusSeeOther || !strings.HasPrefix(rec.Header().Get("Location"), "/ui/signin") {
			t.Fatalf("cookie %q: %d %s", cookie, rec.Code, rec.Header().Get("Location"))
		}
		r := httptest.NewRequest(http.MethodGet, "/ui/signin", nil)
		r.RemoteAddr = "127.0.0.1:4242" // the trusted proxy
		r.Header.Set("X-Forwarded-Proto", proto)
		if e.srv.overTLS(r) {
			t.Fatalf("X-Forwarded-Proto %q from an untrusted peer made the request TLS", proto)
		}
		if trusting.overTLS(r) && !strings.Contains(strings.ToLower(proto), "https") {
			t.Fatalf("X-Forwarded-Proto %q made the request TLS", proto)
		}
	})
}
