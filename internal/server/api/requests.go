package api

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/policystate"
	"github.com/wharfhq/wharf/internal/server/requests"
)

// Requests: a client asks for a plugin its policy denies (POST
// /v1/requests, any token), sees its own requests and their answers (GET
// /v1/requests/mine); an admin lists them all and approves (optionally
// until a date) or denies each, with a note. The approved requests in
// force are policy: an answer that changes them advances the policy head
// in the same transaction as the answer and its audit entry, so the signed
// bundle carries them (data.json: wharf.waivers) and its ETag changes.

// Audit actions of requests.
const (
	ActionRequestCreate  = "request.create"
	ActionRequestApprove = "request.approve"
	ActionRequestDeny    = "request.deny"
)

// RequestInfo is a request as the API shows it, with its status now
// (pending, approved, expired or denied).
type RequestInfo struct {
	requests.Request
	Status string `json:"status"`
}

// RequestList is GET /v1/requests and /v1/requests/mine.
type RequestList struct {
	Requests []RequestInfo `json:"requests"`
	// Next is the cursor of the following page; empty on the last.
	Next string `json:"next,omitempty"`
}

// RequestResult is the response of POST /v1/requests.
type RequestResult struct {
	Request RequestInfo `json:"request"`
}

// RequestAnswerResult is the response of approve and deny.
type RequestAnswerResult struct {
	Request       RequestInfo `json:"request"`
	PolicyVersion string      `json:"policyVersion"`
	Revision      uint64      `json:"revision"`
}

type requestBody struct {
	Plugin  string `json:"plugin"`
	Reason  string `json:"reason"`
	Machine string `json:"machine"`
}

type answerBody struct {
	Until string `json:"until"`
	Note  string `json:"note"`
}

func (s *Server) requestInfo(q requests.Request) RequestInfo {
	return RequestInfo{Request: q, Status: q.Status(s.now())}
}

// requestError turns the queue's errors into API errors.
func requestError(err error) error {
	var (
		fe  *requests.FieldError
		nf  *requests.NotFoundError
		dup *requests.DuplicateError
		qe  *requests.QuotaError
		ae  *requests.AnsweredError
	)
	switch {
	case errors.As(err, &fe):
		return badField(fe.Field, "%s", fe.Message)
	case errors.As(err, &nf):
		return apiErr(http.StatusNotFound, CodeNotFound, "id", "%s", nf.Error())
	case errors.As(err, &dup):
		return apiErr(http.StatusConflict, CodeConflict, "plugin", "%s", dup.Error())
	case errors.As(err, &qe):
		return withHint(&APIError{Status: http.StatusForbidden, Code: CodeQuotaExceeded, Field: "request", Message: qe.Error(), cause: err},
			"wait for answers to the requests already made; an administrator answers them at GET /v1/requests")
	case errors.As(err, &ae):
		return apiErr(http.StatusConflict, CodeConflict, "id", "%s", ae.Error())
	}
	return err
}

func (s *Server) createRequest(c echo.Context) error {
	var body requestBody
	if err := decodeBody(c, &body); err != nil {
		return err
	}
	id, err := requests.NewID()
	if err != nil {
		return err
	}
	p := s.caller(c)
	q := requests.Request{ID: id, Plugin: body.Plugin, Reason: body.Reason, Machine: body.Machine,
		Token: p.TokenID, Role: string(p.Role), Created: s.now().UTC()}
	if err := requests.CheckNew(&q); err != nil {
		return requestError(err)
	}
	err = s.deps.Store.Update(func(tx store.Tx) error {
		if err := requests.Create(tx, q); err != nil {
			return err
		}
		return audit.Append(tx, AuditEntry{Time: q.Created, Action: ActionRequestCreate, Actor: p.TokenID, Role: p.Role, Object: q.ID,
			Detail: map[string]any{"plugin": q.Plugin, "reason": q.Reason, "machine": q.Machine}})
	})
	if err != nil {
		return requestError(err)
	}
	return c.JSON(http.StatusCreated, RequestResult{Request: s.requestInfo(q)})
}

