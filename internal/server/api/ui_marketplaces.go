package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/web"
	"github.com/wharfhq/wharf/plugin"
)

// The marketplaces page: the admin adds a marketplace from what they would
// type after `wharf marketplace add`, refreshes it, removes it. Every
// change goes through the /v1 handlers (policy gate, audit); the console
// only turns the typed source into the API's source object.

// refreshErrorBucket keeps, per marketplace, the last refresh that failed
// (cleared by the next one that succeeds, and on removal), so that every
// replica's page shows it until it is fixed.
const refreshErrorBucket = "console-marketplace-refresh"

type refreshFailure struct {
	Time  time.Time `json:"time"`
	Error string    `json:"error"`
}

func (u *console) marketplaceRoutes(e *echo.Echo) {
	admin := u.session(adminOnly)
	e.GET("/ui/admin/marketplaces", u.marketplacesPage, admin)
	e.POST("/ui/admin/marketplaces", u.marketplaceAdd, admin)
	e.POST("/ui/admin/marketplaces/:name/refresh", u.marketplaceRefresh, admin)
	e.GET("/ui/admin/marketplaces/:name/remove", u.marketplaceRemoveForm, admin)
	e.POST("/ui/admin/marketplaces/:name/remove", u.marketplaceRemove, admin)
}

// sourceText is a stored source as an admin would type it.
func sourceText(raw json.RawMessage) string {
	var src plugin.MarketplaceSource
	if err := json.Unmarshal(raw, &src); err != nil {
		return string(raw)
	}
	return src.String()
}

