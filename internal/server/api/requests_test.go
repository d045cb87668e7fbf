package api

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/server/requests"
)

func (e *env) bundleWaivers(t *testing.T) (string, policy.Waivers) {
	t.Helper()
	res := e.do("GET", "/v1/policy/bundle", e.tokens[RoleAgent], nil)
	if res.status != http.StatusOK {
		t.Fatalf("bundle: %d %s", res.status, res.body)
	}
	var key BundleKey
	e.do("GET", "/v1/policy/bundle/key", e.tokens[RoleAgent], nil).json(t, &key)
	_, info, err := policy.ReadBundle(bytes.NewReader(res.body), []byte(key.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return res.header.Get("ETag"), info.Waivers
}

func (e *env) ask(t *testing.T, role Role, plugin, reason string) RequestInfo {
	t.Helper()
	res := e.do("POST", "/v1/requests", e.tokens[role], map[string]string{"plugin": plugin, "reason": reason, "machine": "host-1"})
	if res.status != http.StatusCreated {
		t.Fatalf("request %s as %s: %d %s", plugin, role, res.status, res.body)
	}
	var out RequestResult
	res.json(t, &out)
	return out.Request
}

// A developer asks, sees only their own requests; an admin approves until
// a date: the signed bundle carries the waiver and its ETag changes; a
// denial with a note does not change the policy; every step is audited;
// after the date the request shows as expired and the next answer drops
// the waiver from the bundle.
func TestRequestApproveDenyAndTheBundle(t *testing.T) {
	ck := newClock()
	ck.set(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	e := newEnv(t, func(d *Deps) { d.Now = ck.now })
	etag0, ws := e.bundleWaivers(t)
	if len(ws) != 0 {
		t.Fatalf("waivers before any request: %+v", ws)
	}
	mine := e.ask(t, RoleDeveloper, "tool@corp", "I need it for the release")
	theirs := e.ask(t, RoleAgent, "other@corp", "CI needs it")
	if mine.Status != requests.StatusPending || mine.Token == "" || mine.Machine != "host-1" || mine.Role != "developer" {
		t.Fatalf("created: %+v", mine)
	}
	var list RequestList
	e.do("GET", "/v1/requests/mine", e.tokens[RoleDeveloper], nil).json(t, &list)
	if len(list.Requests) != 1 || list.Requests[0].ID != mine.ID {
		t.Fatalf("the developer's requests: %+v", list.Requests)
	}
	if res := e.do("GET", "/v1/requests", e.tokens[RoleDeveloper], nil); res.status != http.StatusForbidden {
		t.Fatalf("a developer listing every request: %d", res.status)
	}
	if res := e.do("POST", "/v1/requests/"+mine.ID+"/approve", e.tokens[RoleDeveloper], map[string]string{}); res.status != http.StatusForbidden {
		t.Fatalf("a developer approving: %d", res.status)
	}
	e.do("GET", "/v1/requests?status=pending", e.tokens[RoleAdmin], nil).json(t, &list)
	if len(list.Requests) != 2 {
		t.Fatalf("pending: %+v", list.Requests)
	}

	res := e.do("POST", "/v1/requests/"+mine.ID+"/approve", e.tokens[RoleAdmin], map[string]string{"until": "2027-01-01", "note": "for the migration"})
	if res.status != http.StatusOK {
		t.Fatalf("approve: %d %s", res.status, res.body)
	}
	var ans RequestAnswerResult
	res.json(t, &ans)
	if ans.Request.Status != requests.StatusApproved || ans.Request.Answer == nil || !ans.Request.Answer.Until.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("approved: %+v", ans.Request)
	}
	etag1, ws := e.bundleWaivers(t)
	if etag1 == etag0 || len(ws) != 1 || ws[0].Plugin != "tool@corp" || ws[0].Request != mine.ID || ws[0].Note != "for the migration" {
		t.Fatalf("bundle after the approval: etag %s (was %s), waivers %+v", etag1, etag0, ws)
	}
	if res := e.do("GET", "/v1/policy/bundle", e.tokens[RoleAgent], nil, "If-None-Match: "+etag0); res.status != http.StatusOK {
		t.Fatalf("a client holding the old bundle must get the new one: %d", res.status)
	}

	res = e.do("POST", "/v1/requests/"+theirs.ID+"/deny", e.tokens[RoleAdmin], map[string]string{"note": "use deploy@corp"})
	if res.status != http.StatusOK {
		t.Fatalf("deny: %d %s", res.status, res.body)
	}
	res.json(t, &ans)
	if ans.Request.Status != requests.StatusDenied || ans.Request.Answer.Note != "use deploy@corp" {
		t.Fatalf("denied: %+v", ans.Request)
	}
	if etag, _ := e.bundleWaivers(t); etag != etag1 {
		t.Fatal("a denial of a pending request changed the policy")
	}
	e.do("GET", "/v1/requests/mine", e.tokens[RoleAgent], nil).json(t, &list)
	if len(list.Requests) != 1 || list.Requests[0].Status != requests.StatusDenied || list.Requests[0].Answer.Note != "use deploy@corp" {
		t.Fatalf("the agent sees its answer: %+v", list.Requests)
	}
	if res := e.do("POST", "/v1/requests/"+theirs.ID+"/approve", e.tokens[RoleAdmin], map[string]string{}); res.status != http.StatusConflict {
		t.Fatalf("approving a denied request: %d %s", res.status, res.body)
	}

	// Every step is in the audit log.
	for _, action := range []string{ActionRequestCreate, ActionRequestApprove, ActionRequestDeny} {
		var page struct {
			Entries []AuditEntry `json:"entries"`
		}
		e.do("GET", "/v1/audit?action="+action, e.tokens[RoleAdmin], nil).json(t, &page)
		if len(page.Entries) == 0 {
			t.Fatalf("no %s in the audit log", action)
		}
	}

	// After the date: expired in the lists; the next answer drops it from
	// the bundle.
	ck.set(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	e.do("GET", "/v1/requests/mine", e.tokens[RoleDeveloper], nil).json(t, &list)
	if list.Requests[0].Status != requests.StatusExpired {
		t.Fatalf("after the date: %+v", list.Requests[0])
	}
	third := e.ask(t, RoleDeveloper, "third@corp", "another one")
	if res := e.do("POST", "/v1/requests/"+third.ID+"/deny", e.tokens[RoleAdmin], map[string]string{}); res.status != http.StatusOK {
		t.Fatalf("deny: %d %s", res.status, res.body)
	}
	if etag, ws := e.bundleWaivers(t); etag == etag1 || len(ws) != 0 {
		t.Fatalf("after the date and an answer the bundle still carries %+v (etag %s)", ws, etag)
	}
}

// Hostile or wrong input is refused naming the field; one token cannot
// flood the queue.
func TestRequestRefusals(t *testing.T) {
	e := newEnv(t)
	dev := e.tokens[RoleDeveloper]
	for _, c := range []struct {
		name   string
		body   any
		status int
		field  string
	}{
		{"not a plugin id", map[string]string{"plugin": "../../etc@x/y", "reason": "x"}, 400, "plugin"},
		{"no reason", map[string]string{"plugin": "tool@corp"}, 400, "reason"},
		{"reason too long", map[string]string{"plugin": "tool@corp", "reason": strings.Repeat("r", requests.MaxReasonLen+1)}, 400, "reason"},
		{"control characters", map[string]string{"plugin": "tool@corp", "reason": "ok\x1b]0;pwned\x07"}, 400, "reason"},
		{"unknown field", map[string]string{"plugin": "tool@corp", "reason": "x", "approved": "true"}, 400, "approved"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := e.do("POST", "/v1/requests", dev, c.body)
			if ae := res.apiError(t); res.status != c.status || ae.Field != c.field {
				t.Fatalf("%d %+v, want %d on %s", res.status, ae, c.status, c.field)
			}
		})
	}
	if res := e.do("POST", "/v1/requests", "", map[string]string{"plugin": "tool@corp", "reason": "x"}); res.status != http.StatusUnauthorized {
		t.Fatalf("without a token: %d", res.status)
	}
	first := e.ask(t, RoleDeveloper, "p0@corp", "x")
	if res := e.do("POST", "/v1/requests", dev, map[string]string{"plugin": "p0@corp", "reason": "again"}); res.status != http.StatusConflict || !strings.Contains(res.apiError(t).Message, first.ID) {
		t.Fatalf("asking twice: %d %s", res.status, res.body)
	}
	for i := 1; i < requests.MaxPendingPerToken; i++ {
		e.ask(t, RoleDeveloper, fmt.Sprintf("p%d@corp", i), "x")
	}
	res := e.do("POST", "/v1/requests", dev, map[string]string{"plugin": "more@corp", "reason": "x"})
	if ae := res.apiError(t); res.status != http.StatusForbidden || ae.Code != CodeQuotaExceeded {
		t.Fatalf("over the quota: %d %+v", res.status, ae)
	}
	admin := e.tokens[RoleAdmin]
	for _, c := range []struct {
		path  string
		body  any
		code  int
		field string
	}{
		{"/v1/requests/nope/approve", map[string]string{}, 400, "id"},
		{"/v1/requests/q-00000000000000ff/approve", map[string]string{}, 404, "id"},
		{"/v1/requests/" + first.ID + "/approve", map[string]string{"until": "soon"}, 400, "until"},
		{"/v1/requests/" + first.ID + "/approve", map[string]string{"until": "2001-01-01"}, 400, "until"},
		{"/v1/requests/" + first.ID + "/deny", map[string]string{"until": "2999-01-01"}, 400, "until"},
		{"/v1/requests/" + first.ID + "/deny", map[string]string{"note": strings.Repeat("n", requests.MaxNoteLen+1)}, 400, "note"},
	} {
		res := e.do("POST", c.path, admin, c.body)
		if ae := res.apiError(t); res.status != c.code || ae.Field != c.field {
			t.Fatalf("%s %v: %d %+v, want %d on %s", c.path, c.body, res.status, ae, c.code, c.field)
		}
	}
	if res := e.do("GET", "/v1/requests?status=maybe", admin, nil); res.status != 400 || res.apiError(t).Field != "status" {
		t.Fatalf("bad status filter: %d %s", res.status, res.body)
	}
}

// parseUntil reads any string without panicking, and a date it accepts is
// in UTC.
func FuzzParseUntil(f *testing.F) {
	for _, s := range []string{"", "2027-01-01", "2027-01-01T00:00:00Z", "2027-01-01T09:00:00+02:00", "soon", "2027-13-40", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := parseUntil(s)
		if err != nil {
			if _, ok := err.(*APIError); !ok {
				t.Fatalf("parseUntil(%q): %T %v", s, err, err)
			}
			return
		}
		if u != nil && u.Location() != time.UTC {
			t.Fatalf("parseUntil(%q) = %v, not UTC", s, u)
		}
	})
}
