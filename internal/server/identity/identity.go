// Package identity is the server's single sign-on through an OpenID
// Connect provider: its configuration (issuer, clients, the groups claim
// and the mapping of groups to roles), the authorization code flow with
// PKCE of the web console (state, nonce and code verifier kept one use in
// the store, so any replica can finish a sign-in another began), and the
// verification of ID tokens: issuer, audience, expiry, signature by a key
// of the provider's JWKS, nonce, and one use. It holds no HTTP routes: the
// api package calls it.
package identity

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

// The buckets of the sign-in state.
const (
	// PendingBucket holds console sign-ins begun and not finished:
	// sha256(state) → pending.
	PendingBucket = "api-oidc-pending"
	// UsedBucket holds the nonces and ID tokens already used, until they
	// expire: "nonce:"+sha256 or "idt:"+sha256 → expiry.
	UsedBucket = "api-oidc-used"

	// PendingLifetime is how long a begun sign-in may take.
	PendingLifetime = 10 * time.Minute
)

// Config is the server's OpenID Connect configuration.
type Config struct {
	// Name is what the console's button says: "Sign in with <Name>".
	Name string
	// Issuer is the provider's issuer URL (its discovery document is at
	// Issuer/.well-known/openid-configuration).
	Issuer string
	// ClientID and ClientSecret are the console's (confidential) client.
	ClientID     string
	ClientSecret string
	// RedirectURL is the console's callback as registered at the provider
	// (https://wharf.example.com/ui/oidc/callback).
	RedirectURL string
	// DeviceClientID is the public client `wharf login` uses for the
	// device authorization grant; "" turns `wharf login` off.
	DeviceClientID string
	// GroupsClaim names the ID token claim that lists the user's groups.
	GroupsClaim string
	// Roles maps a group to the role its members get; a user in several
	// mapped groups gets the most powerful of their roles.
	Roles map[string]tokens.Role
}

// CallbackPath is the console's callback path.
const CallbackPath = "/ui/oidc/callback"

// ConfigError is a configuration that cannot work.
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("OpenID Connect: %s: %s", e.Field, e.Msg) }

// Validate checks c and fills its defaults (Name, GroupsClaim).
func (c *Config) Validate() error {
	u, err := url.Parse(c.Issuer)
	if err != nil || (u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname()))) || u.Host == "" {
		return &ConfigError{"--oidc-issuer", fmt.Sprintf("%q is not an https URL (http only on loopback)", c.Issuer)}
	}
	if c.ClientID == "" {
		return &ConfigError{"--oidc-client-id", "required with --oidc-issuer"}
	}
	if c.ClientSecret == "" {
		return &ConfigError{"--oidc-client-secret-file", "required with --oidc-issuer (or set WHARF_OIDC_CLIENT_SECRET)"}
	}
	r, err := url.Parse(c.RedirectURL)
	if err != nil || (r.Scheme != "https" && r.Scheme != "http") || r.Host == "" || r.Path != CallbackPath {
		return &ConfigError{"--oidc-redirect-url", fmt.Sprintf("%q is not this server's callback URL (https://HOST%s)", c.RedirectURL, CallbackPath)}
	}
	if len(c.Roles) == 0 {
		return &ConfigError{"--oidc-role", "no group is mapped to a role, so nobody could sign in; e.g. --oidc-role platform-admins=admin"}
	}
	for g, r := range c.Roles {
		if g == "" || !tokens.ValidRole(string(r)) {
			return &ConfigError{"--oidc-role", fmt.Sprintf("%q=%q: want GROUP=ROLE with ROLE one of admin, developer, ci, agent", g, r)}
		}
	}
	if c.GroupsClaim == "" {
		c.GroupsClaim = "groups"
	}
	if c.Name == "" {
		c.Name = u.Host
	}
	return nil
}

func loopback(host string) bool {
	return host == "127.0.0.1" || host == "::1" || host == "localhost"
}

// ParseRole parses one GROUP=ROLE mapping.
func ParseRole(s string) (string, tokens.Role, error) {
	g, r, ok := strings.Cut(s, "=")
	g, r = strings.TrimSpace(g), strings.TrimSpace(r)
	if !ok || g == "" || !tokens.ValidRole(r) {
		return "", "", &ConfigError{"--oidc-role", fmt.Sprintf("%q: want GROUP=ROLE with ROLE one of admin, developer, ci, agent", s)}
	}
	return g, tokens.Role(r), nil
}

// rank orders the roles by power.
var rank = map[tokens.Role]int{tokens.RoleAgent: 1, tokens.RoleCI: 2, tokens.RoleDeveloper: 3, tokens.RoleAdmin: 4}

// NoRoleError is a user none of whose groups maps to a role.
type NoRoleError struct {
	Who    string
	Groups []string
}

func (e *NoRoleError) Error() string {
	g := "no groups"
	if len(e.Groups) > 0 {
		g = "groups " + strings.Join(e.Groups, ", ")
	}
	return fmt.Sprintf("%s (%s) is in no group this wharf server gives a role to; ask an admin to add you to one, or to map one of your groups (--oidc-role GROUP=ROLE)", e.Who, g)
}

