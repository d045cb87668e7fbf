package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

const denyRiskyModule = `package wharf.admin.org

deny contains msg if {
	input.plugin == "risky@corp"
	msg := "risky@corp runs arbitrary commands"
}
`

// pullBundle fetches the bundle like an agent: with If-None-Match when it
// has one, and verifies and decodes a new one.
type agentClient struct {
	e      *env
	etag   string
	policy BundlePolicy
	key    BundleKey
	pulled int
}

func newAgent(e *env) *agentClient {
	a := &agentClient{e: e}
	res := e.do("GET", "/v1/policy/bundle/key", e.tokens[RoleAgent], nil)
	if res.status != 200 {
		e.t.Fatalf("bundle key: %d %s", res.status, res.body)
	}
	res.json(e.t, &a.key)
	return a
}

// pull returns the status of the request.
func (a *agentClient) pull() int {
	t := a.e.t
	t.Helper()
	var hdr []string
	if a.etag != "" {
		hdr = append(hdr, "If-None-Match: "+a.etag)
	}
	res := a.e.do("GET", "/v1/policy/bundle", a.e.tokens[RoleAgent], nil, hdr...)
	switch res.status {
	case http.StatusNotModified:
		if len(res.body) != 0 {
			t.Fatalf("304 with a body of %d bytes", len(res.body))
		}
		if res.header.Get("ETag") != a.etag {
			t.Fatalf("304 ETag %q, want %q", res.header.Get("ETag"), a.etag)
		}
	case http.StatusOK:
		p, err := ReadBundle(bytes.NewReader(res.body), a.key)
		if err != nil {
			t.Fatalf("read bundle: %v", err)
		}
		if got, want := res.header.Get("ETag"), bundleETag(p.Version); got != want {
			t.Fatalf("ETag %q does not name the bundle's version (%q)", got, want)
		}
		a.etag, a.policy = res.header.Get("ETag"), p
		a.pulled++
	default:
		t.Fatalf("bundle: %d %s", res.status, res.body)
	}
	return res.status
}

// decide evaluates the bundle's policy offline, with the same engine.
func (a *agentClient) decide(id string) Decision {
	t := a.e.t
	t.Helper()
	d, err := PolicyEngine(t.Context(), a.policy.Layers)
	if err != nil {
		t.Fatalf("compile bundle policy: %v", err)
	}
	dec, err := d.Decide(t.Context(), DecisionInput{Plugin: plugin.MustParseID(id)})
	if err != nil {
		t.Fatal(err)
	}
	return dec
}

func TestBundleETagFlow(t *testing.T) {
	e := newEnv(t)
	admin := e.tokens[RoleAdmin]
	a := newAgent(e)

	if a.pull() != 200 {
		t.Fatal("first pull must be 200")
	}
	if len(a.policy.Layers) != 0 || !a.decide("risky@corp").Allowed {
		t.Fatalf("empty policy must allow: %+v", a.policy)
	}
	if st := a.pull(); st != 304 {
		t.Fatalf("unchanged policy: want 304, got %d", st)
	}
	builds := e.srv.pol.BundleBuilds()

	res := e.putLayer("org", "*new", map[string]any{"rank": 10, "settings": map[string]any{}, "modules": map[string]string{"risky.rego": denyRiskyModule}})
	if res.status != 201 {
		t.Fatalf("create layer: %d %s", res.status, res.body)
	}
	old := a.etag
	if a.pull() != 200 || a.etag == old {
		t.Fatalf("after a put: want 200 and a new ETag, got ETag %s (old %s)", a.etag, old)
	}
	dec := a.decide("risky@corp")
	if dec.Allowed || len(dec.Reasons) == 0 || !strings.Contains(dec.Reasons[0].Message, "arbitrary commands") {
		t.Fatalf("agent's offline decision after the put: %+v", dec)
	}
	if !a.decide("deploy@corp").Allowed {
		t.Fatal("deploy@corp must stay allowed")
	}
	if a.policy.Layers[0].Name != "org" || a.policy.Layers[0].Modules["risky.rego"] != denyRiskyModule {
		t.Fatalf("bundle layers: %+v", a.policy.Layers)
	}

	// The 304 path builds nothing and writes nothing.
	before := auditCount(e)
	builds = e.srv.pol.BundleBuilds()
	for range 20 {
		if a.pull() != 304 {
			t.Fatal("want 304")
		}
	}
	if e.srv.pol.BundleBuilds() != builds {
		t.Fatalf("304 requests built %d bundles", e.srv.pol.BundleBuilds()-builds)
	}
	if auditCount(e) != before {
		t.Fatal("304 requests wrote to the audit log")
	}

	// A second layer forcing lint off, then a lower layer: the agent sees both.
	res = e.putLayer("team", "*new", map[string]any{"rank": 20, "settings": map[string]any{"enabledPlugins": map[string]bool{"lint@corp": false}}})
	if res.status != 201 {
		t.Fatalf("create team layer: %d %s", res.status, res.body)
	}
	if a.pull() != 200 || a.decide("lint@corp").Allowed {
		t.Fatal("after the team layer, lint@corp must be denied offline")
	}
	// The server agrees with the agent.
	var pol EffectivePolicy
	e.do("GET", "/v1/policy", admin, nil).json(t, &pol)
	if bundleETag(pol.Version) != a.etag || pol.Revision != 2 || len(pol.Layers) != 2 {
		t.Fatalf("GET /v1/policy = %+v, agent has %s", pol, a.etag)
	}

	// The ETag is derived from content: removing the team layer brings back
	// exactly the ETag of the policy with only the org layer.
	orgOnly := bundleETag(policyVersion(pol.Layers[:1]))
	res = e.do("DELETE", "/v1/policy/layers/team", admin, nil, `If-Match: "1"`)
	if res.status != 200 {
		t.Fatalf("delete: %d %s", res.status, res.body)
	}
	if a.pull() != 200 || a.etag != orgOnly {
		t.Fatalf("ETag after delete %s, want %s (same content, same ETag)", a.etag, orgOnly)
	}
	if !a.decide("lint@corp").Allowed {
		t.Fatal("lint@corp is allowed again")
	}
}

