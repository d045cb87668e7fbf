package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/capability"
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
		row.Findings, row.FindingsKnown = findingRows(p.Findings), p.Findings != nil
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

func findingRows(fs []capability.Finding) []web.FindingRow {
	var out []web.FindingRow
	for _, f := range fs {
		out = append(out, web.FindingRow{Kind: f.Kind, File: f.File, Line: f.Line, Message: f.Message})
	}
	return out
}

// capabilitiesView is the console's view of a capability report.
func capabilitiesView(r *capability.Report) *web.CapabilitiesView {
	s := &r.Capabilities
	v := &web.CapabilitiesView{SensitiveConfig: s.SensitiveConfig, Declares: s.DeclaredHosts != nil, DeclaredHosts: s.DeclaredHosts,
		Findings: findingRows(r.Findings), Digest: s.Digest()}
	fetches := func(fs []capability.Fetch) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.String())
		}
		return out
	}
	for _, h := range s.Hooks {
		v.Hooks = append(v.Hooks, web.HookRow{Event: h.Event, Matcher: h.Matcher, Type: h.Type, Command: h.Command, Interpreter: h.Interpreter,
			Source: h.Source, Runs: h.Runs, NetworkTools: h.NetworkTools, Fetches: fetches(h.Fetches), DownloadAndRun: h.DownloadAndRun})
	}
	server := func(sv capability.Server) web.ServerRow {
		cmd := strings.TrimSpace(strings.Join(append([]string{sv.Command}, sv.Args...), " "))
		return web.ServerRow{Name: sv.Name, Transport: sv.Transport, Command: cmd, URL: sv.URL, Host: sv.Host, Source: sv.Source,
			Fetches: fetches(sv.Fetches), Runs: sv.Runs}
	}
	for _, sv := range s.MCPServers {
		v.MCPServers = append(v.MCPServers, server(sv))
	}
	for _, sv := range s.LSPServers {
		v.LSPServers = append(v.LSPServers, server(sv))
	}
	for _, e := range s.Executables {
		v.Executables = append(v.Executables, web.ExecutableRow{Path: e.Path, Why: e.Why})
	}
	for _, l := range []struct {
		kind string
		ps   []capability.Prompt
	}{{"command", s.Commands}, {"skill", s.Skills}, {"agent", s.Agents}} {
		for _, p := range l.ps {
			if len(p.AllowedTools) > 0 {
				v.Tools = append(v.Tools, web.ToolsRow{Kind: l.kind, Name: p.Name, Path: p.Path, Tools: p.AllowedTools})
			}
		}
	}
	for _, h := range s.Hosts {
		v.Hosts = append(v.Hosts, web.HostRow{Host: h.Host, Declared: h.Declared, From: h.From})
	}
	return v
}
