package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/server/web"
)

// The console's review queue: the held versions with what they add and
// how their files differ, and a form to approve or deny each, which goes
// through POST /v1/approvals/decisions (so it is validated and audited the
// same way).

func (u *console) approvalRoutes(e *echo.Echo) {
	admin := u.session(adminOnly)
	e.GET("/ui/admin/approvals", u.approvalsPage, admin)
	e.POST("/ui/admin/approvals/decide", u.approvalDecide, admin)
}

func (u *console) approvalsView(c echo.Context) (web.ApprovalsView, error) {
	v := web.ApprovalsView{Layout: u.layout(c, "Approvals", "approvals")}
	res, err := u.call(c, u.s.pendingApprovals, http.MethodGet, "/v1/approvals/pending", nil, nil, nil)
	if err != nil {
		return v, err
	}
	var list PendingList
	if err := json.Unmarshal(res.body.Bytes(), &list); err != nil {
		return v, err
	}
	for _, p := range list.Pending {
		row := web.PendingRow{Plugin: p.Plugin, Version: p.Version, Digest: p.Digest, Mode: p.Mode, Seen: p.Seen}
		for _, a := range p.Adds {
			row.Adds = append(row.Adds, a.Message)
		}
		if p.Approved != nil {
			row.Approved = p.Approved.Version
		}
		if p.Files != nil {
			row.Added, row.Removed, row.Changed, row.Truncated = p.Files.Added, p.Files.Removed, p.Files.Changed, p.Files.Truncated
		}
		v.Pending = append(v.Pending, row)
	}
	return v, nil
}

func (u *console) approvalsPage(c echo.Context) error {
	v, err := u.approvalsView(c)
	if err != nil {
		return err
	}
	return u.render(c, http.StatusOK, web.PageApprovals, v)
}

func (u *console) approvalDecide(c echo.Context) error {
	body, err := json.Marshal(decisionBody{Plugin: c.FormValue("plugin"), Version: c.FormValue("version"), Digest: c.FormValue("digest"),
		Decision: c.FormValue("decision"), Note: c.FormValue("note")})
	if err != nil {
		return err
	}
	res, err := u.call(c, u.s.decideApproval, http.MethodPost, "/v1/approvals/decisions", nil, http.Header{"Content-Type": {"application/json"}}, body)
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Status < 500:
		v, verr := u.approvalsView(c)
		if verr != nil {
			return verr
		}
		v.Messages = append(v.Messages, web.Message{Kind: "error", Text: ae.Message})
		return u.render(c, ae.Status, web.PageApprovals, v)
	case err != nil:
		return err
	}
	var d ApprovalDecision
	if err := json.Unmarshal(res.body.Bytes(), &d); err != nil {
		return err
	}
	v, err := u.approvalsView(c)
	if err != nil {
		return err
	}
	v.Messages = append(v.Messages, web.Message{Kind: "ok", Text: d.Approval.Plugin + " " + d.Approval.Version + " is " + d.Approval.State +
		"; policy version " + d.PolicyVersion + " carries it to clients and channels."})
	return u.render(c, http.StatusOK, web.PageApprovals, v)
}
