// Package login is a developer's sign-in to a wharf server through the
// server's OpenID Connect provider (wharf login, logout, whoami): the
// device authorization grant against the provider, the exchange of its ID
// token for a short-lived wharf token at the server, and the state kept
// in $WHARF_HOME/login.json (mode 0600, written crash-safe): the server,
// the wharf token, the provider's refresh token. A State is an
// apiclient.TokenSource: an expired wharf token is renewed through the
// refresh token without asking the user.
package login

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/wharfhq/wharf/internal/core/apiclient"
	"github.com/wharfhq/wharf/internal/core/atomicfile"
)

// FileName is the login state's file in the home.
const FileName = "login.json"

// Path is the login state's file of home.
func Path(home string) string { return filepath.Join(home, FileName) }

// State is a signed-in user's state.
type State struct {
	Server   string `json:"server"`
	Issuer   string `json:"issuer"`
	ClientID string `json:"clientId"`
	// Token is the wharf token (secret); TokenID its id.
	Token     string    `json:"token"`
	TokenID   string    `json:"tokenId"`
	Role      string    `json:"role"`
	Subject   string    `json:"subject"`
	Email     string    `json:"email,omitempty"`
	Groups    []string  `json:"groups,omitempty"`
	ExpiresAt time.Time `json:"expiresAt"`
	// RefreshToken is the provider's, to renew the wharf token.
	RefreshToken string `json:"refreshToken,omitempty"`

	home string
	hc   *http.Client
	now  func() time.Time
	mu   sync.Mutex
}

// CorruptError is a login file that does not decode.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s: the login state does not decode: %v", e.Path, e.Err)
}
func (e *CorruptError) Unwrap() error { return e.Err }

// Hint is the next step.
func (e *CorruptError) Hint() string {
	return "run wharf logout (it removes the file), then wharf login"
}

// Load reads home's login state; nil (no error) when the user is not
// signed in. hc is the HTTP client of refreshes (nil: a 30 s timeout).
func Load(home string, hc *http.Client) (*State, error) {
	p := Path(home)
	raw, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, &CorruptError{p, err}
	}
	if s.Server == "" || s.Token == "" {
		return nil, &CorruptError{p, errors.New("no server or token")}
	}
	s.bind(home, hc)
	return &s, nil
}

func (s *State) bind(home string, hc *http.Client) {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	s.home, s.hc, s.now = home, hc, time.Now
}

// Save writes s to its home: 0600, temp file, fsync, rename.
func (s *State) Save() error {
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.home, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(Path(s.home), append(raw, '\n'), 0o600)
}

// Remove deletes home's login state (absent is fine).
func Remove(home string) error {
	err := os.Remove(Path(home))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// AuthConfig is the server's GET /v1/auth/config.
type AuthConfig struct {
	Issuer         string `json:"issuer"`
	DeviceClientID string `json:"deviceClientId"`
	Name           string `json:"name"`
}

type loginAnswer struct {
	ID        string     `json:"id"`
	Role      string     `json:"role"`
	Subject   string     `json:"subject"`
	Email     string     `json:"email"`
	Groups    []string   `json:"groups"`
	ExpiresAt *time.Time `json:"expiresAt"`
	Token     string     `json:"token"`
}

// NoDeviceLoginError is a server that does not offer wharf login.
type NoDeviceLoginError struct{ Server string }

func (e *NoDeviceLoginError) Error() string {
	return fmt.Sprintf("wharf server %s does not offer wharf login (no device client for its identity provider)", e.Server)
}

// Hint is the next step.
func (e *NoDeviceLoginError) Hint() string {
	return "ask the server's admin to set --oidc-device-client-id, or use a token an admin issues (--token)"
}

// Prompt shows the user where to approve the device, and the code.
type Prompt func(verificationURI, verificationURIComplete, userCode string)

// Login signs the user in to server through its provider's device flow
// and returns the state (not saved: the caller saves it in home).
func Login(ctx context.Context, home, server string, hc *http.Client, prompt Prompt) (*State, error) {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	cl, err := apiclient.New(server, "", hc)
	if err != nil {
		return nil, err
	}
	var ac AuthConfig
	if err := cl.Do(ctx, http.MethodGet, "/v1/auth/config", nil, &ac); err != nil {
		return nil, err
	}
	if ac.DeviceClientID == "" {
		return nil, &NoDeviceLoginError{Server: cl.Base}
	}
	s := &State{Server: cl.Base, Issuer: ac.Issuer, ClientID: ac.DeviceClientID}
	s.bind(home, hc)
	cfg, _, err := s.oauth(ctx)
	if err != nil {
		return nil, err
	}
	octx := oidc.ClientContext(ctx, hc)
	da, err := cfg.DeviceAuth(octx)
	if err != nil {
		return nil, fmt.Errorf("the identity provider %s refused the device authorization: %w", ac.Issuer, err)
	}
	prompt(da.VerificationURI, da.VerificationURIComplete, da.UserCode)
	tok, err := cfg.DeviceAccessToken(octx, da)
	if err != nil {
		return nil, fmt.Errorf("the device was not approved at %s: %w", ac.Issuer, err)
	}
	if err := s.exchange(ctx, tok); err != nil {
		return nil, err
	}
	return s, nil
}

// oauth discovers the provider and returns the device client's
// configuration and the provider's revocation endpoint ("" when it
// advertises none).
func (s *State) oauth(ctx context.Context) (*oauth2.Config, string, error) {
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, s.hc), s.Issuer)
	if err != nil {
		return nil, "", fmt.Errorf("the identity provider %s did not answer its discovery document: %w", s.Issuer, err)
	}
	var meta struct {
		Revocation string `json:"revocation_endpoint"`
	}
	_ = p.Claims(&meta)
	return &oauth2.Config{ClientID: s.ClientID, Endpoint: p.Endpoint(),
		Scopes: []string{oidc.ScopeOpenID, "email", "profile", oidc.ScopeOfflineAccess}}, meta.Revocation, nil
}

