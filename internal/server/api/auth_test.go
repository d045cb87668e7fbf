package api

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/identity"
	"github.com/wharfhq/wharf/internal/testutil/oidctest"
)

// ssoEnv is a server with single sign-on through a real provider on
// loopback: ada is in platform-admins, bo in data-team, cy in neither.
type ssoEnv struct {
	idp   *oidctest.Provider
	srv   *Server
	url   string
	admin string
}

func newSSOEnv(t *testing.T) *ssoEnv {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	idp := oidctest.New(t, oidctest.Options{
		Users: []oidctest.User{
			{Subject: "ada", Email: "ada@example.com", Groups: []string{"platform-admins"}},
			{Subject: "bo", Email: "bo@example.com", Groups: []string{"data-team"}},
			{Subject: "cy", Email: "cy@example.com", Groups: []string{"marketing"}},
		},
		Clients: []oidctest.Client{{ID: "wharf-console", Secret: "s3cret", RedirectURIs: []string{base + identity.CallbackPath}}, {ID: "wharf-cli"}},
	})
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	prov, err := identity.New(identity.Config{Name: "Test IdP", Issuer: idp.Issuer, ClientID: "wharf-console", ClientSecret: "s3cret",
		RedirectURL: base + identity.CallbackPath, DeviceClientID: "wharf-cli",
		Roles: map[string]Role{"platform-admins": RoleAdmin, "data-team": RoleDeveloper}}, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := Deps{Store: st, Policy: PolicyEngine, RateLimit: -1, Identity: prov}
	withCatalog(newFixture(t), t.TempDir())(&d)
	srv, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	admin, _, err := EnsureAdminToken(st, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(specCheck(t, srv.Handler()))
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(hs.Close)
	return &ssoEnv{idp: idp, srv: srv, url: base, admin: admin}
}

// jarClient is a cookie-keeping client that follows redirects.
func jarClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// consoleSignIn signs the browser in as user through the provider and
// returns the final page.
func (e *ssoEnv) consoleSignIn(t *testing.T, c *http.Client, user, next string) (*http.Response, string) {
	t.Helper()
	resp, body := get(t, c, e.url+"/ui/signin?next="+url.QueryEscape(next))
	if !strings.Contains(body, "Sign in with Test IdP") {
		t.Fatalf("the sign-in page offers no single sign-on: %s", body)
	}
	resp, body = get(t, c, e.url+"/ui/oidc/start?next="+url.QueryEscape(next))
	id := resp.Request.URL.Query().Get("authRequestID")
	if id == "" || !strings.HasPrefix(resp.Request.URL.String(), e.idp.Issuer) {
		t.Fatalf("not at the provider's login page: %s %s", resp.Request.URL, body)
	}
	r, err := c.PostForm(e.idp.Issuer+"/login", url.Values{"id": {id}, "username": {user}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r, string(b)
}

// Signing in through the provider: a platform-admin lands as admin, a
// data-team member as developer (admin pages are refused), a user in no
// mapped group gets a page saying why; the callback replayed is refused;
// signing out revokes the sign-in's token; audit entries name the person.
func TestConsoleSingleSignOn(t *testing.T) {
	e := newSSOEnv(t)

	ada := jarClient(t)
	resp, body := e.consoleSignIn(t, ada, "ada", "/ui/admin/audit")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Continue") {
		t.Fatalf("callback: %d %s", resp.StatusCode, body)
	}
	callback := resp.Request.URL.String()
	resp, body = get(t, ada, e.url+"/ui/admin/audit")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "ada@example.com") || !strings.Contains(body, "auth.login") {
		t.Fatalf("ada on the audit page: %d %s", resp.StatusCode, body)
	}

	// The same callback again (state and code replayed) is refused.
	resp, body = get(t, ada, callback)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "state") {
		t.Fatalf("a replayed callback: %d %s", resp.StatusCode, body)
	}

	bo := jarClient(t)
	if resp, body := e.consoleSignIn(t, bo, "bo", "/ui/"); resp.StatusCode != http.StatusOK {
		t.Fatalf("bo's callback: %d %s", resp.StatusCode, body)
	}
	if resp, body := get(t, bo, e.url+"/ui/channels"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "developer") {
		t.Fatalf("bo on the channels page: %d %s", resp.StatusCode, body)
	}
	if resp, _ := get(t, bo, e.url+"/ui/admin/audit"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a developer on an admin page: %d", resp.StatusCode)
	}

	cy := jarClient(t)
	resp, body = e.consoleSignIn(t, cy, "cy", "/ui/")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "in no group this wharf server gives a role to") || !strings.Contains(body, "marketing") {
		t.Fatalf("cy: %d %s", resp.StatusCode, body)
	}
	if resp, _ := get(t, cy, e.url+"/ui/"); resp.Request.URL.Path != "/ui/signin" {
		t.Fatalf("cy reached %s", resp.Request.URL)
	}
}