func TestBundleRefusedWhenTamperedOrOtherKey(t *testing.T) {
	e := newEnv(t)
	e.putLayer("org", "*new", map[string]any{"modules": map[string]string{"risky.rego": denyRiskyModule}})
	a := newAgent(e)
	res := e.do("GET", "/v1/policy/bundle", e.tokens[RoleAgent], nil)
	if _, err := ReadBundle(bytes.NewReader(res.body), a.key); err != nil {
		t.Fatalf("genuine bundle: %v", err)
	}
	other := newEnv(t)
	otherKey := newAgent(other).key
	otherKey.KeyID = a.key.KeyID
	if _, err := ReadBundle(bytes.NewReader(res.body), otherKey); err == nil {
		t.Fatal("a bundle verified with another server's key must be refused")
	}
	// Unsigned: a bundle from the other server signed by its own key, read
	// with ours.
	res2 := other.do("GET", "/v1/policy/bundle", other.tokens[RoleAgent], nil)
	if _, err := ReadBundle(bytes.NewReader(res2.body), a.key); err == nil {
		t.Fatal("a bundle signed by another key must be refused")
	}
}

func auditCount(e *env) int {
	e.t.Helper()
	var page AuditPage
	e.do("GET", "/v1/audit?limit=1000", e.tokens[RoleAdmin], nil).json(e.t, &page)
	return len(page.Entries)
}

func TestLayerVersionsAndConflicts(t *testing.T) {
	e := newEnv(t)
	admin := e.tokens[RoleAdmin]

	res := e.putLayer("org", "*new", map[string]any{"settings": map[string]any{"blockedMarketplaces": []any{}}})
	if res.status != 201 || res.header.Get("ETag") != `"1"` {
		t.Fatalf("create: %d %s etag %s", res.status, res.body, res.header.Get("ETag"))
	}
	// Creating again is a conflict that reports the current version.
	res = e.putLayer("org", "*new", map[string]any{})
	if ae := res.apiError(t); res.status != 412 || ae.Code != CodeVersionConflict || ae.Current != "1" {
		t.Fatalf("create existing: %d %s", res.status, res.body)
	}
	// If-Match "0" also means create.
	res = e.putLayer("dept", `"0"`, map[string]any{"rank": 20})
	if res.status != 201 {
		t.Fatalf("create with If-Match 0: %d %s", res.status, res.body)
	}
	res = e.putLayer("org", `"1"`, map[string]any{"settings": map[string]any{"blockedMarketplaces": []any{map[string]string{"source": "github", "repo": "evil/x"}}}})
	if res.status != 200 || res.header.Get("ETag") != `"2"` {
		t.Fatalf("update: %d %s", res.status, res.body)
	}
	// A writer that read version 1 loses, and learns the current version.
	before := snapshotState(e)
	res = e.putLayer("org", `"1"`, map[string]any{"settings": map[string]any{}})
	ae := res.apiError(t)
	if res.status != 412 || ae.Current != "2" || ae.Field != "If-Match" {
		t.Fatalf("stale write: %d %s", res.status, res.body)
	}
	if after := snapshotState(e); after != before {
		t.Fatalf("a refused write changed state:\n%s\n%s", before, after)
	}
	// No precondition at all: 428.
	res = e.do("PUT", "/v1/policy/layers/org", admin, `{}`)
	if res.status != http.StatusPreconditionRequired {
		t.Fatalf("no If-Match: %d %s", res.status, res.body)
	}
	// GET returns the ETag to send next.
	res = e.do("GET", "/v1/policy/layers/org", e.tokens[RoleDeveloper], nil)
	var l Layer
	res.json(t, &l)
	if res.header.Get("ETag") != `"2"` || l.Version != 2 || !strings.Contains(string(l.Settings), "evil/x") {
		t.Fatalf("get layer: %s %s", res.header.Get("ETag"), res.body)
	}
	var pol EffectivePolicy
	// History records every change with its document, oldest first.
	var h HistoryPage
	e.do("GET", "/v1/policy/history", admin, nil).json(t, &h)
	if len(h.Entries) != 3 || h.Entries[0].Action != "create" || h.Entries[2].Action != "update" || h.Entries[2].Document == nil || h.Entries[2].LayerVersion != 2 {
		t.Fatalf("history: %+v", h.Entries)
	}
	e.do("GET", "/v1/policy/history?layer=dept", admin, nil).json(t, &h)
	if len(h.Entries) != 1 || h.Entries[0].Layer != "dept" {
		t.Fatalf("history filtered by layer: %+v", h.Entries)
	}
	// A misspelled key is reported, not silently ignored.
	e.putLayer("dept", `"1"`, map[string]any{"settings": map[string]any{"blockedMarketplace": []any{}}})
	e.do("GET", "/v1/policy", admin, nil).json(t, &pol)
	if len(pol.Warnings) == 0 || !strings.Contains(strings.Join(pol.Warnings, " "), "blockedMarketplace") {
		t.Fatalf("warnings for a misspelled key: %+v", pol.Warnings)
	}
	// Layers apply by rank: org (100, default) after dept (20).
	e.do("GET", "/v1/policy", e.tokens[RoleAgent], nil).json(t, &pol)
	if len(pol.Layers) != 2 || pol.Layers[0].Name != "dept" || pol.Layers[1].Name != "org" {
		t.Fatalf("layer order: %+v", pol.Layers)
	}
}

