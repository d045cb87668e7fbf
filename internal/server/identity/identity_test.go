package identity_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/identity"
	"github.com/wharfhq/wharf/internal/server/tokens"
	"github.com/wharfhq/wharf/internal/testutil/oidctest"
)

const (
	webClient    = "wharf-console"
	webSecret    = "console-secret"
	deviceClient = "wharf-cli"
	redirect     = "http://127.0.0.1:1" + identity.CallbackPath
)

func setup(t *testing.T) (*oidctest.Provider, *identity.Provider) {
	t.Helper()
	idp := oidctest.New(t, oidctest.Options{
		Users: []oidctest.User{
			{Subject: "ada", Email: "ada@example.com", Groups: []string{"platform-admins", "data-team"}},
			{Subject: "bo", Email: "bo@example.com", Groups: []string{"data-team"}},
			{Subject: "cy", Email: "cy@example.com", Groups: []string{"marketing"}},
		},
		Clients: []oidctest.Client{{ID: webClient, Secret: webSecret, RedirectURIs: []string{redirect}}, {ID: deviceClient}},
	})
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "s.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := identity.New(identity.Config{Issuer: idp.Issuer, ClientID: webClient, ClientSecret: webSecret, RedirectURL: redirect,
		DeviceClientID: deviceClient, Roles: map[string]tokens.Role{"platform-admins": tokens.RoleAdmin, "data-team": tokens.RoleDeveloper}}, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return idp, p
}

// browse plays the browser at the provider: it follows authURL to the
// login page, signs in as user, and returns the callback URL the provider
// redirects to (not followed).
func browse(t *testing.T, authURL, user string) *url.URL {
	t.Helper()
	c := &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), "http://127.0.0.1:1/") {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Request.URL.Query().Get("authRequestID")
	if id == "" {
		t.Fatalf("the provider did not show its login page: %s", resp.Request.URL)
	}
	login := *resp.Request.URL
	login.RawQuery = ""
	resp, err = c.PostForm(login.String(), url.Values{"id": {id}, "username": {user}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		t.Fatalf("no redirect to the callback: %s %v", resp.Status, err)
	}
	return loc
}

// The console's flow: the authorization URL carries PKCE (S256), state
// and nonce; the callback's code gives the user's claims once; the same
// state again (a replayed callback) is refused, and so is a state that
// is not the browser's.
func TestCodeFlowAndReplayedState(t *testing.T) {
	_, p := setup(t)
	ctx := context.Background()
	state, authURL, err := p.Begin(ctx, "/ui/channels")
	if err != nil {
		t.Fatal(err)
	}
	q, _ := url.Parse(authURL)
	if q.Query().Get("code_challenge_method") != "S256" || q.Query().Get("nonce") == "" || q.Query().Get("state") != state {
		t.Fatalf("authorization URL %s", authURL)
	}
	cb := browse(t, authURL, "bo")
	code := cb.Query().Get("code")
	if cb.Query().Get("state") != state || code == "" {
		t.Fatalf("callback %s", cb)
	}
	if _, _, err := p.Finish(ctx, state, "another-browser", code); !refused(err) {
		t.Fatalf("a state that is not the browser's: %v", err)
	}
	c, next, err := p.Finish(ctx, state, state, code)
	if err != nil {
		t.Fatal(err)
	}
	if c.Subject != "bo" || c.Email != "bo@example.com" || strings.Join(c.Groups, ",") != "data-team" || next != "/ui/channels" {
		t.Fatalf("claims %+v next %q", c, next)
	}
	if _, _, err := p.Finish(ctx, state, state, code); !refused(err) || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("a replayed state: %v", err)
	}
}

func refused(err error) bool {
	var re *identity.RefusedError
	return errors.As(err, &re)
}

