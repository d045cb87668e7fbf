package api

import (
	"errors"
	"fmt"
	"html"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/identity"
	"github.com/wharfhq/wharf/internal/server/sessions"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

// The console's single sign-on: "Sign in with <IdP>" starts the
// authorization code flow with PKCE (identity.Provider.Begin keeps state,
// nonce and verifier one use in the store); the state also goes to a
// short-lived cookie of this browser, so a callback another browser
// started is refused. The callback verifies the ID token, maps the user's
// groups to a role and starts a session over a token that carries the
// user's identity.

// oidcCookie holds the state of a sign-in in progress. SameSite=Lax: the
// provider's redirect back is a cross-site navigation.
const oidcCookie = "wharf_oidc"

func (u *console) oidcStart(c echo.Context) error {
	p := u.s.deps.Identity
	if p == nil {
		return u.s.noIdentity()
	}
	if err := u.s.allowClient(c, "console-signin"); err != nil {
		return err
	}
	state, authURL, err := p.Begin(c.Request().Context(), safeNext(c.QueryParam("next")))
	var ue *identity.UnreachableError
	if errors.As(err, &ue) {
		return apiErr(http.StatusBadGateway, CodeUpstream, "", "%s", ue.Error())
	}
	if err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{Name: oidcCookie, Value: state, Path: "/ui/oidc", MaxAge: int(identity.PendingLifetime.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: u.s.overTLS(c.Request())})
	return c.Redirect(http.StatusFound, authURL)
}

func (u *console) oidcCallback(c echo.Context) error {
	p := u.s.deps.Identity
	if p == nil {
		return u.s.noIdentity()
	}
	if err := u.s.allowClient(c, "console-signin"); err != nil {
		return err
	}
	cookieState := ""
	if ck, err := c.Cookie(oidcCookie); err == nil {
		cookieState = ck.Value
	}
	c.SetCookie(&http.Cookie{Name: oidcCookie, Value: "", Path: "/ui/oidc", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: u.s.overTLS(c.Request())})
	if e := c.QueryParam("error"); e != "" {
		u.s.auditRefusal(c, http.StatusUnauthorized, "", "", "sign-in: the identity provider said "+e)
		return apiErr(http.StatusUnauthorized, CodeUnauthorized, "", "the identity provider did not sign you in (%s: %s); try again from the sign-in page",
			e, c.QueryParam("error_description"))
	}
	claims, next, err := p.Finish(c.Request().Context(), c.QueryParam("state"), cookieState, c.QueryParam("code"))
	if err != nil {
		return u.s.signinRefused(c, err)
	}
	_, rec, err := u.s.issueSignedIn(c, claims, createdByConsole, sessions.Lifetime)
	if err != nil {
		return u.s.signinRefused(c, err)
	}
	id, err := sessions.Start(u.s.deps.Store, &rec, u.s.now())
	if err != nil {
		return err
	}
	u.cookie(c, sessionCookie, id, "/ui", 0)
	// A page that moves on, rather than a redirect: the session cookie is
	// SameSite=Strict, and a redirect chain that began at the provider is
	// cross-site, so the browser would not send it on the next request.
	next = safeNext(next)
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.HTML(http.StatusOK, fmt.Sprintf(`<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=%[1]s"><title>Signed in</title></head><body><p>Signed in. <a id="continue" href="%[1]s">Continue</a></p></body></html>`,
		html.EscapeString(next)))
}

// endSignedIn revokes the token of a console sign-in (signing out ends
// it: it served only this session).
func (u *console) endSignedIn(c echo.Context) error {
	p, ok := c.Get(principalKey).(principal)
	if !ok || p.TokenID == "" {
		return nil
	}
	var rec tokens.Record
	err := u.s.deps.Store.View(func(r store.Reader) (err error) { rec, err = tokens.Get(r, p.TokenID); return err })
	var nf *tokens.NotFoundError
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return err
	}
	if rec.CreatedBy != createdByConsole {
		return nil
	}
	return u.s.revokeOwn(p)
}
