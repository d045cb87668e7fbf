// Package oidctest runs a real OpenID Provider in-process on 127.0.0.1 for
// tests: the protocol is zitadel/oidc's op package (discovery, JWKS,
// authorization code with PKCE, the device authorization grant, refresh
// tokens, token revocation); this package gives it in-memory storage, a
// fixed set of users with a groups claim, and the two pages a person
// would use: the login page of the authorization code flow and the page
// where a device's user code is approved. Tests drive those pages over
// HTTP (or in a browser) like a person would.
package oidctest

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// User is a person the provider knows. Subject is also the user name
// typed on the login and device pages.
type User struct {
	Subject string
	Email   string
	Groups  []string
}

// Client is a registered relying party. A confidential client (Secret set)
// uses the authorization code flow with PKCE; a public one (no Secret) is
// a device client (device authorization grant).
type Client struct {
	ID           string
	Secret       string
	RedirectURIs []string
}

// Options configure a Provider.
type Options struct {
	Users   []User
	Clients []Client
	// GroupsClaim names the claim that lists a user's groups ("groups"
	// when empty).
	GroupsClaim string
	// IDTokenLifetime and AccessTokenLifetime: 5 minutes when zero.
	IDTokenLifetime     time.Duration
	AccessTokenLifetime time.Duration
}

// Provider is a running OpenID Provider.
type Provider struct {
	// Issuer is the provider's issuer URL (http://127.0.0.1:port).
	Issuer string

	st  *storage
	op  *op.Provider
	srv *http.Server
}

