package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/toolpins"
	"github.com/wharfhq/wharf/internal/server/web"
)

// The console's tool pins page (admin): the definitions machines report
// that no pin approves, each with an approve form that goes through POST
// /v1/toolpins, and the pins.

func (u *console) toolPinRoutes(e *echo.Echo) {
	admin := u.session(adminOnly)
	e.GET("/ui/admin/toolpins", u.toolPinsPage, admin)
	e.POST("/ui/admin/toolpins/approve", u.toolPinApprove, admin)
}

func (u *console) toolPinsView(c echo.Context) (web.ToolPinsView, error) {
	v := web.ToolPinsView{Layout: u.layout(c, "Tool pins", "toolpins")}
	err := u.s.deps.Store.View(func(r store.Reader) error {
		ds, err := toolpins.Drifts(r)
		if err != nil {
			return err
		}
		for _, d := range ds {
			v.Drift = append(v.Drift, web.ToolPinDriftRow{Plugin: d.Plugin, Server: d.Server, Observed: d.Observed, Pinned: d.Pinned, Machines: d.Machines, LastSeen: d.LastSeen})
		}
		recs, err := toolpins.All(r)
		for _, p := range recs {
			v.Pins = append(v.Pins, web.ToolPinRow{Plugin: p.Plugin, Server: p.Server, Hash: p.Hash, By: p.By, Approved: p.Approved, Note: p.Note})
		}
		return err
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
	return u.render(c, http.StatusOK, web.PageToolPins, v)
}

func (u *console) toolPinApprove(c echo.Context) error {
	body, err := json.Marshal(toolPinBody{Plugin: c.FormValue("plugin"), Server: c.FormValue("server"), Hash: c.FormValue("hash"), Note: c.FormValue("note")})
	if err != nil {
		return err
	}
	_, err = u.call(c, u.s.approveToolPin, http.MethodPost, "/v1/toolpins", nil, http.Header{"Content-Type": {"application/json"}}, body)
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
	return c.Redirect(http.StatusSeeOther, "/ui/admin/toolpins?approved=1")
}
