package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/toolpin"
	"github.com/wharfhq/wharf/internal/server/audit"
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
const ActionToolPinApprove = "toolpin.approve"

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

// withToolPins folds the stored pins into a policy version (advanceHead).
func withToolPins(r store.Reader, version string) (string, error) {
	recs, err := toolpins.All(r)
	if err != nil {
		return "", err
	}
	return toolpins.Version(version, recs), nil
}

// bundleToolPins are the pins the bundle carries.
func bundleToolPins(r store.Reader) ([]toolpin.Pin, error) {
	recs, err := toolpins.All(r)
	if err != nil {
		return nil, err
	}
	return toolpins.Pins(recs), nil
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
		h, err := readHead(r)
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
	var res ToolPinWriteResult
	err := s.deps.Store.Update(func(tx store.Tx) error {
		seen, err := toolpins.Reported(tx, rec.Plugin, rec.Server, rec.Hash)
		if err != nil {
			return err
		}
		if !seen {
			return apiErr(http.StatusNotFound, CodeNotFound, "hash",
				"no machine reports server %q of %s listing definitions %s; GET /v1/toolpins/drift lists what machines report", rec.Server, rec.Plugin, rec.Hash)
		}
		old, had, err := toolpins.Get(tx, rec.Plugin, rec.Server)
		if err != nil {
			return err
		}
		if had && old.Hash == rec.Hash {
			return &APIError{Status: http.StatusConflict, Code: CodeConflict, Field: "hash",
				Message: fmt.Sprintf("server %q of %s is already pinned to %s", rec.Server, rec.Plugin, rec.Hash)}
		}
		all, err := toolpins.All(tx)
		if err != nil {
			return err
		}
		if !had && len(all) >= toolpins.Max {
			return badField("plugin", "there are already %d tool pins, the limit", toolpins.Max)
		}
		if err := toolpins.Put(tx, rec); err != nil {
			return err
		}
		layers, err := readLayers(tx)
		if err != nil {
			return err
		}
		revs, err := readRevocations(tx)
		if err != nil {
			return err
		}
		head, err := advanceHead(tx, layers, revs)
		if err != nil {
			return err
		}
		res = ToolPinWriteResult{Pin: rec, PolicyVersion: head.Version, Revision: head.Revision}
		if had {
			res.Previous = old.Hash
		}
		return audit.Append(tx, AuditEntry{Time: rec.Approved, Action: ActionToolPinApprove, Actor: p.TokenID, Role: p.Role,
			Object: rec.Plugin + " " + rec.Server,
			Detail: map[string]any{"plugin": rec.Plugin, "server": rec.Server, "hash": rec.Hash, "previous": res.Previous, "note": rec.Note,
				"policyVersion": head.Version, "revision": head.Revision}})
	})
	if err != nil {
		return err
	}
	s.setHead(policyHead{Revision: res.Revision, Version: res.PolicyVersion})
	return c.JSON(http.StatusCreated, res)
}
