package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
)

// Audit actions (package audit's).
const (
	ActionPolicyPut         = audit.ActionPolicyPut
	ActionPolicyDelete      = audit.ActionPolicyDelete
	ActionDecisionDeny      = audit.ActionDecisionDeny
	ActionTokenCreate       = audit.ActionTokenCreate
	ActionTokenDelete       = audit.ActionTokenDelete
	ActionMarketplaceAdd    = audit.ActionMarketplaceAdd
	ActionMarketplaceUpdate = audit.ActionMarketplaceUpdate
	ActionMarketplaceRemove = audit.ActionMarketplaceRemove
	ActionAuthRefused       = audit.ActionAuthRefused
)

// Refusals written to the audit log per client address and route: a burst
// of refusalBurst, then one a minute; the entry that follows a quiet spell
// counts the refusals left out meanwhile ("suppressed").
const (
	refusalBurst     = 10
	refusalPerMinute = 1
)

// auditRefusal writes a 401 or 403 to the audit log, at most refusalBurst
// then refusalPerMinute per minute for one client address and route; the
// refusals left out are counted in the next entry written. actor is the
// token id when the token was known.
func (s *Server) auditRefusal(c echo.Context, status int, actor string, role Role, msg string) {
	ip := clientKey(c)
	route := c.Request().Method + " " + c.Path()
	if c.Path() == "" {
		route = c.Request().Method + " " + c.Request().URL.Path
	}
	now := s.now()
	ok, suppressed := s.refusals.admit(ip+" "+route, now)
	if !ok {
		return
	}
	if actor == "" {
		actor = "anonymous"
	}
	detail := map[string]any{"status": status, "route": route, "client": ip, "reason": msg}
	if suppressed > 0 {
		detail["suppressed"] = suppressed
	}
	err := s.deps.Store.Update(func(tx store.Tx) error {
		return audit.Append(tx, AuditEntry{Time: now.UTC(), Action: ActionAuthRefused, Actor: actor, Role: role, Object: route, Detail: detail})
	})
	if err != nil {
		s.log.Warn("audit of a refused request not written", "route", route, "client", ip, "err", err)
	}
}

// AuditEntry is one line of the audit log.
type AuditEntry = audit.Entry

// AuditPage is one page of GET /v1/audit.
type AuditPage struct {
	Entries []AuditEntry `json:"entries"`
	// Next is the cursor for the following page; empty on the last page.
	Next string `json:"next,omitempty"`
}

const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

func parseLimit(c echo.Context) (int, error) {
	return parseLimitParam(c.QueryParam("limit"))
}

// parseCursor reads the opaque cursor: the last sequence number returned.
func parseCursor(c echo.Context) (uint64, error) {
	v := c.QueryParam("cursor")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, badField("cursor", "cursor %q is not one this server returned; start again without it", v)
	}
	return n, nil
}

func (s *Server) audit(c echo.Context) error {
	limit, err := parseLimit(c)
	if err != nil {
		return err
	}
	after, err := parseCursor(c)
	if err != nil {
		return err
	}
	action, actor := c.QueryParam("action"), c.QueryParam("actor")
	since, err := parseSinceParam(c.QueryParam("since"))
	if err != nil {
		return err
	}
	entries, next, err := audit.Page(s.deps.Store, audit.Filter{Action: action, Actor: actor, Since: since}, after, limit)
	if err != nil {
		return err
	}
	page := AuditPage{Entries: entries, Next: next}
	return c.JSON(http.StatusOK, page)
}