func (u *console) marketplaceRows(c echo.Context) ([]web.MarketplaceRow, error) {
	cat, err := u.s.catalog()
	if err != nil {
		return nil, err
	}
	ms, err := cat.Marketplaces(c.Request().Context())
	if err != nil {
		return nil, err
	}
	failures := map[string]refreshFailure{}
	if err := u.s.deps.Store.View(func(r store.Reader) error {
		kvs, err := r.List(refreshErrorBucket, "")
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			var f refreshFailure
			if json.Unmarshal(kv.Value, &f) == nil {
				failures[kv.Key] = f
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	rows := make([]web.MarketplaceRow, 0, len(ms))
	for _, m := range ms {
		row := web.MarketplaceRow{Name: m.Name, Source: sourceText(m.Source), Plugins: m.Plugins, LastUpdated: m.LastUpdated, Error: m.Error}
		if f, ok := failures[m.Name]; ok {
			msg := "refresh at " + f.Time.UTC().Format("2006-01-02 15:04 MST") + " failed: " + f.Error
			if row.Error != "" {
				msg = row.Error + "; " + msg
			}
			row.Error = msg
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func (u *console) renderMarketplaces(c echo.Context, status int, v web.MarketplacesView, msgs ...web.Message) error {
	rows, err := u.marketplaceRows(c)
	if err != nil {
		return err
	}
	v.Layout = u.layout(c, "Marketplaces", "marketplaces")
	v.Messages = msgs
	v.Marketplaces = rows
	switch {
	case c.QueryParam("added") != "":
		v.Messages = append(v.Messages, web.Message{Kind: "ok", Text: "Added marketplace " + c.QueryParam("added") + "."})
	case c.QueryParam("refreshed") != "":
		v.Messages = append(v.Messages, web.Message{Kind: "ok", Text: "Refreshed marketplace " + c.QueryParam("refreshed") + "."})
	case c.QueryParam("removed") != "":
		v.Messages = append(v.Messages, web.Message{Kind: "ok", Text: "Removed marketplace " + c.QueryParam("removed") + "."})
	}
	return u.render(c, status, web.PageMarketplaces, v)
}

func (u *console) marketplacesPage(c echo.Context) error {
	return u.renderMarketplaces(c, http.StatusOK, web.MarketplacesView{})
}

// marketplaceSource turns what the admin typed into the API's source
// object. A local path must be absolute: it names a directory on the
// server, and the server's working directory is nobody's business.
func marketplaceSource(text string) (json.RawMessage, error) {
	src, err := plugin.ParseMarketplaceSource(text)
	if err != nil {
		return nil, err
	}
	if src.IsLocal() && !filepath.IsAbs(src.Path) {
		return nil, fmt.Errorf("%q is a relative path; give the absolute path of the directory on the server (e.g. /srv/marketplaces/corp)", strings.TrimSpace(text))
	}
	return json.Marshal(src)
}

func (u *console) marketplaceAdd(c echo.Context) error {
	v := web.MarketplacesView{Form: web.MarketplaceForm{Name: strings.TrimSpace(c.FormValue("name")), Source: strings.TrimSpace(c.FormValue("source"))}}
	fail := func(status int, field, msg string) error {
		v.FormError, v.FormField = msg, field
		return u.renderMarketplaces(c, status, v)
	}
	if err := plugin.ValidateName(v.Form.Name); err != nil {
		return fail(http.StatusBadRequest, "name", "Name: "+err.Error())
	}
	src, err := marketplaceSource(v.Form.Source)
	if err != nil {
		return fail(http.StatusBadRequest, "source", "Source: "+err.Error())
	}
	body, err := json.Marshal(addMarketplaceRequest{Name: v.Form.Name, Source: src})
	if err != nil {
		return err
	}
	_, err = u.call(c, u.s.addMarketplace, http.MethodPost, "/v1/marketplaces", nil, http.Header{"Content-Type": {"application/json"}}, body)
	if msg, field, ok := clientError(err); ok {
		return fail(toAPIError(u.s.storeError(err)).Status, field, "Could not add "+v.Form.Name+": "+msg)
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/admin/marketplaces?added="+url.QueryEscape(v.Form.Name))
}

// clientError is the message and field of an error the admin can act on
// (a refusal or a fetch that failed), as opposed to the server's own
// failure, which the error page reports.
func clientError(err error) (msg, field string, ok bool) {
	if err == nil {
		return "", "", false
	}
	ae := toAPIError(err)
	if ae.Status >= 500 && ae.Status != http.StatusBadGateway && ae.Status != http.StatusGatewayTimeout {
		return "", "", false
	}
	return ae.Message, ae.Field, true
}

func (u *console) marketplaceRefresh(c echo.Context) error {
	name, err := marketplaceParam(c, "name")
	if err != nil {
		return err
	}
	_, err = u.call(c, u.s.updateMarketplace, http.MethodPost, "/v1/marketplaces/"+name+"/update", []string{"name", name}, nil, nil)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return err
	}
	if msg, _, ok := clientError(err); ok {
		rec, merr := json.Marshal(refreshFailure{Time: u.s.now().UTC(), Error: msg})
		if merr != nil {
			return merr
		}
		if werr := u.s.deps.Store.Update(func(tx store.Tx) error { return tx.Put(refreshErrorBucket, name, rec) }); werr != nil {
			return werr
		}
		return u.renderMarketplaces(c, toAPIError(err).Status, web.MarketplacesView{},
			web.Message{Kind: "error", Text: "Refreshing " + name + " failed: " + msg})
	}
	if err != nil {
		return err
	}
	if err := u.s.deps.Store.Update(func(tx store.Tx) error { return tx.Delete(refreshErrorBucket, name) }); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/admin/marketplaces?refreshed="+url.QueryEscape(name))
}

func (u *console) marketplaceRemoveForm(c echo.Context) error {
	name, err := marketplaceParam(c, "name")
	if err != nil {
		return err
	}
	rows, err := u.marketplaceRows(c)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.Name == name {
			return u.render(c, http.StatusOK, web.PageMarketplaceRemove,
				web.MarketplaceRemoveView{Layout: u.layout(c, "Remove marketplace "+name, "marketplaces"), Marketplace: r})
		}
	}
	return apiErr(http.StatusNotFound, CodeNotFound, "name", "no marketplace named %s; see the marketplaces page for the known ones", name)
}

func (u *console) marketplaceRemove(c echo.Context) error {
	name, err := marketplaceParam(c, "name")
	if err != nil {
		return err
	}
	if _, err := u.call(c, u.s.removeMarketplace, http.MethodDelete, "/v1/marketplaces/"+name, []string{"name", name}, nil, nil); err != nil {
		return err
	}
	if err := u.s.deps.Store.Update(func(tx store.Tx) error { return tx.Delete(refreshErrorBucket, name) }); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/admin/marketplaces?removed="+url.QueryEscape(name))
}