// sign signs claims with key (kid) as RS256.
func sign(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", kid).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	obj, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Forged or wrong ID tokens are refused, each for its reason; a good one
// (the provider's key, right claims) passes once.
func TestForgedIDTokens(t *testing.T) {
	idp, p := setup(t)
	ctx := context.Background()
	key, kid := idp.SigningKey()
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claims := func(edit func(map[string]any)) map[string]any {
		m := map[string]any{"iss": idp.Issuer, "aud": deviceClient, "sub": "bo", "email": "bo@example.com",
			"groups": []string{"data-team"}, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()}
		if edit != nil {
			edit(m)
		}
		return m
	}
	b64 := func(v any) string { raw, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(raw) }
	for _, tc := range []struct {
		name string
		raw  string
		want string
	}{
		{"WrongIssuer", sign(t, key, kid, claims(func(m map[string]any) { m["iss"] = "https://evil.example.com" })), "different provider"},
		{"WrongAudience", sign(t, key, kid, claims(func(m map[string]any) { m["aud"] = "someone-else" })), "audience"},
		{"Expired", sign(t, key, kid, claims(func(m map[string]any) {
			m["iat"], m["exp"] = now.Add(-2*time.Hour).Unix(), now.Add(-time.Hour).Unix()
		})), "expired"},
		{"AlgNone", b64(map[string]string{"alg": "none", "typ": "JWT"}) + "." + b64(claims(nil)) + ".", "signature"},
		{"AnotherKey", sign(t, other, kid, claims(nil)), "signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.VerifyIDToken(ctx, tc.raw, deviceClient, "")
			if !refused(err) || !strings.Contains(strings.ToLower(err.Error()), tc.want) {
				t.Fatalf("got %v, want a refusal naming %q", err, tc.want)
			}
		})
	}
	t.Run("GoodOnceThenReplayed", func(t *testing.T) {
		raw := sign(t, key, kid, claims(nil))
		c, err := p.VerifyIDToken(ctx, raw, deviceClient, "")
		if err != nil || c.Subject != "bo" || c.Email != "bo@example.com" {
			t.Fatalf("a good token: %+v %v", c, err)
		}
		if _, err := p.VerifyIDToken(ctx, raw, deviceClient, ""); !refused(err) || !strings.Contains(err.Error(), "already used") {
			t.Fatalf("the same ID token again: %v", err)
		}
	})
	t.Run("ReplayedNonce", func(t *testing.T) {
		first := sign(t, key, kid, claims(func(m map[string]any) { m["nonce"] = "n-1"; m["jti"] = "a" }))
		second := sign(t, key, kid, claims(func(m map[string]any) { m["nonce"] = "n-1"; m["jti"] = "b" }))
		if _, err := p.VerifyIDToken(ctx, first, deviceClient, "n-1"); err != nil {
			t.Fatal(err)
		}
		if _, err := p.VerifyIDToken(ctx, second, deviceClient, "n-1"); !refused(err) || !strings.Contains(err.Error(), "nonce was already used") {
			t.Fatalf("a second token with a used nonce: %v", err)
		}
		wrong := sign(t, key, kid, claims(func(m map[string]any) { m["nonce"] = "n-2" }))
		if _, err := p.VerifyIDToken(ctx, wrong, deviceClient, "n-3"); !refused(err) || !strings.Contains(err.Error(), "nonce is not") {
			t.Fatalf("a token with another sign-in's nonce: %v", err)
		}
	})
}

// Groups map to the most powerful role; a user in no mapped group is
// refused with NoRoleError naming their groups; bad configurations are
// named by their flag.
func TestRolesAndConfig(t *testing.T) {
	_, p := setup(t)
	cfg := p.Config()
	if r, err := cfg.RoleFor("ada", []string{"data-team", "platform-admins"}); err != nil || r != tokens.RoleAdmin {
		t.Fatalf("ada: %v %v", r, err)
	}
	if r, err := cfg.RoleFor("bo", []string{"data-team"}); err != nil || r != tokens.RoleDeveloper {
		t.Fatalf("bo: %v %v", r, err)
	}
	var nr *identity.NoRoleError
	if _, err := cfg.RoleFor("cy", []string{"marketing"}); !errors.As(err, &nr) || !strings.Contains(err.Error(), "marketing") {
		t.Fatalf("cy: %v", err)
	}
	for _, tc := range []struct {
		edit  func(*identity.Config)
		field string
	}{
		{func(c *identity.Config) { c.Issuer = "http://idp.example.com" }, "--oidc-issuer"},
		{func(c *identity.Config) { c.ClientID = "" }, "--oidc-client-id"},
		{func(c *identity.Config) { c.ClientSecret = "" }, "--oidc-client-secret-file"},
		{func(c *identity.Config) { c.RedirectURL = "https://wharf.example.com/elsewhere" }, "--oidc-redirect-url"},
		{func(c *identity.Config) { c.Roles = nil }, "--oidc-role"},
		{func(c *identity.Config) { c.Roles = map[string]tokens.Role{"x": "root"} }, "--oidc-role"},
	} {
		c := cfg
		tc.edit(&c)
		var ce *identity.ConfigError
		if err := c.Validate(); !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%+v: %v, want an error naming %s", c, err, tc.field)
		}
	}
	if _, _, err := identity.ParseRole("platform-admins=root"); err == nil {
		t.Fatal("a mapping to no role parsed")
	}
	if g, r, err := identity.ParseRole(" platform-admins = admin "); err != nil || g != "platform-admins" || r != tokens.RoleAdmin {
		t.Fatalf("ParseRole: %q %q %v", g, r, err)
	}
}

// An unreachable provider is named with the next step.
func TestUnreachable(t *testing.T) {
	_, p := setup(t)
	cfg := p.Config()
	cfg.Issuer = "http://127.0.0.1:1"
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "s.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q, err := identity.New(cfg, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ue *identity.UnreachableError
	if _, _, err := q.Begin(context.Background(), "/ui/"); !errors.As(err, &ue) {
		t.Fatalf("Begin against nothing: %v", err)
	}
}
