package api

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/server/fleet"
	"github.com/wharfhq/wharf/plugin"
)

func machineN(n int) string { return fmt.Sprintf("m-%032x", n) }

func fakeDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "w1:" + base64.StdEncoding.EncodeToString(sum[:])
}

func invPlugin(id, version, digest string) inventory.Plugin {
	return inventory.Plugin{ID: id, Version: version, Digest: digest, Scope: "user", Install: inventory.InstallUser,
		Enabled: true, State: inventory.StateActive}
}

func invReport(n int, ps ...inventory.Plugin) inventory.Report {
	if ps == nil {
		ps = []inventory.Plugin{}
	}
	return inventory.Report{Machine: inventory.Machine{ID: machineN(n), Hostname: fmt.Sprintf("laptop-%d", n)},
		Client: inventory.Client{Kind: inventory.KindWharf, Version: "1.0.0"}, Plugins: ps, Created: time.Now()}
}

func (e *env) report(token string, r inventory.Report) resp {
	e.t.Helper()
	return e.do("PUT", "/v1/inventory/machines/"+r.Machine.ID, token, r)
}

func mustStatus(t *testing.T, res resp, want int) {
	t.Helper()
	if res.status != want {
		t.Fatalf("status %d, want %d: %s", res.status, want, res.body)
	}
}

// Three machines report; "who has deploy" is exactly the two that have it;
// the one whose digest the catalog does not publish is flagged.
func TestInventoryWhoHas(t *testing.T) {
	e, f := newCatalogEnv(t)
	agent2 := e.createToken(RoleAgent)
	mustStatus(t, e.report(e.tokens[RoleAgent], invReport(1, invPlugin("deploy@corp", "1.2.0", f.deployW1), invPlugin("lint@corp", "0.3.0", fakeDigest("lint")))), 200)
	mustStatus(t, e.report(agent2, invReport(2, invPlugin("lint@corp", "0.3.0", fakeDigest("lint")))), 200)
	mustStatus(t, e.report(e.tokens[RoleDeveloper], invReport(3, invPlugin("deploy@corp", "1.2.0", fakeDigest("edited")))), 200)

	for _, role := range []Role{RoleAdmin, RoleCI} {
		res := e.do("GET", "/v1/inventory/plugins/corp/deploy", e.tokens[role], nil)
		mustStatus(t, res, 200)
		var pm PluginMachines
		res.json(t, &pm)
		var got []string
		for _, m := range pm.Machines {
			got = append(got, m.Machine)
		}
		if !slices.Equal(got, []string{machineN(1), machineN(3)}) {
			t.Fatalf("who has deploy@corp = %v, want machines 1 and 3", got)
		}
		if pm.Machines[0].Installs[0].UnknownDigest || !pm.Machines[1].Installs[0].UnknownDigest {
			t.Fatalf("only machine 3's edited tree has an unknown digest: %+v", pm.Machines)
		}
		if pm.Plugin.Machines != 2 || pm.Plugin.UnknownDigests != 1 || pm.Plugin.Versions["1.2.0"] != 2 || pm.Plugin.CatalogDigest != f.deployW1 {
			t.Fatalf("deploy counts = %+v", pm.Plugin)
		}
	}
	res := e.do("GET", "/v1/inventory/plugins", e.tokens[RoleCI], nil)
	mustStatus(t, res, 200)
	var list PluginInventoryList
	res.json(t, &list)
	if len(list.Plugins) != 2 || list.Plugins[1].Plugin != "lint@corp" || list.Plugins[1].Machines != 2 || list.Plugins[1].Installs["user"] != 2 {
		t.Fatalf("plugins = %+v", list.Plugins)
	}
	// Paging: one machine per page.
	res = e.do("GET", "/v1/inventory/plugins/corp/deploy?limit=1", e.tokens[RoleAdmin], nil)
	var page PluginMachines
	res.json(t, &page)
	if len(page.Machines) != 1 || page.Next != machineN(1) {
		t.Fatalf("first page = %+v", page)
	}
	res = e.do("GET", "/v1/inventory/plugins/corp/deploy?limit=1&cursor="+page.Next, e.tokens[RoleAdmin], nil)
	page = PluginMachines{}
	res.json(t, &page)
	if len(page.Machines) != 1 || page.Machines[0].Machine != machineN(3) || page.Next != "" {
		t.Fatalf("second page = %+v", page)
	}
	res = e.do("GET", "/v1/inventory/machines/"+machineN(2), e.tokens[RoleAdmin], nil)
	mustStatus(t, res, 200)
	var mi fleet.MachineInfo
	res.json(t, &mi)
	if mi.Report.Machine.Hostname != "laptop-2" || len(mi.Report.Plugins) != 1 {
		t.Fatalf("machine 2 = %+v", mi)
	}
	mustStatus(t, e.do("GET", "/v1/inventory/machines/"+machineN(9), e.tokens[RoleAdmin], nil), 404)
}