// RoleFor is the role of a user in groups: the most powerful one mapped,
// or *NoRoleError.
func (c *Config) RoleFor(who string, groups []string) (tokens.Role, error) {
	var best tokens.Role
	for _, g := range groups {
		if r, ok := c.Roles[g]; ok && rank[r] > rank[best] {
			best = r
		}
	}
	if best == "" {
		return "", &NoRoleError{Who: who, Groups: groups}
	}
	return best, nil
}

// Provider is a configured provider; it discovers the provider's
// endpoints and keys on first use (and again after a failure).
type Provider struct {
	cfg Config
	st  store.Store
	now func() time.Time

	mu   sync.Mutex
	prov *oidc.Provider
	meta metadata
}

type metadata struct {
	Revocation string `json:"revocation_endpoint"`
	DeviceAuth string `json:"device_authorization_endpoint"`
}

// New returns the provider of cfg (validated) over st.
func New(cfg Config, st store.Store, now func() time.Time) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Provider{cfg: cfg, st: st, now: now}, nil
}

// Config is the provider's configuration.
func (p *Provider) Config() Config { return p.cfg }

// UnreachableError is a provider whose discovery failed.
type UnreachableError struct {
	Issuer string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("the identity provider %s did not answer its discovery document: %v; try again, or check --oidc-issuer", e.Issuer, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

func (p *Provider) discover(ctx context.Context) (*oidc.Provider, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prov != nil {
		return p.prov, nil
	}
	prov, err := oidc.NewProvider(ctx, p.cfg.Issuer)
	if err != nil {
		return nil, &UnreachableError{p.cfg.Issuer, err}
	}
	var m metadata
	_ = prov.Claims(&m)
	p.prov, p.meta = prov, m
	return prov, nil
}

func (p *Provider) oauth(prov *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret, RedirectURL: p.cfg.RedirectURL,
		Endpoint: prov.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
}

type pending struct {
	Nonce    string    `json:"nonce"`
	Verifier string    `json:"verifier"`
	Next     string    `json:"next"`
	Expires  time.Time `json:"expires"`
}

func random() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Begin starts a console sign-in that returns to next: it stores the
// state, nonce and PKCE verifier (one use, PendingLifetime) and returns
// the state, for the browser's cookie, and the provider's authorization
// URL to send the browser to.
func (p *Provider) Begin(ctx context.Context, next string) (state, authURL string, err error) {
	prov, err := p.discover(ctx)
	if err != nil {
		return "", "", err
	}
	state, err = random()
	if err != nil {
		return "", "", err
	}
	nonce, err := random()
	if err != nil {
		return "", "", err
	}
	pd := pending{Nonce: nonce, Verifier: oauth2.GenerateVerifier(), Next: next, Expires: p.now().Add(PendingLifetime).UTC()}
	raw, err := json.Marshal(pd)
	if err != nil {
		return "", "", err
	}
	now := p.now()
	err = p.st.Update(func(tx store.Tx) error {
		if err := sweep(tx, PendingBucket, now, func(v []byte) time.Time {
			var o pending
			if json.Unmarshal(v, &o) != nil {
				return time.Time{}
			}
			return o.Expires
		}); err != nil {
			return err
		}
		return tx.Put(PendingBucket, tokens.HashSecret(state), raw)
	})
	if err != nil {
		return "", "", err
	}
	return state, p.oauth(prov).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(pd.Verifier)), nil
}

// sweep drops the expired entries of bucket (and those that do not
// decode).
func sweep(tx store.Tx, bucket string, now time.Time, expires func([]byte) time.Time) error {
	kvs, err := tx.List(bucket, "")
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		if !now.Before(expires(kv.Value)) {
			if err := tx.Delete(bucket, kv.Key); err != nil {
				return err
			}
		}
	}
	return nil
}

// RefusedError is a sign-in or ID token refused; Reason says why, for the
// audit log and the page.
type RefusedError struct {
	Reason string
	Err    error
}

func (e *RefusedError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("sign-in refused: %s: %v", e.Reason, e.Err)
	}
	return "sign-in refused: " + e.Reason
}
func (e *RefusedError) Unwrap() error { return e.Err }

// Claims is who an ID token names.
type Claims struct {
	Subject string
	Email   string
	Groups  []string
	Expiry  time.Time
}

// Identity is the token identity of c.
func (c Claims) Identity() tokens.Identity {
	return tokens.Identity{Subject: c.Subject, Email: c.Email, Groups: slices.Clone(c.Groups)}
}

