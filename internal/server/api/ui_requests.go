package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/server/requests"
	"github.com/wharfhq/wharf/internal/server/web"
)

// The console's queue of requests (admin): filter by status, approve
// (optionally until a date) or deny with a note. The forms go through the
// API's handlers in-process (console.call), so they are validated and
// audited exactly as POST /v1/requests/{id}/approve and deny are.

func (u *console) requestRoutes(e *echo.Echo) {
	admin := u.session(adminOnly)
	e.GET("/ui/admin/requests", u.requestsPage, admin)
	e.POST("/ui/admin/requests/:id/approve", u.answerForm(requests.StatusApproved), admin)
	e.POST("/ui/admin/requests/:id/deny", u.answerForm(requests.StatusDenied), admin)
}

func (u *console) requestsPage(c echo.Context) error {
	status := c.QueryParam("status")
	if _, set := c.QueryParams()["status"]; !set {
		status = requests.StatusPending
	}
	v, err := u.requestsView(c, status)
	if err != nil {
		return err
	}
	if id, as := c.QueryParam("answered"), c.QueryParam("as"); requests.ValidID(id) && (as == requests.StatusApproved || as == requests.StatusDenied) {
		v.Messages = append(v.Messages, web.Message{Kind: "ok", Text: "Request " + id + " " + as + "."})
	}
	return u.render(c, http.StatusOK, web.PageRequests, v)
}

// requestsView reads one page of the requests with status ("" for all).
func (u *console) requestsView(c echo.Context, status string) (web.RequestsView, error) {
	v := web.RequestsView{Layout: u.layout(c, "Requests", "requests"), Today: u.s.now().UTC().Format("2006-01-02")}
	v.Status = append([]web.Option{{Value: "", Label: "all", Selected: status == ""}}, options(requestStatuses, status)...)
	q := url.Values{"limit": {strconv.Itoa(defaultPageSize)}}
	if status != "" {
		q.Set("status", status)
	}
	if cur := c.QueryParam("cursor"); cur != "" {
		q.Set("cursor", cur)
	}
	res, err := u.call(c, u.s.listRequests, http.MethodGet, "/v1/requests?"+q.Encode(), nil, nil, nil)
	if err != nil {
		return v, err
	}
	var list RequestList
	if err := json.Unmarshal(res.body.Bytes(), &list); err != nil {
		return v, err
	}
	for _, r := range list.Requests {
		row := web.RequestRow{ID: r.ID, Plugin: r.Plugin, Reason: r.Reason, Token: r.Token, Role: r.Role, Machine: r.Machine,
			Created: r.Created, Status: r.Status}
		if a := r.Answer; a != nil {
			row.Until, row.Note, row.By, row.Answered = a.Until, a.Note, a.By, a.At
		}
		base := "/ui/admin/requests/" + url.PathEscape(r.ID)
		switch r.Status {
		case requests.StatusPending:
			row.ApproveURL, row.DenyURL = base+"/approve", base+"/deny"
		case requests.StatusApproved, requests.StatusExpired:
			row.DenyURL = base + "/deny"
		}
		v.Requests = append(v.Requests, row)
	}
	if list.Next != "" {
		q.Set("cursor", list.Next)
		q.Del("limit")
		if status == "" {
			q.Set("status", "")
		}
		v.NextURL = "/ui/admin/requests?" + q.Encode()
	}
	return v, nil
}

// answerForm answers a request from the console's form.
func (u *console) answerForm(status string) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Param("id")
		body := answerBody{Note: c.FormValue("note")}
		h := u.s.denyRequest
		path := "/v1/requests/" + url.PathEscape(id) + "/deny"
		if status == requests.StatusApproved {
			body.Until = c.FormValue("until")
			h, path = u.s.approveRequest, "/v1/requests/"+url.PathEscape(id)+"/approve"
		}
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		_, err = u.call(c, h, http.MethodPost, path, []string{"id", id}, http.Header{"Content-Type": {"application/json"}}, raw)
		var ae *APIError
		switch {
		case errors.As(err, &ae) && ae.Status < 500:
			v, verr := u.requestsView(c, requests.StatusPending)
			if verr != nil {
				return verr
			}
			v.Messages = append(v.Messages, web.Message{Kind: "error", Text: ae.Message})
			return u.render(c, ae.Status, web.PageRequests, v)
		case err != nil:
			return err
		}
		return c.Redirect(http.StatusSeeOther, "/ui/admin/requests?answered="+url.QueryEscape(id)+"&as="+status)
	}
}
