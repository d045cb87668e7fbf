package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/toolpin"
	"github.com/wharfhq/wharf/internal/server/approvals"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/policystate"
	"github.com/wharfhq/wharf/internal/server/toolpins"
	"github.com/wharfhq/wharf/plugin"
)

// Tool pins approve the tool definitions (names, descriptions, input
// schemas) of a plugin's MCP server by their hash. They are part of the
// policy: each approval bumps the policy head, so the signed bundle carries
// them (data.json: wharf.toolPins) and its ETag changes. Clients report
// what their servers list (the inventory's mcpServers); GET
// /v1/toolpins/drift lists what no pin approves, and POST /v1/toolpins
// approves one reported set of definitions.

// ActionToolPinApprove is the audit action of an approval.
const ActionToolPinApprove = policystate.ActionToolPinApprove

// ToolPinList is GET /v1/toolpins.
type ToolPinList struct {
	Pins          []toolpins.Record `json:"pins"`
	PolicyVersion string            `json:"policyVersion"`
}

// ToolPinDriftList is GET /v1/toolpins/drift.
type ToolPinDriftList struct {
	Drift []toolpins.Drift `json:"drift"`
}

// ToolPinWriteResult is the response of POST /v1/toolpins.
type ToolPinWriteResult struct {
	Pin           toolpins.Record `json:"pin"`
	Previous      string          `json:"previous,omitempty"` // the hash it replaced
	PolicyVersion string          `json:"policyVersion"`
	Revision      uint64          `json:"revision"`
}

type toolPinBody struct {
	Plugin string `json:"plugin"`
	Server string `json:"server"`
	Hash   string `json:"hash"`
	Note   string `json:"note"`
}

// withoutDefinitions is rep as the fleet keeps it: the tool definitions
// are kept once per server and hash by toolpins, not in every machine's
// report.
func withoutDefinitions(rep inventory.Report) inventory.Report {
	if len(rep.MCPServers) == 0 {
		return rep
	}
	ms := make([]inventory.MCPServer, len(rep.MCPServers))
	for i, m := range rep.MCPServers {
		m.Tools = nil
		ms[i] = m
	}
	rep.MCPServers = ms
	return rep
}

// observeTools keeps what a report says its machine's plugin servers list.
// A machine that reports none and had none costs no write.
func (s *Server) observeTools(rep inventory.Report) error {
	if len(rep.MCPServers) == 0 {
		had := false
		if err := s.deps.Store.View(func(r store.Reader) error {
			_, err := r.Get(toolpins.ObservedBucket, rep.Machine.ID)
			had = err == nil
			return nil
		}); err != nil || !had {
			return err
		}
	}
	return s.deps.Store.Update(func(tx store.Tx) error {
		return toolpins.Observe(tx, rep.Machine.ID, rep.MCPServers, s.now().UTC())
	})
}