// Finish ends a console sign-in: the state must be one Begin stored and
// not yet used (it is used now, whatever happens next) and equal the
// browser's cookie; the code is exchanged with the verifier, and the ID
// token verified (VerifyIDToken, with the stored nonce). It returns the
// claims and the next path.
func (p *Provider) Finish(ctx context.Context, state, cookieState, code string) (Claims, string, error) {
	if state == "" || cookieState == "" || state != cookieState {
		return Claims{}, "", &RefusedError{Reason: "the state does not match this browser's sign-in (start again from the sign-in page)"}
	}
	var pd pending
	found := false
	now := p.now()
	err := p.st.Update(func(tx store.Tx) error {
		k := tokens.HashSecret(state)
		raw, err := tx.Get(PendingBucket, k)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := tx.Delete(PendingBucket, k); err != nil {
			return err
		}
		found = json.Unmarshal(raw, &pd) == nil && now.Before(pd.Expires)
		return nil
	})
	if err != nil {
		return Claims{}, "", err
	}
	if !found {
		return Claims{}, "", &RefusedError{Reason: "the sign-in state is unknown, expired or already used (start again from the sign-in page)"}
	}
	prov, err := p.discover(ctx)
	if err != nil {
		return Claims{}, "", err
	}
	tok, err := p.oauth(prov).Exchange(ctx, code, oauth2.VerifierOption(pd.Verifier))
	if err != nil {
		return Claims{}, "", &RefusedError{Reason: "the identity provider did not exchange the code", Err: err}
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Claims{}, "", &RefusedError{Reason: "the identity provider returned no ID token"}
	}
	c, err := p.VerifyIDToken(ctx, raw, p.cfg.ClientID, pd.Nonce)
	if err != nil {
		return Claims{}, "", err
	}
	return c, pd.Next, nil
}

// VerifyIDToken verifies raw as an ID token of this provider for
// audience: signature by a key of the provider's JWKS (so never alg
// none), issuer, audience, expiry; the nonce when nonce is not "" (and
// then the nonce is used: a second token with it is refused); and the
// token itself is used: the same ID token is refused a second time.
func (p *Provider) VerifyIDToken(ctx context.Context, raw, audience, nonce string) (Claims, error) {
	prov, err := p.discover(ctx)
	if err != nil {
		return Claims{}, err
	}
	v := prov.Verifier(&oidc.Config{ClientID: audience, Now: p.now})
	idt, err := v.Verify(ctx, raw)
	if err != nil {
		return Claims{}, &RefusedError{Reason: "the ID token is not valid", Err: err}
	}
	if nonce != "" && idt.Nonce != nonce {
		return Claims{}, &RefusedError{Reason: "the ID token's nonce is not this sign-in's"}
	}
	all := map[string]any{}
	if err := idt.Claims(&all); err != nil {
		return Claims{}, &RefusedError{Reason: "the ID token's claims do not decode", Err: err}
	}
	c := Claims{Subject: idt.Subject, Expiry: idt.Expiry}
	if e, ok := all["email"].(string); ok {
		c.Email = e
	}
	switch g := all[p.cfg.GroupsClaim].(type) {
	case []any:
		for _, x := range g {
			if s, ok := x.(string); ok && s != "" {
				c.Groups = append(c.Groups, s)
			}
		}
	case string:
		if g != "" {
			c.Groups = []string{g}
		}
	}
	if c.Subject == "" {
		return Claims{}, &RefusedError{Reason: "the ID token names no subject"}
	}
	keys := []string{"idt:" + tokens.HashSecret(raw)}
	if nonce != "" {
		keys = append(keys, "nonce:"+tokens.HashSecret(nonce))
	}
	if err := p.use(keys, idt.Expiry); err != nil {
		return Claims{}, err
	}
	return c, nil
}

// use records keys as used until exp, or refuses when one already is.
func (p *Provider) use(keys []string, exp time.Time) error {
	now := p.now()
	if exp.Before(now.Add(time.Minute)) {
		exp = now.Add(time.Minute)
	}
	val := []byte(exp.UTC().Format(time.RFC3339))
	return p.st.Update(func(tx store.Tx) error {
		if err := sweep(tx, UsedBucket, now, func(v []byte) time.Time {
			t, _ := time.Parse(time.RFC3339, string(v))
			return t
		}); err != nil {
			return err
		}
		for _, k := range keys {
			if _, err := tx.Get(UsedBucket, k); err == nil {
				what := "ID token"
				if strings.HasPrefix(k, "nonce:") {
					what = "nonce"
				}
				return &RefusedError{Reason: "the " + what + " was already used (a replay)"}
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		for _, k := range keys {
			if err := tx.Put(UsedBucket, k, val); err != nil {
				return err
			}
		}
		return nil
	})
}

// Public is what the server tells clients of its sign-in, for `wharf
// login` (GET /v1/auth/config).
type Public struct {
	Issuer         string `json:"issuer"`
	DeviceClientID string `json:"deviceClientId,omitempty"`
	Name           string `json:"name"`
}

// Public is the provider's public settings.
func (p *Provider) Public() Public {
	return Public{Issuer: p.cfg.Issuer, DeviceClientID: p.cfg.DeviceClientID, Name: p.cfg.Name}
}