// Developers and agents report but cannot read the fleet; ci can.
func TestInventoryReadRoles(t *testing.T) {
	e := newEnv(t)
	mustStatus(t, e.report(e.tokens[RoleDeveloper], invReport(1, invPlugin("a@corp", "1", ""))), 200)
	for _, role := range []Role{RoleDeveloper, RoleAgent} {
		for _, p := range []string{"/v1/inventory/plugins", "/v1/inventory/plugins/corp/a", "/v1/inventory/machines/" + machineN(1), "/v1/inventory/stale"} {
			if res := e.do("GET", p, e.tokens[role], nil); res.status != 403 {
				t.Fatalf("%s reads %s: %d", role, p, res.status)
			}
		}
	}
	mustStatus(t, e.do("GET", "/v1/inventory/machines/"+machineN(1), e.tokens[RoleCI], nil), 200)
}

// A token writes only the machines it reported first.
func TestInventoryMachineBoundToToken(t *testing.T) {
	e := newEnv(t)
	mine := invReport(1, invPlugin("a@corp", "1.0.0", ""))
	mustStatus(t, e.report(e.tokens[RoleAgent], mine), 200)
	for _, r := range []inventory.Report{invReport(1, invPlugin("evil@corp", "6.6.6", "")), mine} {
		res := e.report(e.tokens[RoleDeveloper], r)
		mustStatus(t, res, 403)
		if ae := res.apiError(t); ae.Code != CodeMachineOwned || !strings.Contains(ae.Message, machineN(1)) {
			t.Fatalf("error = %+v", ae)
		}
	}
	res := e.do("GET", "/v1/inventory/machines/"+machineN(1), e.tokens[RoleAdmin], nil)
	var mi fleet.MachineInfo
	res.json(t, &mi)
	if mi.Report.Plugins[0].ID != "a@corp" {
		t.Fatalf("another token overwrote the record: %+v", mi.Report.Plugins)
	}
	// The owner reports an unchanged inventory: nothing changes.
	res = e.report(e.tokens[RoleAgent], mine)
	var rr ReportResult
	res.json(t, &rr)
	if rr.Changed {
		t.Fatal("an unchanged report must answer changed: false")
	}
}