// New starts a provider on 127.0.0.1 and stops it when the test ends.
func New(t testing.TB, o Options) *Provider {
	t.Helper()
	if o.GroupsClaim == "" {
		o.GroupsClaim = "groups"
	}
	if o.IDTokenLifetime == 0 {
		o.IDTokenLifetime = 5 * time.Minute
	}
	if o.AccessTokenLifetime == 0 {
		o.AccessTokenLifetime = 5 * time.Minute
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	st := &storage{opts: o, key: key, kid: randomHex(8),
		users: map[string]User{}, clients: map[string]Client{},
		requests: map[string]*authRequest{}, codes: map[string]string{},
		access: map[string]*accessToken{}, refresh: map[string]*refreshToken{},
		devices: map[string]*deviceEntry{}, userCodes: map[string]string{}}
	for _, u := range o.Users {
		st.users[u.Subject] = u
	}
	for _, c := range o.Clients {
		st.clients[c.ID] = c
	}
	var cryptoKey [32]byte
	if _, err := rand.Read(cryptoKey[:]); err != nil {
		t.Fatal(err)
	}
	prov, err := op.NewProvider(&op.Config{
		CryptoKey:             cryptoKey,
		CodeMethodS256:        true,
		AuthMethodPost:        true,
		GrantTypeRefreshToken: true,
		DeviceAuthorization: op.DeviceAuthorizationConfig{
			Lifetime:     5 * time.Minute,
			PollInterval: time.Second,
			UserFormPath: "/device",
			UserCode:     op.UserCodeBase20,
		},
	}, st, op.StaticIssuer(issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{Issuer: issuer, st: st, op: prov}
	mux := http.NewServeMux()
	intercept := op.NewIssuerInterceptor(prov.IssuerFromRequest)
	mux.Handle("/login", intercept.Handler(http.HandlerFunc(p.login)))
	mux.HandleFunc("/device", p.device)
	mux.Handle("/", prov)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	t.Cleanup(func() { _ = p.srv.Close() })
	return p
}

// SetUserGroups changes a user's groups (for tokens issued from now on).
func (p *Provider) SetUserGroups(subject string, groups []string) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	u := p.st.users[subject]
	u.Groups = groups
	p.st.users[subject] = u
}

// RefreshTokenLive reports whether the provider still accepts refresh
// token rt (false once it is revoked or rotated).
func (p *Provider) RefreshTokenLive(rt string) bool {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	_, ok := p.st.refresh[rt]
	return ok
}

// SigningKey is the provider's private signing key and its key id, for
// tests that forge tokens with the right key and wrong claims.
func (p *Provider) SigningKey() (*rsa.PrivateKey, string) { return p.st.key, p.st.kid }

// ApproveDevice plays the user: it opens the verification page with the
// user code and approves it as subject, through the provider's own pages.
func (p *Provider) ApproveDevice(ctx context.Context, userCode, subject string) error {
	form := url.Values{"user_code": {userCode}, "username": {subject}, "action": {"allow"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Issuer+"/device", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("approving device code %s: %s", userCode, resp.Status)
	}
	return nil
}

// userCodePrompt is how wharf login names the user code it waits for.
var userCodePrompt = regexp.MustCompile(`enter the code (\S+)`)

// ApproveDevicePrompt plays the user of a device-flow client that prints
// "enter the code CODE" (wharf login): it reads the client's output r to
// its end, copying each line to w, and approves the first code named as
// subject. It returns the approval's error.
func (p *Provider) ApproveDevicePrompt(r io.Reader, w io.Writer, subject string) error {
	sc := bufio.NewScanner(r)
	var err error
	approved := false
	for sc.Scan() {
		fmt.Fprintln(w, sc.Text())
		if m := userCodePrompt.FindStringSubmatch(sc.Text()); m != nil && !approved {
			approved = true
			err = p.ApproveDevice(context.Background(), m[1], subject)
		}
	}
	return err
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html><head><title>Test IdP sign-in</title></head><body>
<h1>Test IdP</h1>
{{if .Error}}<p id="error">{{.Error}}</p>{{end}}
<form method="post" action="/login">
<input type="hidden" name="id" value="{{.ID}}">
<label>User name <input id="username" name="username" autofocus></label>
<button id="submit" type="submit">Sign in</button>
</form></body></html>`))

var devicePage = template.Must(template.New("device").Parse(`<!doctype html>
<html><head><title>Test IdP device</title></head><body>
{{if .Done}}<p id="done">{{.Done}}</p>{{else}}
{{if .Error}}<p id="error">{{.Error}}</p>{{end}}
<form method="post" action="/device">
<label>Code <input name="user_code" value="{{.Code}}"></label>
<label>User name <input name="username"></label>
<button name="action" value="allow">Allow</button>
<button name="action" value="deny">Deny</button>
</form>{{end}}</body></html>`))

// login is the login page of the authorization code flow: a user name
// (no password: the users are the test's), then back to the provider's
// callback, which redirects to the client with the code.
func (p *Provider) login(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := r.Form.Get("authRequestID")
	if r.Method == http.MethodGet {
		_ = loginPage.Execute(w, map[string]string{"ID": id})
		return
	}
	id = r.Form.Get("id")
	name := r.Form.Get("username")
	if err := p.st.finishLogin(id, name); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_ = loginPage.Execute(w, map[string]string{"ID": id, "Error": err.Error()})
		return
	}
	http.Redirect(w, r, op.AuthCallbackURL(p.op)(r.Context(), id), http.StatusFound)
}

// device is the verification page of the device flow.
func (p *Provider) device(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	code := r.Form.Get("user_code")
	if r.Method == http.MethodGet {
		_ = devicePage.Execute(w, map[string]string{"Code": code})
		return
	}
	err := p.st.finishDevice(code, r.Form.Get("username"), r.Form.Get("action") == "allow")
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_ = devicePage.Execute(w, map[string]string{"Code": code, "Error": err.Error()})
		return
	}
	_ = devicePage.Execute(w, map[string]string{"Done": "Done: return to your device."})
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// storage is op.Storage in memory.
type storage struct {
	opts Options
	key  *rsa.PrivateKey
	kid  string

	mu        sync.Mutex
	users     map[string]User
	clients   map[string]Client
	requests  map[string]*authRequest
	codes     map[string]string // code → request id
	access    map[string]*accessToken
	refresh   map[string]*refreshToken // token → record
	devices   map[string]*deviceEntry  // device code → entry
	userCodes map[string]string        // user code → device code
}

type authRequest struct {
	id       string
	req      oidc.AuthRequest
	subject  string
	authTime time.Time
	done     bool
}

func (a *authRequest) GetID() string         { return a.id }
func (a *authRequest) GetACR() string        { return "" }
func (a *authRequest) GetAMR() []string      { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string { return []string{a.req.ClientID} }
func (a *authRequest) GetAuthTime() time.Time {
	return a.authTime
}
func (a *authRequest) GetClientID() string { return a.req.ClientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	if a.req.CodeChallenge == "" {
		return nil
	}
	return &oidc.CodeChallenge{Challenge: a.req.CodeChallenge, Method: a.req.CodeChallengeMethod}
}
func (a *authRequest) GetNonce() string                   { return a.req.Nonce }
func (a *authRequest) GetRedirectURI() string             { return a.req.RedirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType { return a.req.ResponseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode { return a.req.ResponseMode }
func (a *authRequest) GetScopes() []string                { return a.req.Scopes }
func (a *authRequest) GetState() string                   { return a.req.State }
func (a *authRequest) GetSubject() string                 { return a.subject }
func (a *authRequest) Done() bool                         { return a.done }

type accessToken struct {
	id, clientID, subject string
	audience, scopes      []string
	expires               time.Time
}

type refreshToken struct {
	token, clientID, subject string
	audience, scopes, amr    []string
	authTime                 time.Time
	accessID                 string
}

func (r *refreshToken) GetAMR() []string            { return r.amr }
func (r *refreshToken) GetAudience() []string       { return r.audience }
func (r *refreshToken) GetAuthTime() time.Time      { return r.authTime }
func (r *refreshToken) GetClientID() string         { return r.clientID }
func (r *refreshToken) GetScopes() []string         { return r.scopes }
func (r *refreshToken) GetSubject() string          { return r.subject }
func (r *refreshToken) SetCurrentScopes(s []string) { r.scopes = s }

type deviceEntry struct {
	userCode string
	state    *op.DeviceAuthorizationState
}

var errNotFound = errors.New("not found")

func (s *storage) finishLogin(id, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ar, ok := s.requests[id]
	if !ok {
		return errors.New("unknown or finished sign-in request")
	}
	if _, ok := s.users[name]; !ok {
		return fmt.Errorf("no user %q", name)
	}
	ar.subject, ar.done, ar.authTime = name, true, time.Now()
	return nil
}

func (s *storage) finishDevice(userCode, name string, allow bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.devices[s.userCodes[userCode]]
	if !ok || e.state.Done || e.state.Denied || !time.Now().Before(e.state.Expires) {
		return errors.New("unknown, used or expired code")
	}
	if !allow {
		e.state.Denied = true
		return nil
	}
	if _, ok := s.users[name]; !ok {
		return fmt.Errorf("no user %q", name)
	}
	e.state.Subject, e.state.Done, e.state.AuthTime, e.state.AMR = name, true, time.Now(), []string{"pwd"}
	return nil
}

func (s *storage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ar := &authRequest{id: randomHex(16), req: *req}
	s.requests[ar.id] = ar
	return ar, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ar, ok := s.requests[id]
	if !ok {
		return nil, errNotFound
	}
	return ar, nil
}

func (s *storage) AuthRequestByCode(_ context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ar, ok := s.requests[s.codes[code]]
	if !ok {
		return nil, errNotFound
	}
	return ar, nil
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest is called once the code is exchanged: the code is
// then spent.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for c, rid := range s.codes {
		if rid == id {
			delete(s.codes, c)
		}
	}
	return nil
}

func (s *storage) newAccess(req op.TokenRequest, clientID string) *accessToken {
	at := &accessToken{id: randomHex(16), clientID: clientID, subject: req.GetSubject(),
		audience: req.GetAudience(), scopes: req.GetScopes(), expires: time.Now().Add(s.opts.AccessTokenLifetime)}
	s.access[at.id] = at
	return at
}

func clientOf(req op.TokenRequest) string {
	if c, ok := req.(interface{ GetClientID() string }); ok {
		return c.GetClientID()
	}
	return ""
}

func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.newAccess(req, clientOf(req))
	return at.id, at.expires, nil
}

func (s *storage) CreateAccessAndRefreshTokens(_ context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	clientID := clientOf(req)
	var amr []string
	authTime := time.Now()
	if r, ok := req.(interface {
		GetAMR() []string
		GetAuthTime() time.Time
	}); ok {
		amr, authTime = r.GetAMR(), r.GetAuthTime()
	}
	if current != "" {
		old, ok := s.refresh[current]
		if !ok {
			return "", "", time.Time{}, op.ErrInvalidRefreshToken
		}
		delete(s.refresh, current) // rotation: the old one is spent
		delete(s.access, old.accessID)
	}
	at := s.newAccess(req, clientID)
	rt := &refreshToken{token: "rt_" + randomHex(24), clientID: clientID, subject: req.GetSubject(),
		audience: req.GetAudience(), scopes: req.GetScopes(), amr: amr, authTime: authTime, accessID: at.id}
	s.refresh[rt.token] = rt
	return at.id, rt.token, at.expires, nil
}

func (s *storage) TokenRequestByRefreshToken(_ context.Context, token string) (op.RefreshTokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rt, ok := s.refresh[token]
	if !ok {
		return nil, op.ErrInvalidRefreshToken
	}
	cp := *rt
	return &cp, nil
}

func (s *storage) TerminateSession(_ context.Context, userID, clientID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, rt := range s.refresh {
		if rt.subject == userID && rt.clientID == clientID {
			delete(s.refresh, k)
			delete(s.access, rt.accessID)
		}
	}
	return nil
}

func (s *storage) RevokeToken(_ context.Context, tokenOrID, _ string, clientID string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.access[tokenOrID]; ok {
		if at.clientID != clientID {
			return oidc.ErrInvalidClient().WithDescription("token was not issued to this client")
		}
		delete(s.access, tokenOrID)
		return nil
	}
	if rt, ok := s.refresh[tokenOrID]; ok {
		if rt.clientID != clientID {
			return oidc.ErrInvalidClient().WithDescription("token was not issued to this client")
		}
		delete(s.refresh, tokenOrID)
		delete(s.access, rt.accessID)
	}
	return nil // unknown tokens are already not valid (RFC 7009)
}

func (s *storage) GetRefreshTokenInfo(_ context.Context, _ string, token string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rt, ok := s.refresh[token]
	if !ok {
		return "", "", op.ErrInvalidRefreshToken
	}
	return rt.subject, rt.token, nil
}

type signingKey struct {
	key *rsa.PrivateKey
	kid string
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.key }
func (k signingKey) ID() string                                  { return k.kid }

type publicKey struct{ signingKey }

func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.key.PublicKey }

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	return signingKey{s.key, s.kid}, nil
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{publicKey{signingKey{s.key, s.kid}}}, nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return nil, fmt.Errorf("no client %q", id)
	}
	return &client{c: c, idLife: s.opts.IDTokenLifetime}, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok || c.Secret == "" || c.Secret != secret {
		return errors.New("invalid client credentials")
	}
	return nil
}

func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// SetUserinfoFromRequest puts the user's email and groups in the ID token.
func (s *storage) SetUserinfoFromRequest(_ context.Context, ui *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	return s.userinfo(ui, req.GetSubject(), scopes)
}

func (s *storage) userinfo(ui *oidc.UserInfo, subject string, scopes []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[subject]
	if !ok {
		return fmt.Errorf("no user %q", subject)
	}
	ui.Subject = u.Subject
	if slices.Contains(scopes, oidc.ScopeEmail) {
		ui.Email, ui.EmailVerified = u.Email, true
	}
	ui.AppendClaims(s.opts.GroupsClaim, slices.Clone(u.Groups))
	return nil
}

func (s *storage) SetUserinfoFromToken(_ context.Context, ui *oidc.UserInfo, tokenID, _ string, _ string) error {
	s.mu.Lock()
	at, ok := s.access[tokenID]
	s.mu.Unlock()
	if !ok || !time.Now().Before(at.expires) {
		return errors.New("token is invalid or expired")
	}
	return s.userinfo(ui, at.subject, at.scopes)
}

func (s *storage) SetIntrospectionFromToken(_ context.Context, ir *oidc.IntrospectionResponse, tokenID, subject, clientID string) error {
	s.mu.Lock()
	at, ok := s.access[tokenID]
	s.mu.Unlock()
	if !ok || !time.Now().Before(at.expires) || !slices.Contains(at.audience, clientID) {
		return errors.New("token is invalid")
	}
	ui := new(oidc.UserInfo)
	if err := s.userinfo(ui, subject, at.scopes); err != nil {
		return err
	}
	ir.SetUserInfo(ui)
	ir.Scope, ir.ClientID, ir.Expiration = at.scopes, at.clientID, oidc.FromTime(at.expires)
	return nil
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("JWT profile grants are not supported")
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("JWT profile grants are not supported")
}

func (s *storage) Health(context.Context) error { return nil }

func (s *storage) StoreDeviceAuthorization(_ context.Context, clientID, deviceCode, userCode string, expires time.Time, scopes []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.clients[clientID]; !ok {
		return fmt.Errorf("no client %q", clientID)
	}
	if _, ok := s.userCodes[userCode]; ok {
		return op.ErrDuplicateUserCode
	}
	s.devices[deviceCode] = &deviceEntry{userCode: userCode,
		state: &op.DeviceAuthorizationState{ClientID: clientID, Scopes: scopes, Expires: expires}}
	s.userCodes[userCode] = deviceCode
	return nil
}

func (s *storage) GetDeviceAuthorizatonState(_ context.Context, clientID, deviceCode string) (*op.DeviceAuthorizationState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.devices[deviceCode]
	if !ok || e.state.ClientID != clientID {
		return nil, errNotFound
	}
	cp := *e.state
	if cp.Done {
		// A device code gives tokens once.
		delete(s.devices, deviceCode)
		delete(s.userCodes, e.userCode)
	}
	return &cp, nil
}

// client is op.Client over a Client.
type client struct {
	c      Client
	idLife time.Duration
}

func (c *client) GetID() string                    { return c.c.ID }
func (c *client) RedirectURIs() []string           { return c.c.RedirectURIs }
func (c *client) PostLogoutRedirectURIs() []string { return nil }
func (c *client) ApplicationType() op.ApplicationType {
	if c.c.Secret == "" {
		return op.ApplicationTypeNative
	}
	return op.ApplicationTypeWeb
}
func (c *client) AuthMethod() oidc.AuthMethod {
	if c.c.Secret == "" {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic
}
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken, oidc.GrantTypeDeviceCode}
}
func (c *client) LoginURL(id string) string            { return "/login?authRequestID=" + url.QueryEscape(id) }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeBearer }
func (c *client) IDTokenLifetime() time.Duration       { return c.idLife }
func (c *client) DevMode() bool                        { return true } // http redirects to loopback
func (c *client) IsScopeAllowed(string) bool           { return false }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
