package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/policystate"
	"github.com/wharfhq/wharf/internal/server/sessions"
	"github.com/wharfhq/wharf/internal/server/web"
	"github.com/wharfhq/wharf/plugin"
)

// The web console: server-rendered pages under /ui/ over the same services
// as /v1. It has its own echo instance because it authenticates with a
// cookie instead of a bearer header and answers errors with HTML pages
// instead of JSON; the API's authorization matrix (routes.go) stays the
// table of /v1. The console reaches the API's services in-process: the
// catalog, the policy decider, and for writes and the audit log the /v1
// handlers themselves, so that validation, If-Match versions, history and
// audit entries are the API's own.

const (
	// sessionCookie holds the id of a server-side session (session.go),
	// never the token (HttpOnly, SameSite=Strict, Path=/ui, Secure over
	// TLS). Revoking the token ends every session that uses it.
	sessionCookie = "wharf_session"
	// signinCookie holds the random value the sign-in form must echo
	// (double-submit), so another site cannot sign a browser in.
	signinCookie = "wharf_signin"
	// csrfField is the hidden form field of every POST form.
	csrfField = "csrf"

	uiSecretKey = "wharf.ui.secret"

	// maxGraphNodes bounds the dependency graph drawn on a plugin page.
	maxGraphNodes = 200
	auditPageSize = 50
	// catalogPageSize is how many plugins a catalog page shows.
	catalogPageSize = 100
)

type console struct {
	s *Server
	r *web.Renderer
	e *echo.Echo
}

// newConsole builds the console's router with the API's middleware
// (recover, metrics and logs, body limit and deadline).
func newConsole(s *Server) (*console, error) {
	r, err := web.NewRenderer()
	if err != nil {
		return nil, err
	}
	u := &console{s: s, r: r}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = u.errorHandler
	e.IPExtractor = ipExtractor(s.deps.TrustedProxies)
	e.Use(s.middleware, u.headers)

	toCatalog := func(c echo.Context) error { return c.Redirect(http.StatusFound, "/ui/") }
	e.GET("/", toCatalog)
	e.GET("/ui", toCatalog)
	e.GET("/ui/static/*", echo.WrapHandler(web.StaticHandler("/ui/static/")))
	e.GET("/ui/signin", u.signinForm)
	e.POST("/ui/signin", u.signin)
	e.GET("/ui/oidc/start", u.oidcStart)       // ui_signin.go
	e.GET("/ui/oidc/callback", u.oidcCallback) // ui_signin.go

	anyRole := u.session(nil)
	admin := u.session(adminOnly)
	e.POST("/ui/signout", u.signout, anyRole)
	e.GET("/ui/", u.catalogPage, anyRole)
	e.GET("/ui/plugins/:marketplace/:name", u.pluginPage, anyRole)
	e.GET("/ui/channels", u.channelsPage, anyRole)
	e.GET("/ui/channels/:name", u.s.forChannel(u.channelPage), anyRole) // a hidden channel is not built for its 404
	e.GET("/ui/admin/policy", u.policyPage, admin)
	e.GET("/ui/admin/policy/edit", u.editLayer, admin)
	e.GET("/ui/admin/policy/layers/:layer", u.layerPage, admin)
	e.POST("/ui/admin/policy/layers/:layer/preview", u.layerPreview, admin)
	e.POST("/ui/admin/policy/layers/:layer/save", u.layerSave, admin)
	e.GET("/ui/admin/audit", u.auditPage, admin)
	u.fleetRoutes(e)       // ui_fleet.go
	u.approvalRoutes(e)    // ui_approvals.go
	u.toolPinRoutes(e)     // ui_toolpins.go
	u.requestRoutes(e)     // ui_requests.go
	u.marketplaceRoutes(e) // ui_marketplaces.go
	u.tokenRoutes(e)       // ui_tokens.go
	u.layerRoutes(e)       // ui_layers.go
	u.e = e
	return u, nil
}

// owns reports whether path is the console's: Server.ServeHTTP sends those
// requests to the console's router, everything else to the API's.
func (u *console) owns(path string) bool {
	return path == "/" || path == "/ui" || strings.HasPrefix(path, "/ui/")
}

// headers sets the security headers of every console response: no script,
// no framing, no third-party anything.
func (u *console) headers(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		if !strings.HasPrefix(c.Request().URL.Path, "/ui/static/") {
			h.Set("Cache-Control", "no-store")
		}
		return next(c)
	}
}

// render writes a page with status.
func (u *console) render(c echo.Context, status int, page string, data any) error {
	var buf bytes.Buffer
	if err := u.r.Render(&buf, page, data); err != nil {
		return err
	}
	return c.HTMLBlob(status, buf.Bytes())
}