// wharf login's server side: the device flow against the provider gives
// an ID token; POST /v1/auth/login exchanges it for a short-lived token of
// the mapped role carrying the identity; the same ID token again is
// refused; whoami names the person; logout makes the token 401.
func TestLoginExchangeWhoamiLogout(t *testing.T) {
	e := newSSOEnv(t)
	ctx := context.Background()
	var pub struct {
		Issuer         string `json:"issuer"`
		DeviceClientID string `json:"deviceClientId"`
	}
	call(t, http.MethodGet, e.url+"/v1/auth/config", "", "", http.StatusOK, &pub)
	if pub.Issuer != e.idp.Issuer || pub.DeviceClientID != "wharf-cli" {
		t.Fatalf("auth config %+v", pub)
	}
	prov, err := oidc.NewProvider(ctx, pub.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &oauth2.Config{ClientID: pub.DeviceClientID, Endpoint: prov.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "email", oidc.ScopeOfflineAccess}}
	da, err := cfg.DeviceAuth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.idp.ApproveDevice(ctx, da.UserCode, "bo"); err != nil {
		t.Fatal(err)
	}
	tok, err := cfg.DeviceAccessToken(ctx, da)
	if err != nil {
		t.Fatal(err)
	}
	idt, _ := tok.Extra("id_token").(string)
	body, _ := json.Marshal(map[string]string{"idToken": idt})
	var lr LoginResponse
	call(t, http.MethodPost, e.url+"/v1/auth/login", "", string(body), http.StatusCreated, &lr)
	if lr.Role != RoleDeveloper || lr.Email != "bo@example.com" || lr.Subject != "bo" || lr.ExpiresAt == nil ||
		lr.ExpiresAt.Sub(lr.CreatedAt) != LoginTokenLifetime || !strings.HasPrefix(lr.Secret, "wharf_") {
		t.Fatalf("login %+v", lr)
	}
	call(t, http.MethodPost, e.url+"/v1/auth/login", "", string(body), http.StatusUnauthorized, nil)

	var who WhoAmI
	call(t, http.MethodGet, e.url+"/v1/auth/whoami", lr.Secret, "", http.StatusOK, &who)
	if who.ID != lr.ID || who.Email != "bo@example.com" || len(who.Groups) != 1 || who.Groups[0] != "data-team" {
		t.Fatalf("whoami %+v", who)
	}
	call(t, http.MethodGet, e.url+"/v1/plugins", lr.Secret, "", http.StatusOK, nil)
	call(t, http.MethodPost, e.url+"/v1/auth/logout", lr.Secret, "", http.StatusNoContent, nil)
	call(t, http.MethodGet, e.url+"/v1/plugins", lr.Secret, "", http.StatusUnauthorized, nil)

	var page AuditPage
	call(t, http.MethodGet, e.url+"/v1/audit?action=auth.logout", e.admin, "", http.StatusOK, &page)
	if len(page.Entries) != 1 || page.Entries[0].Email != "bo@example.com" || page.Entries[0].Subject != "bo" || page.Entries[0].Actor != lr.ID {
		t.Fatalf("the logout's audit entry: %+v", page.Entries)
	}
}

func call(t *testing.T, method, u, bearer, body string, want int, out any) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, u, resp.StatusCode, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, u, err, b)
		}
	}
}
