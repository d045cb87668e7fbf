package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/store"
)

// Audit actions.
const (
	ActionPolicyPut         = "policy.layer.put"
	ActionPolicyDelete      = "policy.layer.delete"
	ActionDecisionDeny      = "decision.deny"
	ActionTokenCreate       = "token.create"
	ActionTokenDelete       = "token.delete"
	ActionMarketplaceAdd    = "marketplace.add"
	ActionMarketplaceUpdate = "marketplace.update"
	ActionMarketplaceRemove = "marketplace.remove"
	// ActionAuthRefused is a request refused with 401 or 403 (rate-limited
	// per client address and route: see auditRefusal).
	ActionAuthRefused = "auth.refused"
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
		return appendAudit(tx, AuditEntry{Time: now.UTC(), Action: ActionAuthRefused, Actor: actor, Role: role, Object: route, Detail: detail})
	})
	if err != nil {
		s.log.Warn("audit of a refused request not written", "route", route, "client", ip, "err", err)
	}
}

// AuditEntry is one line of the append-only audit log.
type AuditEntry struct {
	Seq    uint64         `json:"seq"`
	Time   time.Time      `json:"time"`
	Action string         `json:"action"`
	Actor  string         `json:"actor"` // token id, or "bootstrap"
	Role   Role           `json:"role,omitempty"`
	Object string         `json:"object"`
	Detail map[string]any `json:"detail,omitempty"`
}

func seqKey(n uint64) string { return fmt.Sprintf("%020d", n) }

// appendAudit appends e inside tx, so the entry commits with the change it
// records or not at all.
func appendAudit(tx store.Tx, e AuditEntry) error {
	n, err := tx.NextSequence(bucketAudit)
	if err != nil {
		return err
	}
	e.Seq = n
	raw, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return tx.Put(bucketAudit, seqKey(n), raw)
}

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

// readLog reads one page of an append-only log (audit, policy history)
// whose keys are seqKey numbers: the entries after the cursor that keep
// accepts, at most limit, and the cursor of the next page ("" at the end).
func readLog[T any](st store.Store, bucket, what string, after uint64, limit int, keep func(T) bool, seq func(T) uint64) ([]T, string, error) {
	var out []T
	next := ""
	err := st.View(func(r store.Reader) error {
		out, next = []T{}, ""
		from := ""
		if after > 0 {
			from = seqKey(after)
		}
		// Read in steps from the cursor on: a page costs the entries up to
		// its end (more when a filter skips many), never the whole log.
		step := max(limit+1, 64)
		for {
			kvs, err := r.ListAfter(bucket, from, step)
			if err != nil {
				return err
			}
			for _, kv := range kvs {
				n, err := strconv.ParseUint(kv.Key, 10, 64)
				if err != nil || n <= after {
					continue
				}
				var e T
				if err := json.Unmarshal(kv.Value, &e); err != nil {
					return fmt.Errorf("%s %s: corrupt: %w", what, kv.Key, err)
				}
				if !keep(e) {
					continue
				}
				if len(out) == limit {
					next = strconv.FormatUint(seq(out[limit-1]), 10)
					return nil
				}
				out = append(out, e)
			}
			if len(kvs) < step {
				return nil
			}
			from = kvs[len(kvs)-1].Key
		}
	})
	return out, next, err
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
	entries, next, err := readLog(s.deps.Store, bucketAudit, "audit entry", after, limit, func(e AuditEntry) bool {
		return (action == "" || e.Action == action) && (actor == "" || e.Actor == actor) && (since.IsZero() || !e.Time.Before(since))
	}, func(e AuditEntry) uint64 { return e.Seq })
	if err != nil {
		return err
	}
	page := AuditPage{Entries: entries, Next: next}
	return c.JSON(http.StatusOK, page)
}
