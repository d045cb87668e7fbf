package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/approvals"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/channel"
	"github.com/wharfhq/wharf/internal/server/policystate"
	"github.com/wharfhq/wharf/internal/server/revocations"
	"github.com/wharfhq/wharf/plugin"
)

// Approvals admit plugin versions (package approvals): a version the server
// sees for the first time (in a channel build, or POST /v1/approvals/scan)
// is judged by its plugin's admission mode against the last approved
// version, recorded, and either approved (by wharf, audited) or held for an
// administrator. Channels serve only approved versions; the signed bundle
// carries every decision (data.json: wharf.admissions), so each change
// advances the policy head like a revocation.

// Audit actions of approvals.
const (
	ActionApprovalHeld    = "approval.held"    // a version seen and held
	ActionApprovalAuto    = "approval.auto"    // a version seen and approved without a person
	ActionApprovalApprove = "approval.approve" // an administrator approved a version
	ActionApprovalDeny    = "approval.deny"    // an administrator denied a version
	ActionApprovalMode    = "approval.mode"    // an admission mode set or cleared
)

// ApprovalRecord is one version the server has seen.
type ApprovalRecord = approvals.Record

// ApprovalList is GET /v1/approvals.
type ApprovalList struct {
	Approvals     []ApprovalRecord `json:"approvals"`
	PolicyVersion string           `json:"policyVersion"`
}

// PendingVersion is one row of GET /v1/approvals/pending: a held version,
// what it adds over the approved one (Summary, Adds) and how its files
// differ from it (Files).
type PendingVersion struct {
	ApprovalRecord
	Mode    string `json:"mode"`
	Summary string `json:"summary"`
	// Approved is the version the channels serve meanwhile (nil when no
	// version of the plugin is approved).
	Approved *approvals.Ref `json:"approved,omitempty"`
}

// PendingList is GET /v1/approvals/pending.
type PendingList struct {
	Pending []PendingVersion `json:"pending"`
}

// ApprovalDecision is the response of POST /v1/approvals/decisions.
type ApprovalDecision struct {
	Approval      ApprovalRecord `json:"approval"`
	PolicyVersion string         `json:"policyVersion"`
	Revision      uint64         `json:"revision"`
}

// ApprovalModes is GET and PUT /v1/approvals/modes.
type ApprovalModes struct {
	Default      string            `json:"default"`
	Marketplaces map[string]string `json:"marketplaces"`
	Plugins      map[string]string `json:"plugins"`
}

// ScanResult is POST /v1/approvals/scan: the versions seen for the first
// time, and the plugins that could not be read.
type ScanResult struct {
	Seen   []ApprovalRecord `json:"seen"`
	Failed []ScanFailure    `json:"failed"`
}

// ScanFailure is a plugin a scan could not fetch or read.
type ScanFailure struct {
	Plugin string `json:"plugin"`
	Error  string `json:"error"`
}

// admitter is the channel's view of the approvals.
func (s *Server) admitter() channel.Admitter {
	return func(ctx context.Context, h marketplace.Hit, vd *channel.Vendored) (channel.Admission, error) {
		rec, recs, modes, _, err := s.admitVersion(ctx, h, vd)
		var unreadable *unreadableError
		if errors.As(err, &unreadable) {
			// Not judged, so not served; the approved version stays.
			a := channel.Admission{Held: err.Error()}
			if last := approvals.LastApproved(recs); last != nil {
				a.Approved = last.Digest
			}
			return a, nil
		}
		if err != nil {
			return channel.Admission{}, err
		}
		return admissionOf(h.ID, rec, recs, modes), nil
	}
}

// admissionOf is what a channel may serve of rec's plugin.
func admissionOf(id plugin.ID, rec approvals.Record, recs []approvals.Record, modes approvals.Modes) channel.Admission {
	mode := modes.Mode(id)
	if rec.State == policy.StateApproved || mode == policy.ModeOpen {
		return channel.Admission{}
	}
	a := channel.Admission{Held: heldText(id, rec, mode)}
	if last := approvals.LastApproved(recs); last != nil {
		a.Approved = last.Digest
	}
	return a
}

// heldText is the one sentence of why rec is not approved, as clients say it.
func heldText(id plugin.ID, rec approvals.Record, mode string) string {
	v := &policy.AdmittedVersion{State: rec.State, Note: rec.Note}
	for _, c := range rec.Adds {
		v.Adds = append(v.Adds, c.Message)
	}
	err := policy.HeldError(id, rec.Version, v, nil, mode)
	return id.String() + " " + errors.Unwrap(err).Error()
}

