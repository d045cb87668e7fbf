package api

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
)

// signInCookie signs in at base through the form with token, sending
// headers with both requests, and returns the session cookie as set.
func signInCookie(t *testing.T, c *http.Client, base, token string, headers ...string) *http.Cookie {
	t.Helper()
	send := func(method, path string, form url.Values, cks []*http.Cookie) *http.Response {
		var req *http.Request
		var err error
		if form != nil {
			req, err = http.NewRequest(method, base+path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		} else {
			req, err = http.NewRequest(method, base+path, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range headers {
			k, v, _ := strings.Cut(h, ":")
			req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
		}
		for _, ck := range cks {
			req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	form := send("GET", "/ui/signin", nil, nil)
	var signin *http.Cookie
	for _, ck := range form.Cookies() {
		if ck.Name == signinCookie {
			signin = ck
		}
	}
	if signin == nil {
		t.Fatalf("sign-in form without its cookie: %d", form.StatusCode)
	}
	res := send("POST", "/ui/signin", url.Values{"token": {token}, "csrf": {signin.Value}}, []*http.Cookie{signin})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", res.StatusCode)
	}
	for _, ck := range res.Cookies() {
		if ck.Name == sessionCookie {
			return ck
		}
	}
	t.Fatal("sign-in set no session cookie")
	return nil
}

func noRedirect(c *http.Client) *http.Client {
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// getWithSession GETs path with the session cookie value and returns the
// status.
func getWithSession(t *testing.T, c *http.Client, base, path, session string) int {
	t.Helper()
	req, err := http.NewRequest("GET", base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: session})
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// The session cookie is a random id, not the token, and the store keeps
// only its hash: neither the cookie nor the store gives the token.
func TestConsoleSessionCookieIsNotTheToken(t *testing.T) {
	e := newEnv(t)
	c := noRedirect(&http.Client{})
	tok := e.tokens[RoleDeveloper]
	ck := signInCookie(t, c, e.hs.URL, tok)
	if ck.Value == tok || strings.Contains(ck.Value, tok) || strings.Contains(tok, ck.Value) || !strings.HasPrefix(ck.Value, sessionIDPrefix) {
		t.Fatalf("session cookie %q holds the token %q", ck.Value, tok)
	}
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/ui" || ck.Secure {
		t.Fatalf("session cookie over plain HTTP: %+v", ck)
	}
	// The cookie is not a bearer token for the API.
	if res := e.do("GET", "/v1/plugins", ck.Value, nil); res.status != http.StatusUnauthorized {
		t.Fatalf("API with the session cookie as bearer: %d", res.status)
	}
	// A second sign-in gets another id.
	if ck2 := signInCookie(t, c, e.hs.URL, tok); ck2.Value == ck.Value {
		t.Fatal("two sign-ins share a session id")
	}
	var keys []store.KV
	e.st.View(func(r store.Reader) (err error) { keys, err = r.List(bucketSessions, ""); return err })
	if len(keys) != 2 {
		t.Fatalf("%d sessions stored; want 2", len(keys))
	}
	for _, kv := range keys {
		if strings.Contains(kv.Key+string(kv.Value), ck.Value) || strings.Contains(kv.Key+string(kv.Value), tok) {
			t.Fatalf("the store holds the session id or the token: %s %s", kv.Key, kv.Value)
		}
	}
	if code := getWithSession(t, c, e.hs.URL, "/ui/fleet", ck.Value); code != http.StatusForbidden {
		t.Fatalf("developer session on an admin page: %d; want 403", code)
	}
	admin := signInCookie(t, c, e.hs.URL, e.tokens[RoleAdmin])
	if code := getWithSession(t, c, e.hs.URL, "/ui/admin/audit", admin.Value); code != http.StatusOK {
		t.Fatalf("console with the admin session: %d", code)
	}
	// A cookie made of the token itself (the old form) is no session.
	if code := getWithSession(t, c, e.hs.URL, "/ui/admin/audit", e.tokens[RoleAdmin]); code != http.StatusSeeOther {
		t.Fatalf("console with the token as cookie: %d; want a redirect to sign in", code)
	}
}

// Sign-out deletes the session: a copy of the cookie kept from before is
// refused. Another replica over the same store knows the session.
func TestConsoleSignoutEndsSessionEverywhere(t *testing.T) {
	e := newEnv(t)
	e2srv, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	hs2 := httptestServer(t, e2srv)
	u := signedIn(t, e, RoleAdmin)
	u.get("/ui/admin/audit")
	at, _ := url.Parse(e.hs.URL + "/ui/admin/audit")
	var id string
	for _, ck := range u.c.Jar.Cookies(at) {
		if ck.Name == sessionCookie {
			id = ck.Value
		}
	}
	c := noRedirect(&http.Client{})
	if code := getWithSession(t, c, hs2.URL, "/ui/admin/audit", id); code != http.StatusOK {
		t.Fatalf("the session %q on another replica: %d", id, code)
	}
	if p := u.post("/ui/signout", url.Values{}); p.status != http.StatusSeeOther {
		t.Fatalf("sign out: %d", p.status)
	}
	for _, b := range []string{e.hs.URL, hs2.URL} {
		if code := getWithSession(t, c, b, "/ui/admin/audit", id); code != http.StatusSeeOther {
			t.Fatalf("%s: the signed-out session's cookie replayed: %d; want a redirect to sign in", b, code)
		}
	}
}

// A session ends after SessionLifetime even when its token lives on.
func TestConsoleSessionExpires(t *testing.T) {
	ck := newClock()
	e := newEnv(t, func(d *Deps) { d.Now = ck.now })
	u := signedIn(t, e, RoleAdmin)
	ck.advance(SessionLifetime - time.Minute)
	if p := u.get("/ui/admin/audit"); p.status != http.StatusOK {
		t.Fatalf("before expiry: %d", p.status)
	}
	ck.advance(time.Minute)
	if p := u.get("/ui/admin/audit"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, "/ui/signin") {
		t.Fatalf("after expiry: %d %q", p.status, p.location)
	}
}

// Secure is set over TLS, and behind a trusted proxy that says https; the
// same header from anyone else changes nothing.
func TestConsoleSessionCookieSecure(t *testing.T) {
	loopback := []*net.IPNet{{IP: net.IPv4(127, 0, 0, 1), Mask: net.CIDRMask(32, 32)}}
	cases := []struct {
		name    string
		proxies []*net.IPNet
		tls     bool
		headers []string
		secure  bool
	}{
		{"plain http", nil, false, nil, false},
		{"forwarded proto from an untrusted peer", nil, false, []string{"X-Forwarded-Proto: https"}, false},
		{"trusted proxy says http", loopback, false, []string{"X-Forwarded-Proto: http"}, false},
		{"trusted proxy says https", loopback, false, []string{"X-Forwarded-Proto: https"}, true},
		{"TLS", nil, true, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(d *Deps) { d.TrustedProxies = tc.proxies })
			base, c := e.hs.URL, noRedirect(&http.Client{})
			if tc.tls {
				hs := httptest.NewTLSServer(e.srv.Handler())
				t.Cleanup(hs.Close)
				base = hs.URL
				c = noRedirect(hs.Client())
				c.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
			}
			ck := signInCookie(t, c, base, e.tokens[RoleDeveloper], tc.headers...)
			if ck.Secure != tc.secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
				t.Fatalf("session cookie %+v; want Secure=%v, HttpOnly, SameSite=Strict", ck, tc.secure)
			}
		})
	}
}