// snapshotState renders the policy, its history and the audit log, to show
// that a failed request changed none of them.
// snapshotState is what requests may change: the policy, its history and
// the audit log, without the entries of refused requests (auth.refused),
// which record the refusal itself.
func snapshotState(e *env) string {
	admin := e.tokens[RoleAdmin]
	var page AuditPage
	e.do("GET", "/v1/audit?limit=1000", admin, nil).json(e.t, &page)
	var audit []string
	for _, a := range page.Entries {
		if a.Action != ActionAuthRefused {
			raw, _ := json.Marshal(a)
			audit = append(audit, string(raw))
		}
	}
	return string(e.do("GET", "/v1/policy", admin, nil).body) + "\n" +
		string(e.do("GET", "/v1/policy/history?limit=1000", admin, nil).body) + "\n" +
		strings.Join(audit, "\n")
}

func TestLayerThatDoesNotCompileIsRefusedWhole(t *testing.T) {
	e := newEnv(t)
	e.putLayer("org", "*new", map[string]any{"modules": map[string]string{"a.rego": "package wharf.admin.org\n\nx := 1\n"}})
	before := snapshotState(e)
	// Parses, but does not compile: an undefined function.
	res := e.putLayer("team", "*new", map[string]any{"modules": map[string]string{"b.rego": "package wharf.admin.team\n\ny := no_such_function(1)\n"}})
	if res.status != http.StatusUnprocessableEntity || res.apiError(t).Code != "policy-invalid" {
		t.Fatalf("conflicting module: %d %s", res.status, res.body)
	}
	// Does not parse.
	res = e.putLayer("team", "*new", map[string]any{"modules": map[string]string{"b.rego": "package wharf.admin.team\n\ndeny contains msg if {\n"}})
	if ae := res.apiError(t); res.status != 400 || ae.Field != "modules.b.rego" || !strings.Contains(ae.Message, "b.rego:") {
		t.Fatalf("unparsable module: %d %s", res.status, res.body)
	}
	if after := snapshotState(e); after != before {
		t.Fatalf("refused layers changed state")
	}
}

// Two servers over one store stand for two replicas: the same policy has
// the same ETag and bundle content on both, whichever took the write, and
// both sign with the one key kept in the store.
func TestReplicasAgreeOnETagAndKey(t *testing.T) {
	e := newEnv(t)
	b, err := New(Deps{Store: e.st, Policy: PolicyEngine, RateLimit: -1, StateCacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	hsB := httptestServer(t, b)
	replicaB := &env{t: t, st: e.st, srv: b, hs: hsB, tokens: e.tokens}

	a1, b1 := newAgent(e), newAgent(replicaB)
	if a1.key != b1.key {
		t.Fatal("replicas sign with different keys")
	}
	e.putLayer("org", "*new", map[string]any{"modules": map[string]string{"risky.rego": denyRiskyModule}})
	a1.pull()
	b1.pull()
	if a1.etag != b1.etag || a1.policy.Version != b1.policy.Version {
		t.Fatalf("replica ETags differ: %s vs %s", a1.etag, b1.etag)
	}
	if b1.decide("risky@corp").Allowed {
		t.Fatal("the replica that did not take the write serves the old policy")
	}
	// A client that pulled from one replica gets 304 from the other.
	a1.e = replicaB
	if st := a1.pull(); st != 304 {
		t.Fatalf("cross-replica If-None-Match: %d", st)
	}
}