// admitVersion returns the record of vd (the version a marketplace lists
// now for h), recording it when the server sees it for the first time:
// judged, stored, audited and carried by the next policy head. It also
// returns every record of the plugin, the modes, and whether it was new.
func (s *Server) admitVersion(ctx context.Context, h marketplace.Hit, vd *channel.Vendored) (approvals.Record, []approvals.Record, approvals.Modes, bool, error) {
	id := h.ID.String()
	var recs []approvals.Record
	var modes approvals.Modes
	if err := s.deps.Store.View(func(r store.Reader) (err error) {
		if recs, err = approvals.ForPlugin(r, id); err != nil {
			return err
		}
		modes, err = approvals.ReadModes(r)
		return err
	}); err != nil {
		return approvals.Record{}, nil, modes, false, err
	}
	for _, r := range recs {
		if r.Version == vd.Version && r.Digest == vd.Digest {
			return r, recs, modes, false, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return approvals.Record{}, nil, modes, false, err
	}
	rep, err := capability.Read(vd.Dir, h.Entry)
	if err != nil {
		return approvals.Record{}, recs, modes, false, &unreadableError{Plugin: id, Version: vd.Version, Err: err}
	}
	now := s.now().UTC()
	last := approvals.LastApproved(recs)
	mode := modes.Mode(h.ID)
	rec := approvals.Record{Plugin: id, Version: vd.Version, Digest: vd.Digest, Capabilities: rep.Capabilities, Findings: rep.Findings, Seen: now}
	rec.State, rec.Adds = approvals.Judge(mode, last, rep.Capabilities)
	if rec.Adds == nil {
		rec.Adds = []capability.Change{}
	}
	if last != nil {
		rec.Base = &approvals.Ref{Version: last.Version, Digest: last.Digest}
		if s.chans != nil {
			if old, err := s.chans.Vendor.ByDigest(last.Digest); err == nil {
				rec.Files, _ = approvals.Files(old.Dir, vd.Dir)
			}
		}
	}
	if rec.State == policy.StateApproved {
		rec.Auto, rec.By, rec.Decided = true, approvals.AutoActor, now
		switch {
		case mode == policy.ModeOpen:
			rec.Note = "admission mode open"
		case last == nil:
			rec.Note = "the first version the server saw of this plugin"
		default:
			rec.Note = "adds no capability over " + last.Version
		}
	}
	var head policyHead
	isNew := true
	err = s.deps.Store.Update(func(tx store.Tx) error {
		// Another replica may have recorded it meanwhile: its record stands.
		if got, err := approvals.Get(tx, id, vd.Version, vd.Digest); err == nil {
			rec, isNew = got, false
			return nil
		}
		if err := approvals.Put(tx, rec); err != nil {
			return err
		}
		var err error
		head, err = s.advanceApprovals(tx)
		if err != nil {
			return err
		}
		action := ActionApprovalHeld
		if rec.State == policy.StateApproved {
			action = ActionApprovalAuto
		}
		return audit.Append(tx, AuditEntry{Time: now, Action: action, Actor: approvals.AutoActor, Object: id + " " + rec.Version,
			Detail: map[string]any{"plugin": id, "version": rec.Version, "digest": rec.Digest, "mode": mode,
				"adds": capability.Summary(rec.Adds), "note": rec.Note, "policyVersion": head.Version, "revision": head.Revision}})
	})
	if err != nil {
		return rec, nil, modes, false, err
	}
	if isNew {
		s.pol.SetHead(head)
	}
	return rec, append(recs, rec), modes, isNew, nil
}

// unreadableError is a version whose capability set cannot be read: it is
// not judged, so no channel serves it.
type unreadableError struct {
	Plugin, Version string
	Err             error
}

func (e *unreadableError) Error() string {
	return fmt.Sprintf("%s %s is held: its capability set cannot be read (%v); report it to the marketplace's owner", e.Plugin, e.Version, e.Err)
}

func (e *unreadableError) Unwrap() error { return e.Err }

// advanceApprovals moves the policy head after a change of the approvals
// in tx.
func (s *Server) advanceApprovals(tx store.Tx) (policyHead, error) {
	layers, err := policystate.ReadLayers(tx)
	if err != nil {
		return policyHead{}, err
	}
	revs, err := revocations.Active(tx)
	if err != nil {
		return policyHead{}, err
	}
	return policystate.AdvanceHead(tx, layers, revs)
}

func (s *Server) listApprovals(c echo.Context) error {
	pluginID, state := strings.TrimSpace(c.QueryParam("plugin")), strings.TrimSpace(c.QueryParam("state"))
	switch state {
	case "", policy.StateApproved, policy.StateHeld, policy.StateDenied:
	default:
		return badField("state", "%q is not approved, held or denied", state)
	}
	out := ApprovalList{Approvals: []ApprovalRecord{}}
	err := s.deps.Store.View(func(r store.Reader) error {
		recs, err := approvals.List(r)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			if (pluginID == "" || rec.Plugin == pluginID) && (state == "" || rec.State == state) {
				out.Approvals = append(out.Approvals, rec)
			}
		}
		h, err := policystate.ReadHead(r)
		out.PolicyVersion = h.Version
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) pendingApprovals(c echo.Context) error {
	out := PendingList{Pending: []PendingVersion{}}
	err := s.deps.Store.View(func(r store.Reader) error {
		recs, err := approvals.List(r)
		if err != nil {
			return err
		}
		modes, err := approvals.ReadModes(r)
		if err != nil {
			return err
		}
		byPlugin := map[string][]approvals.Record{}
		for _, rec := range recs {
			byPlugin[rec.Plugin] = append(byPlugin[rec.Plugin], rec)
		}
		for _, rec := range recs {
			if rec.State != policy.StateHeld {
				continue
			}
			id, _ := plugin.ParseID(rec.Plugin)
			p := PendingVersion{ApprovalRecord: rec, Mode: modes.Mode(id), Summary: capability.Summary(rec.Adds)}
			if last := approvals.LastApproved(byPlugin[rec.Plugin]); last != nil {
				p.Approved = &approvals.Ref{Version: last.Version, Digest: last.Digest}
			}
			out.Pending = append(out.Pending, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

type decisionBody struct {
	Plugin   string `json:"plugin"`
	Version  string `json:"version"`
	Digest   string `json:"digest"`
	Decision string `json:"decision"` // approve or deny
	Note     string `json:"note"`
}

func (s *Server) decideApproval(c echo.Context) error {
	var b decisionBody
	if err := decodeBody(c, &b); err != nil {
		return err
	}
	b.Plugin, b.Version, b.Digest, b.Note = strings.TrimSpace(b.Plugin), strings.TrimSpace(b.Version), strings.TrimSpace(b.Digest), strings.TrimSpace(b.Note)
	if id, err := plugin.ParseID(b.Plugin); err != nil || id.String() != b.Plugin {
		return badField("plugin", "%q is not a plugin id; write it as name@marketplace", b.Plugin)
	}
	if b.Version == "" {
		return badField("version", "give the version to decide (GET /v1/approvals/pending lists the held ones)")
	}
	state := ""
	switch b.Decision {
	case "approve":
		state = policy.StateApproved
	case "deny":
		state = policy.StateDenied
	default:
		return badField("decision", "%q is not approve or deny", b.Decision)
	}
	if state == policy.StateDenied && b.Note == "" {
		return badField("note", "say why it is denied; clients show the note to their users")
	}
	if len(b.Note) > approvals.MaxNoteLen {
		return badField("note", "%s", (&approvals.NoteTooLongError{Len: len(b.Note)}).Error())
	}
	p := s.caller(c)
	now := s.now().UTC()
	var res ApprovalDecision
	err := s.deps.Store.Update(func(tx store.Tx) error {
		digest := b.Digest
		if digest == "" {
			recs, err := approvals.ForPlugin(tx, b.Plugin)
			if err != nil {
				return err
			}
			var found []string
			for _, r := range recs {
				if r.Version == b.Version {
					found = append(found, r.Digest)
				}
			}
			switch len(found) {
			case 0:
				return apiErr(http.StatusNotFound, CodeNotFound, "version", "the server has seen no version %s of %s; GET /v1/approvals lists what it has seen", b.Version, b.Plugin)
			case 1:
				digest = found[0]
			default:
				return badField("digest", "%s %s was seen with %d contents (%s); name the digest to decide", b.Plugin, b.Version, len(found), strings.Join(found, ", "))
			}
		}
		rec, err := approvals.Decide(tx, b.Plugin, b.Version, digest, state, p.TokenID, b.Note, now)
		var nf *approvals.NotFoundError
		var ce *approvals.ConflictError
		switch {
		case errors.As(err, &nf):
			return apiErr(http.StatusNotFound, CodeNotFound, "digest", "%s", nf.Error())
		case errors.As(err, &ce):
			return &APIError{Status: http.StatusConflict, Code: CodeConflict, Field: "decision", Message: ce.Error()}
		case err != nil:
			return err
		}
		head, err := s.advanceApprovals(tx)
		if err != nil {
			return err
		}
		res = ApprovalDecision{Approval: rec, PolicyVersion: head.Version, Revision: head.Revision}
		action := ActionApprovalApprove
		if state == policy.StateDenied {
			action = ActionApprovalDeny
		}
		return audit.Append(tx, AuditEntry{Time: now, Action: action, Actor: p.TokenID, Role: p.Role, Object: b.Plugin + " " + b.Version,
			Detail: map[string]any{"plugin": b.Plugin, "version": b.Version, "digest": digest, "note": b.Note,
				"adds": capability.Summary(rec.Adds), "policyVersion": head.Version, "revision": head.Revision}})
	})
	if err != nil {
		return err
	}
	s.pol.SetHead(policyHead{Revision: res.Revision, Version: res.PolicyVersion})
	return c.JSON(http.StatusOK, res)
}

func modesView(m approvals.Modes) ApprovalModes {
	return ApprovalModes{Default: policy.DefaultMode, Marketplaces: m.Marketplaces, Plugins: m.Plugins}
}

func (s *Server) getApprovalModes(c echo.Context) error {
	var m approvals.Modes
	if err := s.deps.Store.View(func(r store.Reader) (err error) { m, err = approvals.ReadModes(r); return err }); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, modesView(m))
}

type modeBody struct {
	Marketplace string `json:"marketplace"`
	Plugin      string `json:"plugin"`
	Mode        string `json:"mode"` // auto, review, open; "" clears
}

func (s *Server) putApprovalMode(c echo.Context) error {
	var b modeBody
	if err := decodeBody(c, &b); err != nil {
		return err
	}
	kind, name := approvals.ScopeMarketplace, strings.TrimSpace(b.Marketplace)
	switch {
	case name != "" && b.Plugin != "":
		return badField("plugin", "set the mode of a marketplace or of a plugin, not both")
	case b.Plugin != "":
		kind, name = approvals.ScopePlugin, strings.TrimSpace(b.Plugin)
		if id, err := plugin.ParseID(name); err != nil || id.String() != name {
			return badField("plugin", "%q is not a plugin id; write it as name@marketplace", name)
		}
	case name == "":
		return badField("marketplace", "name the marketplace (or the plugin) whose mode to set")
	}
	if b.Mode != "" && !policy.ValidMode(b.Mode) {
		return badField("mode", "%s", (&approvals.ModeError{Mode: b.Mode}).Error())
	}
	p := s.caller(c)
	now := s.now().UTC()
	var m approvals.Modes
	var head policyHead
	err := s.deps.Store.Update(func(tx store.Tx) error {
		if err := approvals.SetMode(tx, kind, name, b.Mode); err != nil {
			return badField(kind, "%s", err.Error())
		}
		var err error
		if head, err = s.advanceApprovals(tx); err != nil {
			return err
		}
		if m, err = approvals.ReadModes(tx); err != nil {
			return err
		}
		mode := b.Mode
		if mode == "" {
			mode = "(cleared)"
		}
		return audit.Append(tx, AuditEntry{Time: now, Action: ActionApprovalMode, Actor: p.TokenID, Role: p.Role, Object: kind + " " + name,
			Detail: map[string]any{"mode": mode, "policyVersion": head.Version, "revision": head.Revision}})
	})
	if err != nil {
		return err
	}
	s.pol.SetHead(head)
	return c.JSON(http.StatusOK, modesView(m))
}

type scanBody struct {
	Marketplace string `json:"marketplace"` // "" scans every marketplace
}

// scanApprovals looks at the version every plugin of the catalog (of one
// marketplace, when named) that the policy allows lists now, fetching it
// into the server's own copies as a channel build does, and records the
// versions seen for the first time.
func (s *Server) scanApprovals(c echo.Context) error {
	var b scanBody
	if err := decodeBody(c, &b); err != nil {
		return err
	}
	mkt := strings.TrimSpace(b.Marketplace)
	bld, lc, err := s.channels()
	if err != nil {
		return err
	}
	cat, err := lc.Loaded()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	decide, gate, _, err := s.channelDecider(ctx)
	if err != nil {
		return err
	}
	out := ScanResult{Seen: []ApprovalRecord{}, Failed: []ScanFailure{}}
	known := false
	for _, h := range cat.All() {
		if mkt != "" && h.ID.Source != mkt {
			continue
		}
		known = true
		// Like a channel, fetch only what the policy allows.
		msrc, _ := json.Marshal(h.Known.Source)
		v, err := decide(ctx, channel.Candidate{ID: h.ID, Entry: h.Entry, MarketplaceSource: msrc})
		if err != nil {
			return err
		}
		if !v.Allowed || v.Forced == "off" {
			continue
		}
		vd, err := bld.Vendor.Get(ctx, h, gate)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			out.Failed = append(out.Failed, ScanFailure{Plugin: h.ID.String(), Error: err.Error()})
			continue
		}
		rec, _, _, isNew, err := s.admitVersion(ctx, h, vd)
		if err != nil {
			out.Failed = append(out.Failed, ScanFailure{Plugin: h.ID.String(), Error: err.Error()})
			continue
		}
		if isNew {
			out.Seen = append(out.Seen, rec)
		}
	}
	if mkt != "" && !known {
		return apiErr(http.StatusNotFound, CodeNotFound, "marketplace", "no plugin of marketplace %q is known; GET /v1/marketplaces lists them", mkt)
	}
	return c.JSON(http.StatusOK, out)
}
