package api

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/inventory"
)

var (
	pinH1 = "mcp1:" + strings.Repeat("1", 64)
	pinH2 = "mcp1:" + strings.Repeat("2", 64)
)

func (e *env) bundle() BundlePolicy {
	e.t.Helper()
	var key BundleKey
	e.do("GET", "/v1/policy/bundle/key", e.tokens[RoleAgent], nil).json(e.t, &key)
	res := e.do("GET", "/v1/policy/bundle", e.tokens[RoleAgent], nil)
	if res.status != http.StatusOK {
		e.t.Fatalf("bundle: %d %s", res.status, res.body)
	}
	b, err := ReadBundle(bytes.NewReader(res.body), key)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// Reported definitions no pin approves are listed; an admin approves one
// reported hash, which changes the policy version and puts the pin in the
// signed bundle; every approval is audited; other roles are refused.
func TestToolPinsApproveReportedDefinitions(t *testing.T) {
	e := newEnv(t)
	admin := e.tokens[RoleAdmin]
	rep := invReport(1)
	rep.MCPServers = []inventory.MCPServer{{Plugin: "db@corp", Server: "pg", ToolsHash: pinH1}}
	mustStatus(t, e.report(e.tokens[RoleAgent], rep), http.StatusOK)

	var drift ToolPinDriftList
	e.do("GET", "/v1/toolpins/drift", admin, nil).json(t, &drift)
	if len(drift.Drift) != 1 || drift.Drift[0].Observed != pinH1 || drift.Drift[0].Pinned != "" || drift.Drift[0].Machines != 1 {
		t.Fatalf("drift = %+v", drift)
	}
	for _, r := range []Role{RoleDeveloper, RoleCI, RoleAgent} {
		mustStatus(t, e.do("GET", "/v1/toolpins/drift", e.tokens[r], nil), http.StatusForbidden)
		mustStatus(t, e.do("POST", "/v1/toolpins", e.tokens[r], map[string]string{"plugin": "db@corp", "server": "pg", "hash": pinH1}), http.StatusForbidden)
	}
	before := e.bundle()

	for field, body := range map[string]map[string]string{
		"hash":   {"plugin": "db@corp", "server": "pg", "hash": "sha256:00"},
		"plugin": {"plugin": "db", "server": "pg", "hash": pinH1},
		"server": {"plugin": "db@corp", "server": "", "hash": pinH1},
		"note":   {"plugin": "db@corp", "server": "pg", "hash": pinH1, "note": strings.Repeat("n", 2000)},
	} {
		res := e.do("POST", "/v1/toolpins", admin, body)
		if res.status != http.StatusBadRequest || res.apiError(t).Field != field {
			t.Errorf("bad %s: %d %s", field, res.status, res.body)
		}
	}
	res := e.do("POST", "/v1/toolpins", admin, map[string]string{"plugin": "db@corp", "server": "pg", "hash": pinH2})
	if res.status != http.StatusNotFound || res.apiError(t).Field != "hash" {
		t.Fatalf("a hash no machine reports: %d %s", res.status, res.body)
	}

	res = e.do("POST", "/v1/toolpins", admin, map[string]string{"plugin": "db@corp", "server": "pg", "hash": pinH1, "note": "reviewed the tools"})
	mustStatus(t, res, http.StatusCreated)
	var w ToolPinWriteResult
	res.json(t, &w)
	if w.Pin.Hash != pinH1 || w.Pin.By == "" || w.PolicyVersion == before.Version || w.Revision <= before.Revision {
		t.Fatalf("approval = %+v (before %s/%d)", w, before.Version, before.Revision)
	}
	mustStatus(t, e.do("POST", "/v1/toolpins", admin, map[string]string{"plugin": "db@corp", "server": "pg", "hash": pinH1}), http.StatusConflict)

	b := e.bundle()
	if b.Version != w.PolicyVersion || len(b.ToolPins) != 1 || b.ToolPins[0].Hash != pinH1 || b.ToolPins[0].Server != "pg" {
		t.Fatalf("bundle after approval: version %s pins %+v", b.Version, b.ToolPins)
	}
	e.do("GET", "/v1/toolpins/drift", admin, nil).json(t, &drift)
	if len(drift.Drift) != 0 {
		t.Fatalf("approved definitions still drift: %+v", drift)
	}

	// The server changes its description: the machine reports the drift.
	rep.MCPServers = []inventory.MCPServer{{Plugin: "db@corp", Server: "pg", ToolsHash: pinH2, Pinned: pinH1, Drift: true}}
	mustStatus(t, e.report(e.tokens[RoleAgent], rep), http.StatusOK)
	e.do("GET", "/v1/toolpins/drift", admin, nil).json(t, &drift)
	if len(drift.Drift) != 1 || drift.Drift[0].Observed != pinH2 || drift.Drift[0].Pinned != pinH1 {
		t.Fatalf("drift = %+v", drift)
	}
	res = e.do("POST", "/v1/toolpins", admin, map[string]string{"plugin": "db@corp", "server": "pg", "hash": pinH2})
	mustStatus(t, res, http.StatusCreated)
	res.json(t, &w)
	if w.Previous != pinH1 {
		t.Fatalf("second approval = %+v", w)
	}
	var list ToolPinList
	e.do("GET", "/v1/toolpins", admin, nil).json(t, &list)
	if len(list.Pins) != 1 || list.Pins[0].Hash != pinH2 || list.PolicyVersion != w.PolicyVersion {
		t.Fatalf("pins = %+v", list)
	}
	var page AuditPage
	e.do("GET", "/v1/audit", admin, nil).json(t, &page)
	n := 0
	for _, en := range page.Entries {
		if en.Action == ActionToolPinApprove && en.Object == "db@corp pg" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("audit has %d approvals, want 2", n)
	}
	// A later report without servers withdraws the machine's observations.
	rep.MCPServers = nil
	mustStatus(t, e.report(e.tokens[RoleAgent], rep), http.StatusOK)
	res = e.do("POST", "/v1/toolpins", admin, map[string]string{"plugin": "db@corp", "server": "pg", "hash": pinH1})
	if res.status != http.StatusNotFound {
		t.Fatalf("a hash no machine reports any more: %d %s", res.status, res.body)
	}
}