// exchange trades the provider's ID token for a wharf token.
func (s *State) exchange(ctx context.Context, tok *oauth2.Token) error {
	idt, _ := tok.Extra("id_token").(string)
	if idt == "" {
		return fmt.Errorf("the identity provider %s returned no ID token", s.Issuer)
	}
	cl, err := apiclient.New(s.Server, "", s.hc)
	if err != nil {
		return err
	}
	var ans loginAnswer
	if err := cl.Do(ctx, http.MethodPost, "/v1/auth/login", map[string]string{"idToken": idt}, &ans); err != nil {
		return err
	}
	if ans.Token == "" || ans.ExpiresAt == nil {
		return fmt.Errorf("wharf server %s answered the login without a token", s.Server)
	}
	s.Token, s.TokenID, s.Role, s.Subject, s.Email, s.Groups, s.ExpiresAt = ans.Token, ans.ID, ans.Role, ans.Subject, ans.Email, ans.Groups, *ans.ExpiresAt
	if tok.RefreshToken != "" {
		s.RefreshToken = tok.RefreshToken
	}
	return nil
}

// ExpiredError is a login whose wharf token expired and could not be
// renewed.
type ExpiredError struct {
	Server string
	Err    error
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("your login to %s expired and could not be renewed: %v", e.Server, e.Err)
}
func (e *ExpiredError) Unwrap() error { return e.Err }

// Hint is the next step.
func (e *ExpiredError) Hint() string { return "run wharf login --server " + e.Server }

// token is the wharf token, renewed first when it expires within a
// minute: the provider's refresh token gives a new ID token, which the
// server exchanges for a new wharf token; the state is saved.
func (s *State) token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.now().Add(time.Minute).Before(s.ExpiresAt) {
		return s.Token, nil
	}
	if s.RefreshToken == "" {
		return "", &ExpiredError{s.Server, errors.New("no refresh token")}
	}
	cfg, _, err := s.oauth(ctx)
	if err != nil {
		return "", &ExpiredError{s.Server, err}
	}
	old := &oauth2.Token{RefreshToken: s.RefreshToken, Expiry: time.Unix(1, 0)}
	tok, err := cfg.TokenSource(oidc.ClientContext(ctx, s.hc), old).Token()
	if err != nil {
		return "", &ExpiredError{s.Server, err}
	}
	if err := s.exchange(ctx, tok); err != nil {
		// The provider may have rotated its refresh token, spending the
		// old one: keep the new one even though the server refused, so
		// that the next renewal does not fail at the provider instead.
		if tok.RefreshToken != "" && tok.RefreshToken != s.RefreshToken {
			s.RefreshToken = tok.RefreshToken
			if serr := s.Save(); serr != nil {
				return "", serr
			}
		}
		return "", &ExpiredError{s.Server, err}
	}
	if err := s.Save(); err != nil {
		return "", err
	}
	return s.Token, nil
}

// Source is s as an apiclient.TokenSource.
func (s *State) Source() apiclient.TokenSource { return source{s} }

type source struct{ s *State }

func (x source) Token(ctx context.Context) (string, error) { return x.s.token(ctx) }

// Logout revokes the wharf token at the server and the refresh token at
// the provider (RFC 7009, when the provider advertises a revocation
// endpoint), then deletes the state. A token the server no longer knows
// is already revoked. It returns what it could not revoke as warnings.
func (s *State) Logout(ctx context.Context) (warnings []string, err error) {
	cl, err := apiclient.New(s.Server, s.Token, s.hc)
	if err != nil {
		return nil, err
	}
	if err := cl.Do(ctx, http.MethodPost, "/v1/auth/logout", nil, nil); err != nil {
		var ae *apiclient.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
			warnings = append(warnings, "the wharf token was not revoked: "+err.Error())
		}
	}
	if s.RefreshToken != "" {
		if w := s.revokeRefresh(ctx); w != "" {
			warnings = append(warnings, w)
		}
	}
	return warnings, Remove(s.home)
}

func (s *State) revokeRefresh(ctx context.Context) string {
	_, endpoint, err := s.oauth(ctx)
	if err != nil {
		return "the identity provider's refresh token was not revoked: " + err.Error()
	}
	if endpoint == "" {
		return "the identity provider advertises no revocation endpoint; its refresh token stays valid until it expires"
	}
	form := url.Values{"token": {s.RefreshToken}, "token_type_hint": {"refresh_token"}, "client_id": {s.ClientID}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err.Error()
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := s.hc.Do(req)
	if err != nil {
		return "the identity provider's refresh token was not revoked: " + err.Error()
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("the identity provider's refresh token was not revoked: %s answered %s", endpoint, resp.Status)
	}
	return ""
}

// SetClock replaces the clock (tests).
func (s *State) SetClock(now func() time.Time) { s.now = now }