func TestInventoryReportRefusals(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.ReportRate, d.ReportBurst = 0.001, 2 })
	tok := e.fleetToken(2)
	cases := []struct {
		name, path, field string
		body              any
		status            int
	}{
		{"machine id in the path", "/v1/inventory/machines/laptop", "id", invReport(1), 400},
		{"another machine's report", "/v1/inventory/machines/" + machineN(2), "machine.id", invReport(3), 400},
		{"bad digest", "/v1/inventory/machines/" + machineN(4), "plugins[0].digest", invReport(4, invPlugin("a@corp", "1", "sha256:x")), 400},
		{"unknown field", "/v1/inventory/machines/" + machineN(5), "extra", `{"extra": 1}`, 400},
		{"too large", "/v1/inventory/machines/" + machineN(6), "", strings.Repeat(" ", inventory.MaxReportBytes+10), 413},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do("PUT", tc.path, tok, tc.body)
			mustStatus(t, res, tc.status)
			if ae := res.apiError(t); ae.Field != tc.field {
				t.Fatalf("field %q, want %q: %s", ae.Field, tc.field, res.body)
			}
		})
	}
	// The per-machine rate: a burst of 2, then 429 with Retry-After.
	r := invReport(7)
	mustStatus(t, e.report(tok, r), 200)
	mustStatus(t, e.report(tok, r), 200)
	res := e.report(tok, r)
	mustStatus(t, res, 429)
	if res.header.Get("Retry-After") == "" || res.apiError(t).Code != CodeRateLimited {
		t.Fatalf("429 without Retry-After or code: %v %s", res.header, res.body)
	}
	// Another machine has its own budget.
	mustStatus(t, e.report(tok, invReport(8)), 200)
}

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestInventoryStaleMachines(t *testing.T) {
	clk := &testClock{t: time.Now()}
	e := newEnv(t, func(d *Deps) { d.Now = clk.now; d.Inventory.Now = clk.now })
	tok := e.fleetToken(2)
	mustStatus(t, e.report(tok, invReport(1)), 200)
	clk.add(40 * 24 * time.Hour)
	mustStatus(t, e.report(tok, invReport(2)), 200)
	res := e.do("GET", "/v1/inventory/stale?days=30", e.tokens[RoleCI], nil)
	mustStatus(t, res, 200)
	var sm StaleMachines
	res.json(t, &sm)
	if len(sm.Machines) != 1 || sm.Machines[0].Machine != machineN(1) {
		t.Fatalf("stale = %+v, want machine 1 only", sm)
	}
	mustStatus(t, e.do("GET", "/v1/inventory/stale?days=0", e.tokens[RoleCI], nil), 400)
}

// bundleFiles unpacks a bundle's files.
func bundleFiles(t *testing.T, body []byte) map[string][]byte {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(tr)
		out[h.Name] = raw
	}
}

