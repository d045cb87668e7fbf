package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/policystate"
	"github.com/wharfhq/wharf/internal/server/revocations"
	"github.com/wharfhq/wharf/plugin"
)

// Revocations withdraw a plugin version, or a content digest, everywhere.
// They are part of the policy (policystate): each change bumps the policy
// head, so the signed bundle carries them and its ETag changes.
// Audit actions of revocations.
const (
	ActionRevocationCreate = policystate.ActionRevocationCreate
	ActionRevocationDelete = policystate.ActionRevocationDelete
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
	revs, h, err := s.pol.Revocations()
	if err != nil {
		return RevocationList{}, err
	}
	out := RevocationList{PolicyVersion: h.Version}
	out.Revocations, out.Next = pageByKey(revs, func(r policy.Revocation) string { return timeKey(r.Created, r.ID) }, after, limit)
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
	head, err := s.pol.Revoke(rv, s.actor(c))
	if err != nil {
		return policyError(err)
	}
	return c.JSON(http.StatusCreated, RevocationWriteResult{Revocation: rv, PolicyVersion: head.Version, Revision: head.Revision})
}

func (s *Server) deleteRevocation(c echo.Context) error {
	id := c.Param("id")
	if !revocations.ValidID(id) {
		return badField("id", "%q is not a revocation id (r- and 16 hex digits; GET /v1/revocations lists them)", id)
	}
	rv, head, err := s.pol.Lift(id, s.actor(c))
	if err != nil {
		return policyError(err)
	}
	return c.JSON(http.StatusOK, RevocationWriteResult{Revocation: rv, PolicyVersion: head.Version, Revision: head.Revision})
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