// errorHandler renders every error as a page: the API's error mapping
// decides the status and the message.
func (u *console) errorHandler(err error, c echo.Context) {
	ae := toAPIError(u.s.storeError(err))
	if ae.Status >= 500 {
		u.s.log.Error("console request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	if c.Response().Committed {
		return
	}
	if ae.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
	}
	heading := map[int]string{
		http.StatusBadRequest:          "Bad request",
		http.StatusUnauthorized:        "Sign-in needed",
		http.StatusForbidden:           "Not allowed",
		http.StatusNotFound:            "Not found",
		http.StatusMethodNotAllowed:    "Method not allowed",
		http.StatusTooManyRequests:     "Too many requests",
		http.StatusInsufficientStorage: "Out of disk space",
	}[ae.Status]
	if heading == "" {
		heading = http.StatusText(ae.Status)
	}
	msg := ae.Message
	if ae.Status == http.StatusNotFound && ae.Code == CodeNotFound && strings.HasPrefix(msg, "no such route") {
		msg = "There is no console page at " + c.Request().URL.Path + "."
	}
	v := web.ErrorView{Layout: u.layout(c, heading, ""), Status: ae.Status, Heading: heading, Message: msg}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(ae.Status)
		return
	}
	if werr := u.render(c, ae.Status, web.PageError, v); werr != nil {
		u.s.log.Error("render error page", "err", werr)
		_ = c.String(ae.Status, msg)
	}
}

// csrfToken derives the per-session form token from the session's id:
// only a page rendered for this session knows it, and replicas agree on it
// without more shared state than the session.
func csrfToken(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("wharf console csrf v1"))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

func (u *console) layout(c echo.Context, title, nav string) web.Layout {
	l := web.Layout{Title: title, Nav: nav}
	if p, ok := c.Get(principalKey).(principal); ok && p.TokenID != "" {
		l.SignedIn, l.Role, l.TokenID, l.IsAdmin = true, string(p.Role), p.TokenID, p.Role == RoleAdmin
		l.User = p.Who.Email
		if l.User == "" {
			l.User = p.Who.Subject
		}
		if secret, ok := c.Get(uiSecretKey).(string); ok {
			l.CSRF = csrfToken(secret)
		}
	}
	return l
}

func (u *console) cookie(c echo.Context, name, value, path string, maxAge int) {
	c.SetCookie(&http.Cookie{Name: name, Value: value, Path: path, MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: u.s.overTLS(c.Request())})
}

// session requires a signed-in user with one of roles (nil: any role) and,
// on POST, the session's CSRF token.
func (u *console) session(roles []Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			var tok *tokenRecord
			secret := "" // the session id
			if ck, err := c.Cookie(sessionCookie); err == nil {
				secret = ck.Value
			}
			if secret != "" {
				var err error
				if tok, err = sessions.Token(u.s.deps.Store, secret, u.s.now()); err != nil {
					return err
				}
			}
			req := c.Request()
			if tok != nil && tok.Expired(u.s.now()) {
				u.cookie(c, sessionCookie, "", "/ui", -1)
				if req.Method == http.MethodGet || req.Method == http.MethodHead {
					return c.Redirect(http.StatusSeeOther, "/ui/signin?next="+url.QueryEscape(req.URL.RequestURI()))
				}
				u.s.auditRefusal(c, http.StatusUnauthorized, tok.ID, tok.Role, "expired token")
				return apiErr(http.StatusUnauthorized, CodeUnauthorized, "", "your session has ended: %s", tok.ExpiredMessage())
			}
			if tok == nil {
				if secret != "" {
					u.cookie(c, sessionCookie, "", "/ui", -1)
				}
				if req.Method == http.MethodGet || req.Method == http.MethodHead {
					return c.Redirect(http.StatusSeeOther, "/ui/signin?next="+url.QueryEscape(req.URL.RequestURI()))
				}
				u.s.auditRefusal(c, http.StatusUnauthorized, "", "", "unknown or ended session")
				return apiErr(http.StatusUnauthorized, CodeUnauthorized, "", "your session has ended (it expired, you signed out, or the token was revoked); sign in again")
			}
			c.Set(principalKey, principal{TokenID: tok.ID, Role: tok.Role, Who: tok.Identity})
			c.Set(uiSecretKey, secret)
			if err := u.s.allow(tok.ID); err != nil {
				return err
			}
			u.s.noteUse(tok.ID)
			if req.Method == http.MethodPost {
				got := c.FormValue(csrfField)
				if subtle.ConstantTimeCompare([]byte(got), []byte(csrfToken(secret))) != 1 {
					u.s.auditRefusal(c, http.StatusForbidden, tok.ID, tok.Role, "missing or stale CSRF token")
					return apiErr(http.StatusForbidden, CodeForbidden, csrfField, "this form is not from your current session (missing or stale CSRF token); reload the page and submit again")
				}
			}
			if roles != nil && !roleAllowed(roles, tok.Role) {
				u.s.auditRefusal(c, http.StatusForbidden, tok.ID, tok.Role, "role not allowed")
				return apiErr(http.StatusForbidden, CodeForbidden, "",
					"this page is for the %s role; you are signed in with a %s token", joinRoles(roles), tok.Role)
			}
			return next(c)
		}
	}
}

