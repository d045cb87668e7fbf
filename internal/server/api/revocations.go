package api

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/revocations"
	"github.com/wharfhq/wharf/plugin"
)

// Revocations withdraw a plugin version, or a content digest, everywhere.
// They are part of the policy: each change bumps the policy head (revision
// and version), so the signed bundle carries them (data.json:
// wharf.revocations) and its ETag changes; every change is kept in the
// revocation history and the audit log in the same transaction.
// Audit actions of revocations.
const (
	ActionRevocationCreate = "revocation.create"
	ActionRevocationDelete = "revocation.delete"
)

// RevocationHistoryEntry records one revocation made or lifted.
type RevocationHistoryEntry = revocations.HistoryEntry

// RevocationList is GET /v1/revocations.
type RevocationList struct {
	Revocations   []policy.Revocation `json:"revocations"`
	PolicyVersion string              `json:"policyVersion"`
	// Next is the cursor of the following page; empty on the last.
	Next string `json:"next,omitempty"`
}

// RevocationWriteResult is the response of POST and DELETE.
type RevocationWriteResult struct {
	Revocation    policy.Revocation `json:"revocation"`
	PolicyVersion string            `json:"policyVersion"`
	Revision      uint64            `json:"revision"`
}

type revocationBody struct {
	Plugin  string `json:"plugin"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	Reason  string `json:"reason"`
}

// readRevocations returns the active revocations, oldest first.
func readRevocations(r store.Reader) (policy.Revocations, error) { return revocations.Active(r) }

// fullPolicyVersion is the policy version of layers and revocations. With
// no revocation it is the layers' version alone, so a server that never
// revoked anything keeps the versions it always had.
func fullPolicyVersion(layers []Layer, revs policy.Revocations, adm *policy.Admissions) string {
	v := policyVersion(layers)
	if len(revs) == 0 && adm.Empty() {
		return v
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", v)
	for _, r := range revs {
		// What a client acts on; timestamps and authors are left out.
		fmt.Fprintf(h, "revocation %q %q %q %q %q\n", r.ID, r.Plugin, r.Version, r.Digest, r.Reason)
	}
	admissionsVersion(h, adm)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func validateRevocation(b *revocationBody) error {
	b.Plugin, b.Version, b.Digest = strings.TrimSpace(b.Plugin), strings.TrimSpace(b.Version), strings.TrimSpace(b.Digest)
	switch {
	case b.Digest != "" && (b.Plugin != "" || b.Version != ""):
		return badField("digest", "revoke either a plugin version ({\"plugin\", \"version\"}) or a digest ({\"digest\"}), not both")
	case b.Digest != "":
		if !inventory.ValidDigest(b.Digest) {
			return badField("digest", "%q is not a w1: digest (w1: and the base64 of a sha256)", b.Digest)
		}
	case b.Plugin == "":
		return badField("plugin", "give the plugin (name@marketplace) and version to revoke, or a digest")
	default:
		id, err := plugin.ParseID(b.Plugin)
		if err != nil || id.String() != b.Plugin {
			return badField("plugin", "%q is not a plugin id; write it as name@marketplace", b.Plugin)
		}
		if b.Version == "" {
			return badField("version", "give the version of %s to revoke (revoking every version is blocking the plugin: use a policy layer)", b.Plugin)
		}
		if len(b.Version) > 128 || strings.ContainsAny(b.Version, " \t\r\n") {
			return badField("version", "%q is not a version", b.Version)
		}
	}
	b.Reason = strings.TrimSpace(b.Reason)
	if b.Reason == "" {
		return badField("reason", "say why it is revoked; clients show the reason to their users")
	}
	if len(b.Reason) > revocations.MaxReasonLen {
		return badField("reason", "reason is %d bytes; the limit is %d", len(b.Reason), revocations.MaxReasonLen)
	}
	return nil
}

func (s *Server) listRevocations(c echo.Context) error {
	limit, err := parseLimitDefault(c, maxPageSize)
	if err != nil {
		return err
	}
	after, err := keyCursor(c)
	if err != nil {
		return err
	}
	out, err := s.revocationPage(after, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// revocationPage is one page of the revocations, oldest first.
func (s *Server) revocationPage(after string, limit int) (RevocationList, error) {
	var out RevocationList
	err := s.deps.Store.View(func(r store.Reader) error {
		revs, err := readRevocations(r)
		if err != nil {
			return err
		}
		h, err := readHead(r)
		out = RevocationList{Revocations: revs, PolicyVersion: h.Version}
		return err
	})
	if err != nil {
		return out, err
	}
	out.Revocations, out.Next = pageByKey(out.Revocations, func(r policy.Revocation) string { return timeKey(r.Created, r.ID) }, after, limit)
	if out.Revocations == nil {
		out.Revocations = policy.Revocations{}
	}
	return out, nil
}

func (s *Server) createRevocation(c echo.Context) error {
	var body revocationBody
	if err := decodeBody(c, &body); err != nil {
		return err
	}
	if err := validateRevocation(&body); err != nil {
		return err
	}
	id, err := revocations.NewID()
	if err != nil {
		return err
	}
	p := s.caller(c)
	rv := policy.Revocation{ID: id, Plugin: body.Plugin, Version: body.Version, Digest: body.Digest, Reason: body.Reason,
		By: p.TokenID, Created: s.now().UTC()}
	var res RevocationWriteResult
	err = s.deps.Store.Update(func(tx store.Tx) error {
		revs, err := readRevocations(tx)
		if err != nil {
			return err
		}
		for _, o := range revs {
			if o.Plugin == rv.Plugin && o.Version == rv.Version && o.Digest == rv.Digest {
				return &APIError{Status: http.StatusConflict, Code: CodeConflict, Field: "revocation",
					Message: fmt.Sprintf("%s is already revoked by %s (%s); lift that one first to change the reason", revocationObject(o), o.ID, o.Reason)}
			}
		}
		if len(revs) >= revocations.Max {
			return badField("revocation", "there are already %d revocations, the limit; lift old ones first", revocations.Max)
		}
		head, err := s.commitRevocation(tx, append(revs, rv), rv, revocations.ActionRevoke, p)
		res = RevocationWriteResult{Revocation: rv, PolicyVersion: head.Version, Revision: head.Revision}
		return err
	})
	if err != nil {
		return err
	}
	s.setHead(policyHead{Revision: res.Revision, Version: res.PolicyVersion})
	return c.JSON(http.StatusCreated, res)
}

func (s *Server) deleteRevocation(c echo.Context) error {
	id := c.Param("id")
	if !revocations.ValidID(id) {
		return badField("id", "%q is not a revocation id (r- and 16 hex digits; GET /v1/revocations lists them)", id)
	}
	p := s.caller(c)
	var res RevocationWriteResult
	err := s.deps.Store.Update(func(tx store.Tx) error {
		revs, err := readRevocations(tx)
		if err != nil {
			return err
		}
		kept := revs[:0:0]
		var gone *policy.Revocation
		for i := range revs {
			if revs[i].ID == id {
				gone = &revs[i]
				continue
			}
			kept = append(kept, revs[i])
		}
		if gone == nil {
			return apiErr(http.StatusNotFound, CodeNotFound, "id", "no active revocation %s; GET /v1/revocations lists them", id)
		}
		head, err := s.commitRevocation(tx, kept, *gone, revocations.ActionLift, p)
		res = RevocationWriteResult{Revocation: *gone, PolicyVersion: head.Version, Revision: head.Revision}
		return err
	})
	if err != nil {
		return err
	}
	s.setHead(policyHead{Revision: res.Revision, Version: res.PolicyVersion})
	return c.JSON(http.StatusOK, res)
}

func revocationObject(r policy.Revocation) string {
	if r.Digest != "" {
		return r.Digest
	}
	return r.Plugin + " " + r.Version
}

// commitRevocation writes the change, the new policy head, a history entry
// and an audit entry in tx.
func (s *Server) commitRevocation(tx store.Tx, revs policy.Revocations, rv policy.Revocation, action string, p principal) (policyHead, error) {
	layers, err := readLayers(tx)
	if err != nil {
		return policyHead{}, err
	}
	revocations.Sort(revs)
	if action == revocations.ActionLift {
		err = revocations.Lift(tx, rv.ID)
	} else {
		err = revocations.Put(tx, rv)
	}
	if err != nil {
		return policyHead{}, err
	}
	head, err := advanceHead(tx, layers, revs)
	if err != nil {
		return head, err
	}
	now := s.now().UTC()
	if err := revocations.AppendHistory(tx, RevocationHistoryEntry{Time: now, Action: action, Revocation: rv,
		PolicyVersion: head.Version, Revision: head.Revision, Actor: p.TokenID}); err != nil {
		return head, err
	}
	auditAction := ActionRevocationCreate
	if action == revocations.ActionLift {
		auditAction = ActionRevocationDelete
	}
	return head, audit.Append(tx, AuditEntry{Time: now, Action: auditAction, Actor: p.TokenID, Role: p.Role, Object: rv.ID,
		Detail: map[string]any{"plugin": rv.Plugin, "version": rv.Version, "digest": rv.Digest, "reason": rv.Reason,
			"policyVersion": head.Version, "revision": head.Revision}})
}

// RevocationHistoryPage is one page of GET /v1/revocations/history.
type RevocationHistoryPage struct {
	Entries []RevocationHistoryEntry `json:"entries"`
	Next    string                   `json:"next,omitempty"`
}

func (s *Server) revocationHistory(c echo.Context) error {
	limit, err := parseLimit(c)
	if err != nil {
		return err
	}
	after, err := parseCursor(c)
	if err != nil {
		return err
	}
	entries, next, err := revocations.History(s.deps.Store, after, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, RevocationHistoryPage{Entries: entries, Next: next})
}

// revocationByID reads one active revocation.
func (s *Server) revocationByID(id string) (policy.Revocation, error) {
	var rv policy.Revocation
	err := s.deps.Store.View(func(r store.Reader) (err error) {
		rv, err = revocations.Get(r, id)
		var nf *revocations.NotFoundError
		if errors.As(err, &nf) {
			return apiErr(http.StatusNotFound, CodeNotFound, "id", "%s", nf.Error())
		}
		return err
	})
	return rv, err
}