func (s *Server) listToolPins(c echo.Context) error {
	var out ToolPinList
	err := s.deps.Store.View(func(r store.Reader) error {
		recs, err := toolpins.All(r)
		if err != nil {
			return err
		}
		h, err := policystate.ReadHead(r)
		out = ToolPinList{Pins: recs, PolicyVersion: h.Version}
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) toolPinDrift(c echo.Context) error {
	var out ToolPinDriftList
	err := s.deps.Store.View(func(r store.Reader) (err error) {
		out.Drift, err = toolpins.Drifts(r)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func validateToolPin(b *toolPinBody) error {
	b.Plugin, b.Server, b.Hash, b.Note = strings.TrimSpace(b.Plugin), strings.TrimSpace(b.Server), strings.TrimSpace(b.Hash), strings.TrimSpace(b.Note)
	p := toolpin.Pin{Plugin: b.Plugin, Server: b.Server, Hash: b.Hash}
	switch err := p.Validate(); {
	case err == nil:
	case b.Plugin == "" || strings.Contains(err.Error(), "plugin "):
		return badField("plugin", "%q is not a plugin id; write it as name@marketplace", b.Plugin)
	case toolpin.ValidServer(b.Server) != nil:
		return badField("server", "%v; give the server's name in the plugin's .mcp.json", toolpin.ValidServer(b.Server))
	default:
		return badField("hash", "%q is not a hash of tool definitions (%s and 64 hex digits); GET /v1/toolpins/drift lists the reported ones", b.Hash, toolpin.Prefix)
	}
	if len(b.Note) > toolpins.MaxNoteLen {
		return badField("note", "note is %d bytes; the limit is %d", len(b.Note), toolpins.MaxNoteLen)
	}
	return nil
}

// approveToolPin pins a server's definitions to a hash some machine
// reported: the definitions an administrator reviewed, never a hash typed
// from elsewhere.
func (s *Server) approveToolPin(c echo.Context) error {
	var body toolPinBody
	if err := decodeBody(c, &body); err != nil {
		return err
	}
	if err := validateToolPin(&body); err != nil {
		return err
	}
	p := s.caller(c)
	rec := toolpins.Record{Plugin: body.Plugin, Server: body.Server, Hash: body.Hash, By: p.TokenID, Approved: s.now().UTC(), Note: body.Note}
	head, previous, err := s.pol.ApproveToolPin(rec, s.actor(c))
	var nr *policystate.NotReportedError
	var ap *policystate.AlreadyPinnedError
	var tm *policystate.TooManyPinsError
	switch {
	case errors.As(err, &nr):
		return apiErr(http.StatusNotFound, CodeNotFound, "hash", "%s", nr.Error())
	case errors.As(err, &ap):
		return &APIError{Status: http.StatusConflict, Code: CodeConflict, Field: "hash", Message: ap.Error()}
	case errors.As(err, &tm):
		return badField("plugin", "%s", tm.Error())
	case err != nil:
		return err
	}
	return c.JSON(http.StatusCreated, ToolPinWriteResult{Pin: rec, Previous: previous, PolicyVersion: head.Version, Revision: head.Revision})
}

// ActionToolPinAuto is the audit action of a change to the pin-from-first-
// report setting.
const ActionToolPinAuto = "toolpin.auto"

// pinFromReport pins, on the report's behalf, the definitions of every
// server the report lists that nothing pins yet, whose plugin has pin from
// first report on, and whose plugin version the report carries is one the
// server's approvals record as approved. Each pin is audited as
// toolpin.approve by "wharf", its note naming the version, the machine and
// the token. A report is never refused for what this does: failures are
// logged.
func (s *Server) pinFromReport(rep inventory.Report, p principal) {
	if len(rep.MCPServers) == 0 {
		return
	}
	versions := make(map[string]inventory.Plugin, len(rep.Plugins))
	for _, pl := range rep.Plugins {
		versions[pl.ID] = pl
	}
	now := s.now().UTC()
	var first []toolpins.Record
	err := s.deps.Store.View(func(r store.Reader) error {
		auto, err := toolpins.ReadAuto(r)
		if err != nil {
			return err
		}
		for _, m := range rep.MCPServers {
			id, err := plugin.ParseID(m.Plugin)
			pl, reported := versions[m.Plugin]
			if err != nil || !reported || m.Drift || !auto.On(id) {
				continue
			}
			if _, pinned, err := toolpins.Get(r, m.Plugin, m.Server); err != nil || pinned {
				if err != nil {
					return err
				}
				continue
			}
			rec, err := approvals.Get(r, m.Plugin, pl.Version, pl.Digest)
			var nf *approvals.NotFoundError
			if errors.As(err, &nf) {
				continue
			}
			if err != nil {
				return err
			}
			if rec.State != policy.StateApproved {
				continue
			}
			first = append(first, toolpins.Record{Plugin: m.Plugin, Server: m.Server, Hash: m.ToolsHash, By: approvals.AutoActor, Approved: now,
				Note: fmt.Sprintf("pinned from the first report of %s %s, by machine %s (token %s)", m.Plugin, pl.Version, rep.Machine.ID, p.TokenID)})
		}
		return nil
	})
	if err != nil {
		s.log.Error("tool pins: pin from first report", slog.String("machine", rep.Machine.ID), slog.String("error", err.Error()))
		return
	}
	for _, rec := range first {
		_, err := s.pol.PinFirst(rec, policystate.Actor{ID: approvals.AutoActor})
		var ap *policystate.AlreadyPinnedError
		if err != nil && !errors.As(err, &ap) {
			s.log.Error("tool pins: pin from first report", slog.String("plugin", rec.Plugin), slog.String("server", rec.Server), slog.String("error", err.Error()))
		}
	}
}

// ToolPinAuto is GET and PUT /v1/toolpins/auto: where pin from first
// report is on or off.
type ToolPinAuto = toolpins.Auto

type toolPinAutoBody struct {
	Marketplace string `json:"marketplace"`
	Plugin      string `json:"plugin"`
	// PinFromFirstReport is "on", "off", or "" to clear.
	PinFromFirstReport string `json:"pinFromFirstReport"`
}

func (s *Server) getToolPinAuto(c echo.Context) error {
	var a toolpins.Auto
	if err := s.deps.Store.View(func(r store.Reader) (err error) { a, err = toolpins.ReadAuto(r); return err }); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a)
}

func (s *Server) putToolPinAuto(c echo.Context) error {
	var b toolPinAutoBody
	if err := decodeBody(c, &b); err != nil {
		return err
	}
	scope, name := toolpins.ScopeMarketplace, strings.TrimSpace(b.Marketplace)
	field := "marketplace"
	switch {
	case name != "" && b.Plugin != "":
		return badField("plugin", "set pin from first report for a marketplace or for a plugin, not both")
	case b.Plugin != "":
		scope, name, field = toolpins.ScopePlugin, strings.TrimSpace(b.Plugin), "plugin"
	case name == "":
		return badField("marketplace", "name the marketplace (or the plugin) whose setting to change")
	}
	p := s.caller(c)
	var a toolpins.Auto
	err := s.deps.Store.Update(func(tx store.Tx) error {
		if err := toolpins.SetAuto(tx, scope, name, b.PinFromFirstReport); err != nil {
			var se *toolpins.SettingError
			if errors.As(err, &se) {
				if se.Field == "name" {
					return badField(field, "%s", se.Error())
				}
				return badField("pinFromFirstReport", "%s", se.Error())
			}
			return err
		}
		value := b.PinFromFirstReport
		if value == "" {
			value = "(cleared)"
		}
		var err error
		if a, err = toolpins.ReadAuto(tx); err != nil {
			return err
		}
		return audit.Append(tx, AuditEntry{Time: s.now().UTC(), Action: ActionToolPinAuto, Actor: p.TokenID, Role: p.Role, Object: scope + " " + name,
			Detail: map[string]any{"pinFromFirstReport": value}})
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a)
}

// toolPinDefinitions is GET /v1/toolpins/definitions: one set of a
// server's definitions as a report carried them.
func (s *Server) toolPinDefinitions(c echo.Context) error {
	b := toolPinBody{Plugin: c.QueryParam("plugin"), Server: c.QueryParam("server"), Hash: c.QueryParam("hash")}
	if err := validateToolPin(&b); err != nil {
		return err
	}
	var d toolpins.Definitions
	var ok bool
	if err := s.deps.Store.View(func(r store.Reader) (err error) {
		d, ok, err = toolpins.GetDefinitions(r, b.Plugin, b.Server, b.Hash)
		return err
	}); err != nil {
		return err
	}
	if !ok {
		return apiErr(http.StatusNotFound, CodeNotFound, "hash", "no report carried the definitions %s of server %q of %s; a client reports them with its next inventory report", b.Hash, b.Server, b.Plugin)
	}
	return c.JSON(http.StatusOK, d)
}