// safeNext keeps a post-sign-in destination only when it is a console path
// on this server.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/ui/") || strings.ContainsAny(next, "\\\r\n") {
		return "/ui/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(u.Path, "/ui/") {
		return "/ui/"
	}
	return next
}

func (u *console) signinForm(c echo.Context) error {
	if ck, err := c.Cookie(sessionCookie); err == nil && ck.Value != "" {
		if tok, err := sessions.Token(u.s.deps.Store, ck.Value, u.s.now()); err == nil && tok != nil && !tok.Expired(u.s.now()) {
			return c.Redirect(http.StatusSeeOther, safeNext(c.QueryParam("next")))
		}
	}
	return u.renderSignin(c, http.StatusOK, nil)
}

func (u *console) renderSignin(c echo.Context, status int, msgs []web.Message) error {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	formCSRF := hex.EncodeToString(b[:])
	u.cookie(c, signinCookie, formCSRF, "/ui/signin", 3600)
	l := web.Layout{Title: "Sign in", Messages: msgs}
	next := c.QueryParam("next")
	if c.Request().Method == http.MethodPost {
		next = c.FormValue("next")
	}
	v := web.SignInView{Layout: l, Next: safeNext(next), FormCSRF: formCSRF}
	if id := u.s.deps.Identity; id != nil {
		v.SSOName = id.Config().Name
	}
	return u.render(c, status, web.PageSignIn, v)
}

func (u *console) signin(c echo.Context) error {
	// Guessing tokens through the form costs from the same budget as the
	// API, per client address.
	if err := u.s.allowClient(c, "console-signin"); err != nil {
		return err
	}
	ck, err := c.Cookie(signinCookie)
	form := c.FormValue(csrfField)
	if err != nil || ck.Value == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(form)) != 1 {
		u.s.auditRefusal(c, http.StatusForbidden, "", "", "sign-in form without its cookie")
		return u.renderSignin(c, http.StatusForbidden, []web.Message{{Kind: "error",
			Text: "The sign-in form expired or did not come from this site; enter the token again."}})
	}
	secret := strings.TrimSpace(c.FormValue("token"))
	if secret == "" {
		return u.renderSignin(c, http.StatusBadRequest, []web.Message{{Kind: "error", Text: "Enter a token."}})
	}
	tok, err := u.s.lookupToken(secret)
	if err != nil {
		return err
	}
	if tok == nil {
		u.s.auditRefusal(c, http.StatusUnauthorized, "", "", "sign-in with an unknown or revoked token")
		return u.renderSignin(c, http.StatusUnauthorized, []web.Message{{Kind: "error",
			Text: "That token is unknown or was revoked; ask an admin for a new one (wharf token create --role developer)."}})
	}
	if tok.Expired(u.s.now()) {
		u.s.auditRefusal(c, http.StatusUnauthorized, tok.ID, tok.Role, "sign-in with an expired token")
		return u.renderSignin(c, http.StatusUnauthorized, []web.Message{{Kind: "error", Text: "That token has expired: " + tok.ExpiredMessage() + "."}})
	}
	id, err := sessions.Start(u.s.deps.Store, tok, u.s.now())
	if err != nil {
		return err
	}
	u.cookie(c, signinCookie, "", "/ui/signin", -1)
	u.cookie(c, sessionCookie, id, "/ui", 0)
	return c.Redirect(http.StatusSeeOther, safeNext(c.FormValue("next")))
}

// signout ends the session in the store, so its cookie is worthless
// wherever a copy of it went.
func (u *console) signout(c echo.Context) error {
	if id, ok := c.Get(uiSecretKey).(string); ok && id != "" {
		if err := sessions.End(u.s.deps.Store, id); err != nil {
			return err
		}
	}
	if err := u.endSignedIn(c); err != nil { // ui_signin.go
		return err
	}
	u.cookie(c, sessionCookie, "", "/ui", -1)
	return c.Redirect(http.StatusSeeOther, "/ui/signin")
}

