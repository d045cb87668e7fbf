package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/identity"
	"github.com/wharfhq/wharf/internal/server/tokens"
)

// Single sign-on through the OpenID Connect provider (Deps.Identity):
// the console's sign-in (ui_signin.go) and `wharf login` both end here, in
// a token of the role the user's groups map to, carrying the identity the
// ID token named. Such tokens are short-lived; expired ones are dropped by
// the next sign-in.

// The creators of tokens issued by a sign-in.
const (
	createdByLogin   = "sso:login"   // wharf login (POST /v1/auth/login)
	createdByConsole = "sso:console" // the console's sign-in
	// LoginTokenLifetime is how long a `wharf login` token lasts; the
	// client refreshes it through the provider.
	LoginTokenLifetime = time.Hour
)

// Audit actions of sign-in.
const (
	ActionAuthLogin  = audit.ActionAuthLogin
	ActionAuthLogout = audit.ActionAuthLogout
)

// LoginResponse is what POST /v1/auth/login answers.
type LoginResponse struct {
	tokens.Token
	// Secret is the wharf token, shown only in this response.
	Secret string `json:"token"`
}

// WhoAmI is what GET /v1/auth/whoami answers: the caller's token.
type WhoAmI = tokens.Token

func (s *Server) noIdentity() error {
	return withHint(apiErr(http.StatusNotFound, CodeNotFound, "", "this server has no single sign-on configured"),
		"use a token an admin issues (wharf token create), or ask the admin to configure --oidc-issuer")
}

// authConfig is GET /v1/auth/config: the provider's public settings.
func (s *Server) authConfig(c echo.Context) error {
	if s.deps.Identity == nil {
		return s.noIdentity()
	}
	return c.JSON(http.StatusOK, s.deps.Identity.Public())
}

type loginRequest struct {
	IDToken string `json:"idToken"`
}

// authLogin is POST /v1/auth/login: an ID token of the device client for
// a short-lived wharf token.
func (s *Server) authLogin(c echo.Context) error {
	if s.deps.Identity == nil {
		return s.noIdentity()
	}
	if err := s.allowClient(c, "auth-login"); err != nil {
		return err
	}
	var req loginRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.IDToken) == "" {
		return badField("idToken", "idToken is empty; run wharf login")
	}
	cfg := s.deps.Identity.Config()
	if cfg.DeviceClientID == "" {
		return withHint(apiErr(http.StatusNotFound, CodeNotFound, "", "this server does not take wharf login (no device client configured)"),
			"ask the admin to set --oidc-device-client-id")
	}
	claims, err := s.deps.Identity.VerifyIDToken(c.Request().Context(), req.IDToken, cfg.DeviceClientID, "")
	if err != nil {
		return s.signinRefused(c, err)
	}
	secret, rec, err := s.issueSignedIn(c, claims, createdByLogin, LoginTokenLifetime)
	if err != nil {
		return s.signinRefused(c, err)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, LoginResponse{Token: rec.Public(), Secret: secret})
}

// signinRefused turns a refused sign-in into a 401 (403 for a user with
// no mapped group), audited.
func (s *Server) signinRefused(c echo.Context, err error) error {
	var re *identity.RefusedError
	var nr *identity.NoRoleError
	switch {
	case errors.As(err, &nr):
		s.auditRefusal(c, http.StatusForbidden, "", "", "sign-in: "+nr.Error())
		return apiErr(http.StatusForbidden, CodeForbidden, "", "%s", nr.Error())
	case errors.As(err, &re):
		s.auditRefusal(c, http.StatusUnauthorized, "", "", re.Reason)
		return withHint(apiErr(http.StatusUnauthorized, CodeUnauthorized, "idToken", "%s", re.Error()), "run wharf login again")
	}
	var ue *identity.UnreachableError
	if errors.As(err, &ue) {
		return apiErr(http.StatusBadGateway, CodeUpstream, "", "%s", ue.Error())
	}
	return err
}

