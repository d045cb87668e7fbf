package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/web"
	"github.com/wharfhq/wharf/plugin"
)

// The audit page reads the log newest first. The store lists keys only in
// ascending order, so the page finds the newest sequence number by
// bisection and then reads windows of the log backwards from it.

// auditWindow is how many sequence numbers one backward read covers.
const auditWindow = 256

// auditQuery is the audit page's filter, parsed.
type auditQuery struct {
	action, actor, object string
	since, until          time.Time // until is exclusive
}

func (q auditQuery) keep(e AuditEntry) bool {
	return (q.action == "" || e.Action == q.action) &&
		(q.actor == "" || strings.Contains(strings.ToLower(e.Actor), q.actor)) &&
		(q.object == "" || strings.Contains(strings.ToLower(e.Object), q.object)) &&
		(q.since.IsZero() || !e.Time.Before(q.since)) &&
		(q.until.IsZero() || e.Time.Before(q.until))
}

// lastSeq is the highest sequence number in the log (0: empty).
func lastSeq(r store.Reader) (uint64, error) {
	// The largest n with an entry above it, by bisection: n in [lo, hi).
	lo, hi := uint64(0), uint64(1)
	for {
		kvs, err := r.ListAfter(audit.Bucket, audit.SeqKey(hi), 1)
		if err != nil {
			return 0, err
		}
		if len(kvs) == 0 {
			break
		}
		lo, hi = hi, hi*2
		if hi > 1<<62 {
			return 0, fmt.Errorf("audit log: sequence numbers beyond %d", uint64(1)<<62)
		}
	}
	// Entries exist above lo (or lo is 0), none above hi.
	for lo < hi {
		mid := lo + (hi-lo)/2
		kvs, err := r.ListAfter(audit.Bucket, audit.SeqKey(mid), 1)
		if err != nil {
			return 0, err
		}
		if len(kvs) == 0 {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}

// auditNewest reads at most limit entries that q keeps, newest first,
// with sequence numbers below before (0: from the newest), and the cursor
// of the next page (0 at the end).
func auditNewest(st store.Store, q auditQuery, before uint64, limit int) ([]AuditEntry, uint64, error) {
	var out []AuditEntry
	var next uint64
	err := st.View(func(r store.Reader) error {
		out, next = nil, 0
		if before == 0 {
			last, err := lastSeq(r)
			if err != nil {
				return err
			}
			before = last + 1
		}
		hi := before // exclusive
		for hi > 1 {
			lo := uint64(1)
			if hi > auditWindow+1 {
				lo = hi - auditWindow
			}
			kvs, err := r.ListAfter(audit.Bucket, audit.SeqKey(lo-1), int(hi-lo))
			if err != nil {
				return err
			}
			for i := len(kvs) - 1; i >= 0; i-- {
				n, err := strconv.ParseUint(kvs[i].Key, 10, 64)
				if err != nil || n >= hi || n < lo {
					continue
				}
				var e AuditEntry
				if err := json.Unmarshal(kvs[i].Value, &e); err != nil {
					return fmt.Errorf("audit entry %s: corrupt: %w", kvs[i].Key, err)
				}
				if !q.keep(e) {
					continue
				}
				if len(out) == limit {
					next = out[limit-1].Seq
					return nil
				}
				out = append(out, e)
			}
			hi = lo
		}
		return nil
	})
	return out, next, err
}

// parseAuditTime reads a time as typed in the filter: a date (2026-12-03),
// a datetime-local value (2026-12-03T15:04) or RFC 3339; dates and local
// values are UTC.
func parseAuditTime(field, v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, badField(field, "%s %q is not a date (2026-12-03), a date and time (2026-12-03T15:04) or an RFC 3339 time", field, shortParam(v))
}

func (u *console) auditPage(c echo.Context) error {
	f := web.AuditFilter{Action: c.QueryParam("action"), Actor: strings.TrimSpace(c.QueryParam("actor")), Object: strings.TrimSpace(c.QueryParam("object")),
		Since: strings.TrimSpace(c.QueryParam("since")), Until: strings.TrimSpace(c.QueryParam("until"))}
	v := web.AuditView{Layout: u.layout(c, "Audit log", "audit"), Filter: f, Actions: options(auditActions, f.Action)}
	q := auditQuery{action: f.Action, actor: strings.ToLower(f.Actor), object: strings.ToLower(f.Object)}
	var err error
	fail := func(err error) error {
		v.Messages = append(v.Messages, web.Message{Kind: "error", Text: toAPIError(err).Message})
		return u.render(c, http.StatusBadRequest, web.PageAudit, v)
	}
	if len(f.Actor) > 256 || len(f.Object) > 256 || len(f.Action) > 256 {
		return fail(badField("actor", "a filter is longer than 256 bytes"))
	}
	if q.since, err = parseAuditTime("since", f.Since); err != nil {
		return fail(err)
	}
	if q.until, err = parseAuditTime("until", f.Until); err != nil {
		return fail(err)
	}
	if !q.until.IsZero() && len(f.Until) == len("2006-01-02") {
		q.until = q.until.Add(24 * time.Hour) // a date includes its day
	}
	var before uint64
	if cur := c.QueryParam("cursor"); cur != "" {
		if before, err = strconv.ParseUint(cur, 10, 64); err != nil || before == 0 {
			return fail(badField("cursor", "cursor %q is not one this page made; start again without it", shortParam(cur)))
		}
	}
	entries, next, err := auditNewest(u.s.deps.Store, q, before, auditPageSize)
	if err != nil {
		return err
	}
	for _, e := range entries {
		user := e.Email
		if user == "" {
			user = e.Subject
		}
		v.Entries = append(v.Entries, web.AuditRow{Seq: e.Seq, Time: e.Time.UTC(), Action: e.Action, Actor: e.Actor, Role: string(e.Role),
			User: user, Object: e.Object, Details: auditDetails(e)})
	}
	if next != 0 {
		nq := c.Request().URL.Query()
		nq.Set("cursor", strconv.FormatUint(next, 10))
		v.NextURL = "/ui/admin/audit?" + nq.Encode()
	}
	return u.render(c, http.StatusOK, web.PageAudit, v)
}

// auditDetails turns an entry's detail map into labelled values a person
// reads: keys as words, sources as typed, lists as lists, times as times.
func auditDetails(e AuditEntry) []web.DetailItem {
	keys := make([]string, 0, len(e.Detail))
	for k := range e.Detail {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]web.DetailItem, 0, len(keys))
	for _, k := range keys {
		it := web.DetailItem{Key: words(k)}
		switch val := e.Detail[k].(type) {
		case []any:
			for _, x := range val {
				it.List = append(it.List, detailText(k, x))
			}
			if len(it.List) == 0 {
				it.Value = "none"
			}
		default:
			it.Value = detailText(k, val)
		}
		out = append(out, it)
	}
	return out
}

// detailText is one detail value as text.
func detailText(key string, v any) string {
	switch val := v.(type) {
	case nil:
		return "none"
	case string:
		if t, err := time.Parse(time.RFC3339Nano, val); err == nil {
			return t.UTC().Format("2006-01-02 15:04:05 MST")
		}
		return val
	case bool:
		if val {
			return "yes"
		}
		return "no"
	case float64:
		return strconv.FormatFloat(val, 'f', -1, 64)
	case map[string]any:
		if key == "source" {
			raw, _ := json.Marshal(val)
			var src plugin.MarketplaceSource
			if json.Unmarshal(raw, &src) == nil && src.Kind.Known() {
				return src.String()
			}
		}
		ks := make([]string, 0, len(val))
		for k := range val {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		parts := make([]string, 0, len(ks))
		for _, k := range ks {
			parts = append(parts, words(k)+": "+detailText(k, val[k]))
		}
		return strings.Join(parts, "; ")
	case []any:
		parts := make([]string, 0, len(val))
		for _, x := range val {
			parts = append(parts, detailText(key, x))
		}
		return strings.Join(parts, ", ")
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// words spells a camelCase key as words: policyVersion → policy version.
func words(k string) string {
	var b strings.Builder
	for i, r := range k {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