func packBundle(t *testing.T, files map[string][]byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, raw := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(raw)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(raw)
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// A revocation travels in the signed bundle, changes its ETag, and leaves
// it when lifted; a bundle whose revocations were altered is refused.
func TestRevocationInBundle(t *testing.T) {
	e := newEnv(t)
	a := newAgent(e)
	a.pull()
	before := a.etag
	mustStatus(t, e.do("POST", "/v1/revocations", e.tokens[RoleDeveloper], map[string]string{"plugin": "deploy@corp", "version": "1.2.0", "reason": "x"}), 403)
	res := e.do("POST", "/v1/revocations", e.tokens[RoleAdmin], map[string]string{"plugin": "deploy@corp", "version": "1.2.0", "reason": "leaks tokens"})
	mustStatus(t, res, 201)
	var w RevocationWriteResult
	res.json(t, &w)
	res = e.do("POST", "/v1/revocations", e.tokens[RoleAdmin], map[string]string{"digest": fakeDigest("bad tree"), "reason": "malware"})
	mustStatus(t, res, 201)
	var w2 RevocationWriteResult
	res.json(t, &w2)

	if a.pull() != 200 || a.etag == before {
		t.Fatal("a revocation must change the bundle and its ETag")
	}
	revs := a.policy.Revocations
	if len(revs) != 2 || revs[0].ID != w.Revocation.ID || revs[0].Reason != "leaks tokens" || revs[1].Digest != fakeDigest("bad tree") {
		t.Fatalf("bundle revocations = %+v", revs)
	}
	if r, ok := revs.Match(mustID(t, "deploy@corp"), "1.2.0", ""); !ok || r.ID != w.Revocation.ID {
		t.Fatal("the bundle's revocations must match deploy@corp 1.2.0")
	}
	// The bundle's bytes, altered: drop the first revocation from data.json.
	body := e.do("GET", "/v1/policy/bundle", e.tokens[RoleAgent], nil).body
	files := bundleFiles(t, body)
	for name, raw := range files {
		if strings.HasSuffix(name, "data.json") {
			files[name] = bytes.Replace(raw, []byte("leaks tokens"), []byte("fine really"), 1)
		}
	}
	if _, err := ReadBundle(bytes.NewReader(packBundle(t, files)), a.key); err == nil {
		t.Fatal("a bundle with altered revocations must fail its signature check")
	}
	if _, _, err := policy.ReadBundle(bytes.NewReader(body), []byte(a.key.PublicKey)); err != nil {
		t.Fatalf("the untouched bundle verifies: %v", err)
	}

	// Lift the first: it leaves the bundle.
	mustStatus(t, e.do("DELETE", "/v1/revocations/"+w.Revocation.ID, e.tokens[RoleCI], nil), 403)
	mustStatus(t, e.do("DELETE", "/v1/revocations/"+w.Revocation.ID, e.tokens[RoleAdmin], nil), 200)
	mustStatus(t, e.do("DELETE", "/v1/revocations/"+w.Revocation.ID, e.tokens[RoleAdmin], nil), 404)
	a.pull()
	if len(a.policy.Revocations) != 1 || a.policy.Revocations[0].ID != w2.Revocation.ID {
		t.Fatalf("after lifting, bundle revocations = %+v", a.policy.Revocations)
	}
	revoked := a.policy.Revision
	mustStatus(t, e.do("DELETE", "/v1/revocations/"+w2.Revocation.ID, e.tokens[RoleAdmin], nil), 200)
	a.pull()
	if len(a.policy.Revocations) != 0 || a.etag != before {
		t.Fatalf("with no revocation left the policy is what it was: %q vs %q, %+v", a.etag, before, a.policy.Revocations)
	}
	// Same content as before the revocations, but a later revision: a
	// client refuses a bundle whose revision went back as a rollback.
	if a.policy.Revision <= revoked {
		t.Fatalf("after the last lift the bundle's revision is %d, not after %d", a.policy.Revision, revoked)
	}

	// History and audit, like policy layers.
	res = e.do("GET", "/v1/revocations/history", e.tokens[RoleAdmin], nil)
	var hist RevocationHistoryPage
	res.json(t, &hist)
	var actions []string
	for _, h := range hist.Entries {
		actions = append(actions, h.Action+" "+h.Revocation.ID)
	}
	want := []string{"revoke " + w.Revocation.ID, "revoke " + w2.Revocation.ID, "lift " + w.Revocation.ID, "lift " + w2.Revocation.ID}
	if !slices.Equal(actions, want) {
		t.Fatalf("history = %v, want %v", actions, want)
	}
	res = e.do("GET", "/v1/audit?action="+ActionRevocationCreate, e.tokens[RoleAdmin], nil)
	var audit AuditPage
	res.json(t, &audit)
	if len(audit.Entries) != 2 || audit.Entries[0].Object != w.Revocation.ID {
		t.Fatalf("audit = %+v", audit.Entries)
	}
}

func TestRevocationRefusals(t *testing.T) {
	e := newEnv(t)
	adm := e.tokens[RoleAdmin]
	for _, tc := range []struct {
		body  map[string]string
		field string
	}{
		{map[string]string{"plugin": "a@corp", "version": "1", "digest": fakeDigest("x"), "reason": "r"}, "digest"},
		{map[string]string{"digest": "sha256:abc", "reason": "r"}, "digest"},
		{map[string]string{"reason": "r"}, "plugin"},
		{map[string]string{"plugin": "nomarketplace", "version": "1", "reason": "r"}, "plugin"},
		{map[string]string{"plugin": "a@corp", "reason": "r"}, "version"},
		{map[string]string{"plugin": "a@corp", "version": "1"}, "reason"},
	} {
		res := e.do("POST", "/v1/revocations", adm, tc.body)
		mustStatus(t, res, 400)
		if f := res.apiError(t).Field; f != tc.field {
			t.Fatalf("%v: field %q, want %q", tc.body, f, tc.field)
		}
	}
	body := map[string]string{"plugin": "a@corp", "version": "1", "reason": "r"}
	mustStatus(t, e.do("POST", "/v1/revocations", adm, body), 201)
	mustStatus(t, e.do("POST", "/v1/revocations", adm, body), 409)
	mustStatus(t, e.do("DELETE", "/v1/revocations/nope", adm, nil), 400)
	mustStatus(t, e.do("GET", "/v1/revocations/r-0000000000000000", adm, nil), 404)
}

// The revocation's status lists the machines that still report the
// revoked version active, and converges as they report it revoked.
func TestRevocationConvergence(t *testing.T) {
	e := newEnv(t)
	tok := e.fleetToken(3)
	for i := 1; i <= 3; i++ {
		v := "1.2.0"
		if i == 3 {
			v = "1.3.0"
		}
		mustStatus(t, e.report(tok, invReport(i, invPlugin("deploy@corp", v, fakeDigest(v)))), 200)
	}
	res := e.do("POST", "/v1/revocations", e.tokens[RoleAdmin], map[string]string{"plugin": "deploy@corp", "version": "1.2.0", "reason": "bad"})
	var w RevocationWriteResult
	res.json(t, &w)
	res2 := e.do("POST", "/v1/revocations", e.tokens[RoleAdmin], map[string]string{"digest": fakeDigest("1.3.0"), "reason": "bad build"})
	var wd RevocationWriteResult
	res2.json(t, &wd)
	status := func(id string) RevocationStatus {
		res := e.do("GET", "/v1/revocations/"+id, e.tokens[RoleCI], nil)
		mustStatus(t, res, 200)
		var st RevocationStatus
		res.json(t, &st)
		return st
	}
	if st := status(w.Revocation.ID); st.Active != 2 || len(st.Machines) != 2 {
		t.Fatalf("before refresh: %+v", st)
	}
	if st := status(wd.Revocation.ID); st.Active != 1 || st.Machines[0].Machine != machineN(3) {
		t.Fatalf("digest revocation: %+v", st)
	}
	p := invPlugin("deploy@corp", "1.2.0", fakeDigest("1.2.0"))
	p.State, p.Reason = inventory.StateRevoked, "bad"
	mustStatus(t, e.report(tok, invReport(1, p)), 200)
	if st := status(w.Revocation.ID); st.Active != 1 || st.Machines[0].Machine != machineN(2) {
		t.Fatalf("after machine 1 refreshed: %+v", st)
	}
}

func mustID(t *testing.T, s string) plugin.ID {
	t.Helper()
	id, err := plugin.ParseID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// "Who has X" answers in the API's names, as docs/openapi.yaml documents
// them (never the index's storage keys), with the kind of client each
// machine reported through; a machine whose client changes is shown under
// its new kind.
func TestInventoryWhoHasNames(t *testing.T) {
	e := newEnv(t)
	r := invReport(1, invPlugin("deploy@corp", "1.2.0", fakeDigest("deploy")))
	r.Client.Kind = inventory.KindClaudeCode
	mustStatus(t, e.report(e.tokens[RoleAgent], r), 200)

	whoHas := func() map[string]any {
		t.Helper()
		res := e.do("GET", "/v1/inventory/plugins/corp/deploy", e.tokens[RoleAdmin], nil)
		mustStatus(t, res, 200)
		var raw struct {
			Machines []map[string]any `json:"machines"`
		}
		res.json(t, &raw)
		if len(raw.Machines) != 1 {
			t.Fatalf("who has deploy@corp: %s", res.body)
		}
		return raw.Machines[0]
	}
	m := whoHas()
	if m["clientKind"] != inventory.KindClaudeCode {
		t.Fatalf("clientKind = %v, want %s: %v", m["clientKind"], inventory.KindClaudeCode, m)
	}
	installs, _ := m["installs"].([]any)
	if len(installs) != 1 {
		t.Fatalf("installs = %v", m["installs"])
	}
	in := installs[0].(map[string]any)
	var names []string
	for k := range in {
		names = append(names, k)
	}
	slices.Sort(names)
	want := []string{"digest", "enabled", "install", "scope", "state", "unknownDigest", "version"}
	if !slices.Equal(names, want) {
		t.Fatalf("install fields = %v, want %v", names, want)
	}
	if in["version"] != "1.2.0" || in["scope"] != "user" || in["enabled"] != true {
		t.Fatalf("install = %v", in)
	}

	r.Client.Kind = inventory.KindWharf
	mustStatus(t, e.report(e.tokens[RoleAgent], r), 200)
	if m := whoHas(); m["clientKind"] != inventory.KindWharf {
		t.Fatalf("after a report through wharf, clientKind = %v", m["clientKind"])
	}
}
