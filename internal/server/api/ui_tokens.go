package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/tokens"
	"github.com/wharfhq/wharf/internal/server/web"
)

// noteUse records that a token was used (tokens.LastUse: at most one store
// write per token per interval). The write runs apart from the request, so
// a slow or unavailable store never delays or fails the request it was
// noted for; a failure is logged.
func (s *Server) noteUse(id string) {
	now := s.now()
	if !s.used.Due(id, now) {
		return
	}
	go func() {
		if err := s.used.Write(id, now); err != nil {
			s.log.Warn("record a token's last use", "token", id, "err", err)
		}
	}()
}

func (u *console) tokenRoutes(e *echo.Echo) {
	admin := u.session(adminOnly)
	e.GET("/ui/admin/tokens", u.tokensPage, admin)
	e.POST("/ui/admin/tokens", u.tokenCreate, admin)
	e.GET("/ui/admin/tokens/:id/revoke", u.tokenRevokeForm, admin)
	e.POST("/ui/admin/tokens/:id/revoke", u.tokenRevoke, admin)
}

// tokenRows reads every token with its last use.
func (u *console) tokenRows(c echo.Context) ([]web.TokenRow, error) {
	var recs []tokens.Record
	var used map[string]time.Time
	if err := u.s.deps.Store.View(func(r store.Reader) (err error) {
		if recs, err = tokens.List(r); err != nil {
			return err
		}
		used, err = tokens.LastUsed(r)
		return err
	}); err != nil {
		return nil, err
	}
	me := u.s.caller(c).TokenID
	now := u.s.now()
	rows := make([]web.TokenRow, 0, len(recs))
	for i := range recs {
		t := &recs[i]
		rows = append(rows, web.TokenRow{ID: t.ID, Role: string(t.Role), Note: t.Note, CreatedAt: t.CreatedAt, CreatedBy: t.CreatedBy,
			ExpiresAt: t.ExpiresAt, Expired: t.Expired(now), LastUsed: used[t.ID], Current: t.ID == me})
	}
	return rows, nil
}

func (u *console) renderTokens(c echo.Context, status int, v web.TokensView, msgs ...web.Message) error {
	rows, err := u.tokenRows(c)
	if err != nil {
		return err
	}
	after, err := keyCursor(c)
	if err != nil {
		return err
	}
	rows, next := pageByKey(rows, func(t web.TokenRow) string { return timeKey(t.CreatedAt, t.ID) }, after, defaultPageSize)
	if next != "" {
		v.NextURL = "/ui/admin/tokens?cursor=" + url.QueryEscape(next)
	}
	v.Layout = u.layout(c, "Tokens", "tokens")
	v.Messages = msgs
	v.Tokens = rows
	role := v.Form.Role
	if role == "" {
		role = string(RoleDeveloper)
	}
	names := make([]string, len(Roles))
	for i, r := range Roles {
		names[i] = string(r)
	}
	v.Roles = options(names, role)
	v.LastUsedEvery = fmt.Sprintf("%.0f minutes", tokens.DefaultLastUsedEvery.Minutes())
	if q := c.QueryParam("revoked"); q != "" {
		v.Messages = append(v.Messages, web.Message{Kind: "ok", Text: "Revoked token " + q + "."})
	}
	return u.render(c, status, web.PageTokens, v)
}

func (u *console) tokensPage(c echo.Context) error {
	return u.renderTokens(c, http.StatusOK, web.TokensView{})
}

// tokenCreate creates the token through POST /v1/tokens and shows its
// secret in the answer to this POST: never in a URL, never again.
func (u *console) tokenCreate(c echo.Context) error {
	v := web.TokensView{Form: web.TokenForm{Role: c.FormValue("role"), Note: strings.TrimSpace(c.FormValue("note")), Expires: strings.TrimSpace(c.FormValue("expires"))}}
	body, err := json.Marshal(createTokenRequest{Role: v.Form.Role, Note: v.Form.Note, Expires: v.Form.Expires})
	if err != nil {
		return err
	}
	res, err := u.call(c, u.s.createToken, http.MethodPost, "/v1/tokens", nil, http.Header{"Content-Type": {"application/json"}}, body)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusBadRequest {
		v.FormError, v.FormField = ae.Message, ae.Field
		return u.renderTokens(c, http.StatusBadRequest, v)
	}
	if err != nil {
		return err
	}
	var created createTokenResponse
	if err := json.Unmarshal(res.body.Bytes(), &created); err != nil {
		return fmt.Errorf("token create answer: %w", err)
	}
	v.Created = &web.NewToken{ID: created.ID, Role: string(created.Role), Secret: created.Secret, ExpiresAt: created.ExpiresAt}
	v.Form = web.TokenForm{}
	return u.renderTokens(c, http.StatusCreated, v)
}

func (u *console) tokenRow(c echo.Context, id string) (web.TokenRow, error) {
	rows, err := u.tokenRows(c)
	if err != nil {
		return web.TokenRow{}, err
	}
	for _, r := range rows {
		if r.ID == id {
			return r, nil
		}
	}
	return web.TokenRow{}, apiErr(http.StatusNotFound, CodeNotFound, "id", "no token %s (revoked already?); see the tokens page", id)
}

func (u *console) tokenRevokeForm(c echo.Context) error {
	row, err := u.tokenRow(c, c.Param("id"))
	if err != nil {
		return err
	}
	return u.render(c, http.StatusOK, web.PageTokenRevoke, web.TokenRevokeView{Layout: u.layout(c, "Revoke token "+row.ID, "tokens"), Token: row})
}

func (u *console) tokenRevoke(c echo.Context) error {
	id := c.Param("id")
	if _, err := u.call(c, u.s.deleteToken, http.MethodDelete, "/v1/tokens/"+url.PathEscape(id), []string{"id", id}, nil, nil); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/admin/tokens?revoked="+url.QueryEscape(id))
}
