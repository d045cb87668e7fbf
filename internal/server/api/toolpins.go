package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/toolpin"
	"github.com/wharfhq/wharf/internal/server/policystate"
	"github.com/wharfhq/wharf/internal/server/toolpins"
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