// requestPage is one page of qs (oldest first) that keep selects.
func (s *Server) requestPage(c echo.Context, read func(r store.Reader) ([]requests.Request, error), keep func(RequestInfo) bool) error {
	limit, err := parseLimitDefault(c, maxPageSize)
	if err != nil {
		return err
	}
	after, err := keyCursor(c)
	if err != nil {
		return err
	}
	var qs []requests.Request
	if err := s.deps.Store.View(func(r store.Reader) (err error) { qs, err = read(r); return err }); err != nil {
		return err
	}
	infos := make([]RequestInfo, 0, len(qs))
	for _, q := range qs {
		if in := s.requestInfo(q); keep(in) {
			infos = append(infos, in)
		}
	}
	var out RequestList
	out.Requests, out.Next = pageByKey(infos, func(q RequestInfo) string { return timeKey(q.Created, q.ID) }, after, limit)
	if out.Requests == nil {
		out.Requests = []RequestInfo{}
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) myRequests(c echo.Context) error {
	tok := s.caller(c).TokenID
	return s.requestPage(c, func(r store.Reader) ([]requests.Request, error) { return requests.Of(r, tok) },
		func(RequestInfo) bool { return true })
}

var requestStatuses = []string{requests.StatusPending, requests.StatusApproved, requests.StatusExpired, requests.StatusDenied}

func (s *Server) listRequests(c echo.Context) error {
	status := c.QueryParam("status")
	if status != "" && !slices.Contains(requestStatuses, status) {
		return badField("status", "%q is not a status; use one of %s", trimForMessage(status), strings.Join(requestStatuses, ", "))
	}
	return s.requestPage(c, requests.All, func(q RequestInfo) bool { return status == "" || q.Status == status })
}

// parseUntil reads an approval's date: RFC 3339, or a day (YYYY-MM-DD,
// which means the start of that day in UTC).
func parseUntil(v string) (*time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			t = t.UTC()
			return &t, nil
		}
	}
	return nil, badField("until", "%q is not a date; give 2027-01-01 or 2027-01-01T00:00:00Z", trimForMessage(v))
}

func (s *Server) approveRequest(c echo.Context) error {
	return s.answerRequest(c, requests.StatusApproved)
}

func (s *Server) denyRequest(c echo.Context) error { return s.answerRequest(c, requests.StatusDenied) }

func (s *Server) answerRequest(c echo.Context, status string) error {
	id := c.Param("id")
	if !requests.ValidID(id) {
		return badField("id", "%q is not a request id (q- and 16 hex digits; GET /v1/requests lists them)", trimForMessage(id))
	}
	var body answerBody
	if err := decodeBody(c, &body); err != nil {
		return err
	}
	until, err := parseUntil(body.Until)
	if err != nil {
		return err
	}
	p := s.caller(c)
	now := s.now().UTC()
	a := requests.Answer{Status: status, Until: until, Note: body.Note, By: p.TokenID, At: now}
	if err := requests.CheckAnswer(&a, now); err != nil {
		return requestError(err)
	}
	var res RequestAnswerResult
	advanced := false
	err = s.deps.Store.Update(func(tx store.Tx) error {
		q, err := requests.Respond(tx, id, a)
		if err != nil {
			return err
		}
		changed, err := requests.Refresh(tx, now)
		if err != nil {
			return err
		}
		head, err := policystate.ReadHead(tx)
		if err != nil {
			return err
		}
		if changed {
			layers, err := policystate.ReadLayers(tx)
			if err != nil {
				return err
			}
			revs, err := readRevocations(tx)
			if err != nil {
				return err
			}
			if head, err = policystate.AdvanceHead(tx, layers, revs); err != nil {
				return err
			}
			advanced = true
		}
		res = RequestAnswerResult{Request: RequestInfo{Request: q, Status: q.Status(now)}, PolicyVersion: head.Version, Revision: head.Revision}
		action := ActionRequestApprove
		if status == requests.StatusDenied {
			action = ActionRequestDeny
		}
		detail := map[string]any{"plugin": q.Plugin, "requester": q.Token, "note": a.Note, "policyVersion": head.Version, "revision": head.Revision}
		if until != nil {
			detail["until"] = until.Format(time.RFC3339)
		}
		return audit.Append(tx, AuditEntry{Time: now, Action: action, Actor: p.TokenID, Role: p.Role, Object: q.ID, Detail: detail})
	})
	if err != nil {
		return requestError(err)
	}
	if advanced {
		s.pol.SetHead(policystate.Head{Revision: res.Revision, Version: res.PolicyVersion})
	}
	return c.JSON(http.StatusOK, res)
}
