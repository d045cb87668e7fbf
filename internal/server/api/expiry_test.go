package api

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a test clock that only moves when told.
type clock struct{ t atomic.Pointer[time.Time] }

func newClock() *clock {
	c := &clock{}
	c.set(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	return c
}
func (c *clock) now() time.Time          { return *c.t.Load() }
func (c *clock) set(t time.Time)         { c.t.Store(&t) }
func (c *clock) advance(d time.Duration) { c.set(c.now().Add(d)) }

func TestTokenExpires(t *testing.T) {
	ck := newClock()
	e := newEnv(t, func(d *Deps) { d.Now = ck.now })
	res := e.do("POST", "/v1/tokens", e.tokens[RoleAdmin], map[string]string{"role": "developer", "expires": "1d"})
	if res.status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	var created struct {
		Token     string     `json:"token"`
		ID        string     `json:"id"`
		ExpiresAt *time.Time `json:"expiresAt"`
	}
	res.json(t, &created)
	if created.ExpiresAt == nil || !created.ExpiresAt.Equal(ck.now().Add(24*time.Hour)) {
		t.Fatalf("expiresAt = %v, want a day from now", created.ExpiresAt)
	}
	// The expiry is stored: the list shows it.
	var list []Token
	e.do("GET", "/v1/tokens", e.tokens[RoleAdmin], nil).json(t, &list)
	found := false
	for _, tk := range list {
		if tk.ID == created.ID {
			found = tk.ExpiresAt != nil && tk.ExpiresAt.Equal(*created.ExpiresAt)
		}
	}
	if !found {
		t.Fatalf("token list does not show the expiry: %+v", list)
	}

	if res := e.do("GET", "/v1/plugins", created.Token, nil); res.status == http.StatusUnauthorized {
		t.Fatalf("a fresh token was refused: %s", res.body)
	}
	ck.advance(24 * time.Hour)
	res = e.do("GET", "/v1/plugins", created.Token, nil)
	ae := res.apiError(t)
	if res.status != http.StatusUnauthorized || !strings.Contains(ae.Message, "expired at 2026-03-02T09:00:00Z") {
		t.Fatalf("expired token: %d %s", res.status, res.body)
	}
	// A token without an expiry still works a year later.
	ck.advance(365 * 24 * time.Hour)
	if res := e.do("GET", "/v1/plugins", e.tokens[RoleDeveloper], nil); res.status == http.StatusUnauthorized {
		t.Fatalf("a token without expiry was refused: %s", res.body)
	}
}

func TestTokenExpiryInput(t *testing.T) {
	e := newEnv(t)
	for _, bad := range []string{"0d", "-1h", "soon", "1.5d", "4000d", "100000h"} {
		res := e.do("POST", "/v1/tokens", e.tokens[RoleAdmin], map[string]string{"role": "ci", "expires": bad})
		if ae := res.apiError(t); res.status != 400 || ae.Field != "expires" {
			t.Errorf("expires %q: %d %s", bad, res.status, res.body)
		}
	}
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "12h": 12 * time.Hour, "90m": 90 * time.Minute} {
		if got, err := ParseExpiry(in); err != nil || got != want {
			t.Errorf("ParseExpiry(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

// The console ends a session whose token expired, and refuses to sign in
// with one, saying it expired.
func TestConsoleTokenExpires(t *testing.T) {
	ck := newClock()
	e, _ := newCatalogEnv(t, func(d *Deps) { d.Now = ck.now })
	res := e.do("POST", "/v1/tokens", e.tokens[RoleAdmin], map[string]string{"role": "developer", "expires": "2h"})
	var created struct {
		Token string `json:"token"`
	}
	res.json(t, &created)
	u := newUIClient(t, e.hs.URL)
	u.signIn(created.Token)
	if p := u.get("/ui/"); p.status != http.StatusOK {
		t.Fatalf("signed in: %d", p.status)
	}
	ck.advance(2 * time.Hour)
	if p := u.get("/ui/"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, "/ui/signin") {
		t.Fatalf("expired session: %d %q", p.status, p.location)
	}
	u.get("/ui/signin")
	p := u.post("/ui/signin", url.Values{"token": {created.Token}})
	if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "has expired") {
		t.Fatalf("sign-in with an expired token: %d %s", p.status, p.body)
	}
}
