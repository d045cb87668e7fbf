package api

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/toolpin"
	"github.com/wharfhq/wharf/internal/server/toolpins"
	"github.com/wharfhq/wharf/internal/server/web"
)

// The console's tool pins page (admin): the definitions machines report
// that no pin approves, each with what changed and an approve form that
// goes through POST /v1/toolpins; the pins with the definitions they
// approve; and the pin-from-first-report settings, changed through PUT
// /v1/toolpins/auto.

func (u *console) toolPinRoutes(e *echo.Echo) {
	admin := u.session(adminOnly)
	e.GET("/ui/admin/toolpins", u.toolPinsPage, admin)
	e.POST("/ui/admin/toolpins/approve", u.toolPinApprove, admin)
	e.POST("/ui/admin/toolpins/auto", u.toolPinAutoSet, admin)
}

func (u *console) toolPinsView(c echo.Context) (web.ToolPinsView, error) {
	v := web.ToolPinsView{Layout: u.layout(c, "Tool pins", "toolpins")}
	err := u.s.deps.Store.View(func(r store.Reader) error {
		ds, err := toolpins.Drifts(r)
		if err != nil {
			return err
		}
		for _, d := range ds {
			row := web.ToolPinDriftRow{Plugin: d.Plugin, Server: d.Server, Observed: d.Observed, Pinned: d.Pinned, Machines: d.Machines, LastSeen: d.LastSeen, Known: d.Known}
			for _, ch := range d.Changes {
				row.Changes = append(row.Changes, web.ToolChangeRow{Tool: ch.Tool, Kind: ch.Kind, Old: ch.Old, New: ch.New})
			}
			v.Drift = append(v.Drift, row)
		}
		recs, err := toolpins.All(r)
		if err != nil {
			return err
		}
		for _, p := range recs {
			row := web.ToolPinRow{Plugin: p.Plugin, Server: p.Server, Hash: p.Hash, By: p.By, Approved: p.Approved, Note: p.Note}
			defs, ok, err := toolpins.GetDefinitions(r, p.Plugin, p.Server, p.Hash)
			if err != nil {
				return err
			}
			if ok {
				row.Known = true
				for _, t := range defs.Tools {
					schema := "null"
					if c, err := toolpin.CanonicalJSON(t.InputSchema); err == nil {
						schema = string(c)
					}
					row.Tools = append(row.Tools, web.ToolDefinitionRow{Name: t.Name, Description: t.Description, Schema: schema})
				}
			}
			v.Pins = append(v.Pins, row)
		}
		auto, err := toolpins.ReadAuto(r)
		if err != nil {
			return err
		}
		for _, name := range slices.Sorted(maps.Keys(auto.Marketplaces)) {
			v.Auto = append(v.Auto, web.ToolPinAutoRow{Scope: toolpins.ScopeMarketplace, Name: name, On: auto.Marketplaces[name]})
		}
		for _, name := range slices.Sorted(maps.Keys(auto.Plugins)) {
			v.Auto = append(v.Auto, web.ToolPinAutoRow{Scope: toolpins.ScopePlugin, Name: name, On: auto.Plugins[name]})
		}
		return nil
	})
	return v, err
}

func (u *console) toolPinsPage(c echo.Context) error {
	v, err := u.toolPinsView(c)
	if err != nil {
		return err
	}
	if c.QueryParam("approved") != "" {
		v.Messages = append(v.Messages, web.Message{Kind: "ok", Text: "Approved. Clients enforce the new pin at their next policy pull."})
	}
	if c.QueryParam("auto") != "" {
		v.Messages = append(v.Messages, web.Message{Kind: "ok", Text: "Saved. It applies from the next inventory report."})
	}
	return u.render(c, http.StatusOK, web.PageToolPins, v)
}

func (u *console) toolPinApprove(c echo.Context) error {
	body, err := json.Marshal(toolPinBody{Plugin: c.FormValue("plugin"), Server: c.FormValue("server"), Hash: c.FormValue("hash"), Note: c.FormValue("note")})
	if err != nil {
		return err
	}
	_, err = u.call(c, u.s.approveToolPin, http.MethodPost, "/v1/toolpins", nil, http.Header{"Content-Type": {"application/json"}}, body)
	return u.toolPinAfter(c, err, "/ui/admin/toolpins?approved=1")
}

// toolPinAutoSet changes a pin-from-first-report setting through PUT
// /v1/toolpins/auto.
func (u *console) toolPinAutoSet(c echo.Context) error {
	b := toolPinAutoBody{PinFromFirstReport: c.FormValue("value")}
	if c.FormValue("scope") == toolpins.ScopePlugin {
		b.Plugin = c.FormValue("name")
	} else {
		b.Marketplace = c.FormValue("name")
	}
	body, err := json.Marshal(b)
	if err != nil {
		return err
	}
	_, err = u.call(c, u.s.putToolPinAuto, http.MethodPut, "/v1/toolpins/auto", nil, http.Header{"Content-Type": {"application/json"}}, body)
	return u.toolPinAfter(c, err, "/ui/admin/toolpins?auto=1")
}

// toolPinAfter shows the page with the API's refusal, or redirects to
// done.
func (u *console) toolPinAfter(c echo.Context, err error, done string) error {
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Status < 500:
		v, verr := u.toolPinsView(c)
		if verr != nil {
			return verr
		}
		v.Messages = append(v.Messages, web.Message{Kind: "error", Text: ae.Message})
		return u.render(c, ae.Status, web.PageToolPins, v)
	case err != nil:
		return err
	}
	return c.Redirect(http.StatusSeeOther, done)
}