func decisionView(d Decision) web.DecisionView {
	v := web.DecisionView{Allowed: d.Allowed, Forced: d.Forced, Warnings: d.Warnings}
	switch {
	case d.Forced == "on":
		v.Label = "forced on"
	case d.Forced == "off":
		v.Label = "forced off"
	case !d.Allowed:
		v.Label = "blocked"
	default:
		v.Label = "allowed"
	}
	for _, r := range d.Reasons {
		v.Reasons = append(v.Reasons, web.ReasonView{Layer: r.Layer, Rule: r.Rule, Message: r.Message})
	}
	return v
}

// peek asks the policy about a plugin a page lists. Unlike decide it does
// not write denials to the audit log: listing the catalog asks for nothing.
func peek(ctx context.Context, eng Decider, version string, in DecisionInput) (Decision, error) {
	dec, err := eng.Decide(ctx, in)
	if err != nil {
		return Decision{}, fmt.Errorf("policy decision for %s: %w", in.Plugin, err)
	}
	dec.PolicyVersion = version
	return dec, nil
}

func pluginURL(id plugin.ID) string {
	return "/ui/plugins/" + url.PathEscape(id.Source) + "/" + url.PathEscape(id.Name)
}

func pluginRow(s PluginSummary, dec Decision) web.PluginRow {
	id := plugin.ID{Name: s.Name, Source: s.Marketplace}
	return web.PluginRow{ID: id.String(), Name: s.Name, Marketplace: s.Marketplace, Version: s.Version,
		Description: s.Description, Category: s.Category, Tags: s.Tags, URL: pluginURL(id), Decision: decisionView(dec)}
}

func options(values []string, selected string) []web.Option {
	out := make([]web.Option, 0, len(values))
	for _, v := range values {
		out = append(out, web.Option{Value: v, Label: v, Selected: v == selected})
	}
	return out
}