// issueSignedIn creates a token for the person claims names, of the role
// their groups map to, expiring after lifetime (never after the ID token's
// session would allow: lifetime is short), and drops the expired tokens
// of earlier sign-ins, in one transaction with the audit entry.
func (s *Server) issueSignedIn(c echo.Context, claims identity.Claims, by string, lifetime time.Duration) (string, tokenRecord, error) {
	cfg := s.deps.Identity.Config()
	who := claims.Email
	if who == "" {
		who = claims.Subject
	}
	role, err := cfg.RoleFor(who, claims.Groups)
	if err != nil {
		return "", tokenRecord{}, err
	}
	secret, err := tokens.NewSecret()
	if err != nil {
		return "", tokenRecord{}, err
	}
	id, err := tokens.NewID()
	if err != nil {
		return "", tokenRecord{}, err
	}
	now := s.now().UTC()
	exp := now.Add(lifetime)
	rec := tokenRecord{ID: id, Role: role, Identity: claims.Identity(), Hash: tokens.HashSecret(secret), CreatedAt: now,
		CreatedBy: by, Note: "signed in as " + who, ExpiresAt: &exp}
	var dropped []tokenRecord
	err = s.deps.Store.Update(func(tx store.Tx) error {
		all, err := tokens.List(tx)
		if err != nil {
			return err
		}
		for _, t := range all {
			if strings.HasPrefix(t.CreatedBy, "sso:") && t.Expired(now) {
				if _, err := tokens.Delete(tx, t.ID); err == nil {
					dropped = append(dropped, t)
				}
			}
		}
		if err := tokens.Put(tx, rec); err != nil {
			return err
		}
		return audit.Append(tx, AuditEntry{Time: now, Action: ActionAuthLogin, Actor: id, Role: role, Object: id,
			Detail: map[string]any{"via": strings.TrimPrefix(by, "sso:"), "groups": claims.Groups, "expiresAt": exp.Format(time.RFC3339)}})
	})
	if err != nil {
		return "", tokenRecord{}, err
	}
	for _, t := range dropped {
		s.toks.Drop(t.Hash)
		s.forgetLimiter(t.ID)
	}
	return secret, rec, nil
}

// authLogout is POST /v1/auth/logout: the caller's token is revoked.
func (s *Server) authLogout(c echo.Context) error {
	p := s.caller(c)
	if err := s.revokeOwn(p); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// revokeOwn deletes p's token, audited.
func (s *Server) revokeOwn(p principal) error {
	var hash string
	err := s.deps.Store.Update(func(tx store.Tx) error {
		t, err := tokens.Delete(tx, p.TokenID)
		var nf *tokens.NotFoundError
		var last *tokens.LastAdminError
		switch {
		case errors.As(err, &nf):
			return nil
		case errors.As(err, &last):
			return apiErr(http.StatusConflict, CodeConflict, "", "%s", last.Error())
		case err != nil:
			return err
		}
		hash = t.Hash
		return audit.Append(tx, AuditEntry{Time: s.now().UTC(), Action: ActionAuthLogout, Actor: p.TokenID, Role: p.Role,
			Subject: p.Who.Subject, Email: p.Who.Email, Object: p.TokenID})
	})
	if err != nil {
		return err
	}
	if hash != "" {
		s.toks.Drop(hash)
		s.forgetLimiter(p.TokenID)
	}
	return nil
}

// whoami is GET /v1/auth/whoami: the caller's token as the API shows it.
func (s *Server) whoami(c echo.Context) error {
	p := s.caller(c)
	var rec tokenRecord
	err := s.deps.Store.View(func(r store.Reader) (err error) { rec, err = tokens.Get(r, p.TokenID); return err })
	var nf *tokens.NotFoundError
	if errors.As(err, &nf) {
		return apiErr(http.StatusUnauthorized, CodeUnauthorized, "Authorization", "the bearer token was revoked")
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rec.Public())
}