func (u *console) catalogPage(c echo.Context) error {
	cat, err := u.s.catalog()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	q := web.CatalogQuery{Text: c.QueryParam("q"), Marketplace: c.QueryParam("marketplace"), Category: c.QueryParam("category"),
		Tag: c.QueryParam("tag"), Decision: c.QueryParam("decision")}
	if len(q.Text) > 256 {
		return badField("q", "the search text is %d bytes; the limit is 256", len(q.Text))
	}
	if q.Marketplace != "" {
		if err := plugin.ValidateName(q.Marketplace); err != nil {
			return badField("marketplace", "marketplace: %v", err)
		}
	}
	if q.Decision != "" && q.Decision != "allowed" && q.Decision != "blocked" {
		return badField("decision", "decision %q must be allowed or blocked", q.Decision)
	}
	mkts, err := cat.Marketplaces(ctx)
	if err != nil {
		return err
	}
	all, err := cat.Search(ctx, SearchQuery{})
	if err != nil {
		return err
	}
	hits, err := cat.Search(ctx, SearchQuery{Text: q.Text, Marketplace: q.Marketplace, Category: q.Category})
	if err != nil {
		return err
	}
	eng, version, err := u.s.deciderFor(ctx, u.s.caller(c))
	if err != nil {
		return err
	}
	offset, err := offsetCursor(c)
	if err != nil {
		return err
	}
	v := web.CatalogView{Layout: u.layout(c, "Catalog", "catalog"), Query: q, Total: len(all), PolicyVersion: version}
	// A page of the matches: the cursor counts the matches before it.
	// Without a decision filter the matches are counted without deciding
	// them; with one, every hit is decided (the filter needs it).
	matched := 0
	for _, h := range hits {
		if q.Tag != "" && !containsString(h.Tags, q.Tag) {
			continue
		}
		if q.Decision == "" {
			matched++
			if matched <= offset || len(v.Plugins) == catalogPageSize {
				continue
			}
		}
		id := plugin.ID{Name: h.Name, Source: h.Marketplace}
		d, err := cat.Plugin(ctx, id)
		if err != nil {
			return err
		}
		dec, err := peek(ctx, eng, version, decisionInput(id, d, plugin.ID{}))
		if err != nil {
			return err
		}
		if q.Decision != "" {
			if (q.Decision == "allowed" && !dec.Allowed) || (q.Decision == "blocked" && dec.Allowed) {
				continue
			}
			matched++
			if matched <= offset || len(v.Plugins) == catalogPageSize {
				continue
			}
		}
		// The detail's summary has the manifest's version when the entry has none.
		v.Plugins = append(v.Plugins, pluginRow(d.PluginSummary, dec))
	}
	v.Matched = matched
	if len(v.Plugins) > 0 {
		v.First, v.Last = offset+1, offset+len(v.Plugins)
	}
	page := func(at int) string {
		next := c.Request().URL.Query()
		next.Del("cursor")
		if at > 0 {
			next.Set("cursor", strconv.Itoa(at))
		}
		if len(next) == 0 {
			return "/ui/"
		}
		return "/ui/?" + next.Encode()
	}
	if offset+len(v.Plugins) < matched {
		v.NextURL = page(offset + catalogPageSize)
	}
	if offset > 0 {
		v.PrevURL = page(max(0, offset-catalogPageSize))
	}
	var names, cats, tags []string
	for _, m := range mkts {
		names = append(names, m.Name)
	}
	for _, h := range all {
		if h.Category != "" && !containsString(cats, h.Category) {
			cats = append(cats, h.Category)
		}
		for _, t := range h.Tags {
			if !containsString(tags, t) {
				tags = append(tags, t)
			}
		}
	}
	sort.Strings(names)
	sort.Strings(cats)
	sort.Strings(tags)
	v.Marketplaces, v.Categories, v.Tags = options(names, q.Marketplace), options(cats, q.Category), options(tags, q.Tag)
	v.Decisions = []web.Option{
		{Value: "", Label: "Allowed or blocked", Selected: q.Decision == ""},
		{Value: "allowed", Label: "Allowed for me", Selected: q.Decision == "allowed"},
		{Value: "blocked", Label: "Blocked for me", Selected: q.Decision == "blocked"},
	}
	return u.render(c, http.StatusOK, web.PageCatalog, v)
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

var kindTitles = map[plugin.ComponentKind]string{
	plugin.KindCommand: "Commands", plugin.KindSkill: "Skills", plugin.KindAgent: "Agents",
	plugin.KindOutputStyle: "Output styles", plugin.KindHook: "Hooks",
	plugin.KindMCPServer: "MCP servers", plugin.KindLSPServer: "LSP servers",
}

// namespaceOf is the prefix an agent gives d's components: the plugin.json
// name when the server loaded the plugin, else the entry's name.
func namespaceOf(d PluginDetail) string {
	if d.Namespace != "" {
		return d.Namespace
	}
	return d.Name
}

func componentGroups(pluginName string, comps []Component) []web.ComponentGroup {
	var out []web.ComponentGroup
	seen := map[string]bool{}
	add := func(kind string) {
		g := web.ComponentGroup{Kind: kind, Title: kindTitles[plugin.ComponentKind(kind)]}
		if g.Title == "" {
			g.Title = kind
		}
		for _, c := range comps {
			if c.Kind == kind {
				g.Items = append(g.Items, web.ComponentItem{Name: c.Name, Namespaced: plugin.ComponentName(plugin.ComponentKind(c.Kind), pluginName, c.Name), Path: c.Path})
			}
		}
		if len(g.Items) > 0 {
			out = append(out, g)
		}
		seen[kind] = true
	}
	for _, k := range plugin.ComponentKinds {
		add(string(k))
	}
	for _, c := range comps {
		if !seen[c.Kind] {
			add(c.Kind)
		}
	}
	return out
}

func (u *console) pluginPage(c echo.Context) error {
	cat, id, d, err := u.s.pluginAt(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	eng, version, err := u.s.deciderFor(ctx, u.s.caller(c))
	if err != nil {
		return err
	}
	// The viewer's own decision is asked for like GET /v1/plugins/...: a
	// denial is audited.
	dec, err := u.s.decide(ctx, eng, version, decisionInput(id, d, plugin.ID{}), u.s.caller(c))
	if err != nil {
		return err
	}
	v := web.PluginView{Layout: u.layout(c, d.Name+"@"+d.Marketplace, "catalog"), Plugin: pluginRow(d.PluginSummary, dec),
		Components: componentGroups(namespaceOf(d), d.Components), Digest: d.Digest, PolicyVersion: version}
	graph, states, err := u.dependencyGraph(ctx, cat, eng, version, id, d)
	if err != nil {
		return err
	}
	v.Graph = graph
	for _, dep := range d.Dependencies {
		did := dep.Resolve(id.Source)
		row := web.DependencyRow{ID: did.String(), State: states[did]}
		if row.State != "missing" {
			row.URL = pluginURL(did)
		}
		v.Dependencies = append(v.Dependencies, row)
	}
	v.SignatureStatus, v.Signatures, err = u.signatures(ctx, d)
	if err != nil {
		return err
	}
	if v.Fleet, err = u.fleetSummary(ctx, c, id); err != nil {
		return err
	}
	if cr, ok := cat.(capabilityReader); ok {
		switch rep, err := cr.Capabilities(ctx, id); {
		case err != nil:
			v.CapabilitiesError = err.Error()
		case rep != nil:
			v.Capabilities = capabilitiesView(rep)
		}
	}
	return u.render(c, http.StatusOK, web.PagePlugin, v)
}

// capabilityReader is a catalog that can read a plugin's capability set
// from its files.
type capabilityReader interface {
	// Capabilities returns the report of the plugin's tree as the
	// catalog holds it now; nil when it does not hold the files.
	Capabilities(ctx context.Context, id plugin.ID) (*capability.Report, error)
}

// dependencyGraph walks the dependency closure of root breadth first and
// lays it out; states gives each dependency's state (allowed, blocked or
// missing) as a dependency of the plugin that first reached it.
func (u *console) dependencyGraph(ctx context.Context, cat Catalog, eng Decider, version string, root plugin.ID, rd PluginDetail) (web.Graph, map[plugin.ID]string, error) {
	states := map[plugin.ID]string{root: "root"}
	details := map[plugin.ID]PluginDetail{root: rd}
	nodes := []web.GraphNode{{ID: root.String(), Label: root.String(), URL: pluginURL(root), State: "root"}}
	var edges []web.GraphEdge
	queue := []plugin.ID{root}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, dep := range details[cur].Dependencies {
			did := dep.Resolve(cur.Source)
			edges = append(edges, web.GraphEdge{From: cur.String(), To: did.String()})
			if _, seen := states[did]; seen || len(nodes) >= maxGraphNodes {
				continue
			}
			n := web.GraphNode{ID: did.String(), Label: did.String()}
			dd, err := cat.Plugin(ctx, did)
			var pe *plugin.Error
			switch {
			case errors.As(err, &pe) && pe.Type == plugin.TypeNotFound:
				n.State = "missing"
			case err != nil:
				return web.Graph{}, nil, err
			default:
				dec, err := peek(ctx, eng, version, decisionInput(did, dd, cur))
				if err != nil {
					return web.Graph{}, nil, err
				}
				n.State, n.URL = "allowed", pluginURL(did)
				if !dec.Allowed {
					n.State = "blocked"
				}
				details[did] = dd
				queue = append(queue, did)
			}
			states[did] = n.State
			nodes = append(nodes, n)
		}
	}
	return web.LayoutGraph(root.String(), nodes, edges), states, nil
}

// signatures checks the published signatures over the published digest.
func (u *console) signatures(ctx context.Context, d PluginDetail) (string, []web.SignatureRow, error) {
	switch {
	case len(d.Signatures) == 0:
		return "unsigned: the marketplace publishes no signature for this plugin", nil, nil
	case d.Digest == "":
		return fmt.Sprintf("%d signatures published, but no digest to check them against", len(d.Signatures)), nil, nil
	case u.s.deps.Verifier == nil:
		return "cannot be checked: this server has no signature verifier configured", nil, nil
	}
	id, err := plugin.ParseID(d.ID)
	if err != nil {
		return "", nil, err
	}
	verdicts, err := u.s.deps.Verifier.VerifySignatures(ctx, SignedSubject{Plugin: id, Version: d.Version, Digest: d.Digest}, d.Signatures)
	if err != nil {
		return "", nil, err
	}
	var rows []web.SignatureRow
	good := 0
	for _, v := range verdicts {
		e := v.Error
		if v.Valid && v.Legacy {
			e = trust.LegacyWarning(v.KeyID)
		}
		rows = append(rows, web.SignatureRow{KeyID: v.KeyID, Valid: v.Valid, Trusted: v.Trusted, Error: e})
		if v.Valid && v.Trusted {
			good++
		}
	}
	if good == 0 {
		return fmt.Sprintf("not trusted: none of %d signatures is valid and by a trusted key", len(rows)), rows, nil
	}
	return fmt.Sprintf("signed: %d of %d signatures valid and by a trusted key", good, len(rows)), rows, nil
}

func (u *console) policyPage(c echo.Context) error {
	head, layers, err := u.s.pol.Current()
	if err != nil {
		return err
	}
	v := web.PolicyView{Layout: u.layout(c, "Policy", "policy"), Version: head.Version, Revision: head.Revision}
	if d := c.QueryParam("deleted"); d != "" && layerNameRE.MatchString(d) {
		v.Messages = append(v.Messages, web.Message{Kind: "ok", Text: "Deleted layer " + d + "; restore it from its history at /ui/admin/policy/layers/" + d + "."})
	}
	for _, l := range layers {
		v.Layers = append(v.Layers, web.LayerRow{Name: l.Name, Rank: l.Rank, Version: l.Version, Keys: settingsKeys(l.Settings),
			Modules: len(l.Modules), UpdatedAt: l.UpdatedAt, UpdatedBy: l.UpdatedBy, URL: "/ui/admin/policy/layers/" + l.Name})
	}
	return u.render(c, http.StatusOK, web.PagePolicy, v)
}

func settingsKeys(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// editLayer is the target of the new-layer form.
func (u *console) editLayer(c echo.Context) error {
	name := strings.TrimSpace(c.QueryParam("layer"))
	if !layerNameRE.MatchString(name) {
		return badField("layer", "layer name %q must be lower-case letters, digits and _, starting with a letter", name)
	}
	return c.Redirect(http.StatusSeeOther, "/ui/admin/policy/layers/"+name)
}

// readLayer returns the stored layer, or nil.
func (u *console) readLayer(name string) (*Layer, error) { return u.s.pol.Layer(name) }

func (u *console) layerView(c echo.Context, name string) (web.LayerView, *Layer, error) {
	if !layerNameRE.MatchString(name) {
		return web.LayerView{}, nil, badField("layer", "layer name %q must be lower-case letters, digits and _, starting with a letter", name)
	}
	l, err := u.readLayer(name)
	if err != nil {
		return web.LayerView{}, nil, err
	}
	v := web.LayerView{Layout: u.layout(c, "Policy layer "+name, "policy"), Name: name, New: l == nil, Rank: defaultLayerRank, Settings: "{\n}"}
	if l != nil {
		v.Version, v.Rank = l.Version, l.Rank
		var pretty bytes.Buffer
		if json.Indent(&pretty, l.Settings, "", "  ") == nil {
			v.Settings = pretty.String()
		} else {
			v.Settings = string(l.Settings)
		}
		for m := range l.Modules {
			v.Modules = append(v.Modules, m)
		}
		sort.Strings(v.Modules)
	}
	if v.RankHelp, err = u.rankHelp(); err != nil {
		return web.LayerView{}, nil, err
	}
	if v.History, err = u.layerHistory(name, l); err != nil {
		return web.LayerView{}, nil, err
	}
	return v, l, nil
}

func (u *console) layerPage(c echo.Context) error {
	v, _, err := u.layerView(c, c.Param("layer"))
	if err != nil {
		return err
	}
	v.Saved = c.QueryParam("saved") != ""
	v.Restored, _ = strconv.ParseUint(c.QueryParam("restored"), 10, 64)
	return u.render(c, http.StatusOK, web.PageLayer, v)
}

// layerEdit is an edit as posted by the editor: the layer version it
// started from, the rank and the settings text.
type layerEdit struct {
	version uint64
	rank    int
	body    layerBody
}

// readEdit parses and validates the posted form into v. Problems with the
// settings text are returned as messages for the editor; a nil edit with
// no error means v.Errors says what is wrong.
func (u *console) readEdit(c echo.Context, v *web.LayerView, current *Layer) (*layerEdit, error) {
	v.Settings = c.FormValue("settings")
	version, err := strconv.ParseUint(c.FormValue("version"), 10, 64)
	if err != nil {
		return nil, badField("version", "version %q is not a layer version; reload the editor", c.FormValue("version"))
	}
	rank, err := strconv.Atoi(strings.TrimSpace(c.FormValue("rank")))
	if err != nil {
		v.Errors = append(v.Errors, fmt.Sprintf("rank %q is not a whole number", c.FormValue("rank")))
		rank = v.Rank
	}
	v.Version, v.Rank = version, rank
	// Syntax first, with line and column in the text as typed; the shape is
	// the API's validation below.
	var doc any
	if err := decodeJSON([]byte(v.Settings), &doc); err != nil {
		v.Errors = append(v.Errors, "settings: "+toAPIError(err).Message)
	}
	if len(v.Errors) > 0 {
		return nil, nil
	}
	e := &layerEdit{version: version, rank: rank, body: layerBody{Settings: json.RawMessage(v.Settings)}}
	if current != nil {
		e.body.Modules = current.Modules
	}
	if current == nil || current.Rank != rank {
		e.body.Rank = &e.rank
	}
	if err := validateLayerBody(&e.body); err != nil {
		v.Errors = append(v.Errors, toAPIError(err).Message)
		return nil, nil
	}
	return e, nil
}

func (u *console) layerPreview(c echo.Context) error {
	v, current, err := u.layerView(c, c.Param("layer"))
	if err != nil {
		return err
	}
	edit, err := u.readEdit(c, &v, current)
	if err != nil {
		return err
	}
	if edit == nil {
		return u.render(c, http.StatusUnprocessableEntity, web.PageLayer, v)
	}
	ctx := c.Request().Context()
	layers, err := u.s.pol.Layers()
	if err != nil {
		return err
	}
	proposed := policystate.Proposed(layers, edit.body.change(v.Name))
	warnings, err := u.s.checkCompiles(ctx, proposed)
	if err != nil {
		v.Errors = append(v.Errors, toAPIError(err).Message)
		return u.render(c, http.StatusUnprocessableEntity, web.PageLayer, v)
	}
	v.Warnings = warnings
	who, err := groupFilter(c.FormValue("group"))
	if err != nil {
		v.Errors = append(v.Errors, toAPIError(err).Message)
		return u.render(c, http.StatusUnprocessableEntity, web.PageLayer, v)
	}
	changes, checked, err := u.s.impact(ctx, proposed, who)
	if err != nil {
		return err
	}
	iv := &web.ImpactView{Checked: checked}
	for _, ch := range changes {
		iv.Changes = append(iv.Changes, web.ImpactRow{ID: ch.ID.String(), URL: pluginURL(ch.ID),
			Before: decisionView(ch.Before), After: decisionView(ch.After)})
	}
	iv.Groups = web.GroupImpact(iv.Changes)
	v.Impact = iv
	return u.render(c, http.StatusOK, web.PageLayer, v)
}

func (u *console) layerSave(c echo.Context) error {
	v, current, err := u.layerView(c, c.Param("layer"))
	if err != nil {
		return err
	}
	edit, err := u.readEdit(c, &v, current)
	if err != nil {
		return err
	}
	if edit == nil {
		return u.render(c, http.StatusUnprocessableEntity, web.PageLayer, v)
	}
	body, err := json.Marshal(edit.body)
	if err != nil {
		return err
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if edit.version == 0 {
		h.Set("If-None-Match", "*")
	} else {
		h.Set("If-Match", layerETag(edit.version))
	}
	_, err = u.call(c, u.s.putLayer, http.MethodPut, "/v1/policy/layers/"+v.Name, []string{"layer", v.Name}, h, body)
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Code == CodeVersionConflict:
		v.Conflict = ae.Message
		return u.render(c, http.StatusConflict, web.PageLayer, v)
	case errors.As(err, &ae) && ae.Status < 500:
		v.Errors = append(v.Errors, ae.Message)
		return u.render(c, ae.Status, web.PageLayer, v)
	case err != nil:
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/admin/policy/layers/"+v.Name+"?saved=1")
}

// capture is the response writer of an in-process call to an API handler.
type capture struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *capture) Header() http.Header { return w.header }
func (w *capture) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}
func (w *capture) WriteHeader(code int) { w.status = code }

// call runs an API handler in-process as the console's signed-in user, so
// the console's writes and reads go through exactly the API's validation,
// preconditions, history and audit. params are name, value pairs of path
// parameters. The handler's error is returned as is.
func (u *console) call(c echo.Context, h echo.HandlerFunc, method, target string, params []string, header http.Header, body []byte) (*capture, error) {
	req, err := http.NewRequestWithContext(c.Request().Context(), method, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if header != nil {
		req.Header = header
	}
	w := &capture{header: http.Header{}}
	ec := u.s.e.NewContext(req, w)
	var names, values []string
	for i := 0; i+1 < len(params); i += 2 {
		names, values = append(names, params[i]), append(values, params[i+1])
	}
	ec.SetParamNames(names...)
	ec.SetParamValues(values...)
	ec.Set(principalKey, u.s.caller(c))
	if err := h(ec); err != nil {
		return nil, err
	}
	return w, nil
}

var auditActions = []string{ActionPolicyPut, ActionPolicyDelete, ActionPolicyRestore, ActionDecisionDeny, ActionTokenCreate, ActionTokenDelete,
	ActionMarketplaceAdd, ActionMarketplaceUpdate, ActionMarketplaceRemove,
	ActionChannelCreate, ActionChannelEdit, ActionChannelDelete, ActionChannelRebuild,
	ActionApprovalHeld, ActionApprovalAuto, ActionApprovalApprove, ActionApprovalDeny, ActionApprovalMode,
	ActionRequestCreate, ActionRequestApprove, ActionRequestDeny,
	policystate.ActionRevocationCreate, policystate.ActionRevocationDelete,
	policystate.ActionToolPinApprove, ActionToolPinAuto,
	audit.ActionAuthLogin, audit.ActionAuthLogout, audit.ActionAuthRefused}
