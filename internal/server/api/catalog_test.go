package api

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/server/audit"
)

func TestCatalogSearchAndDetail(t *testing.T) {
	e, f := newCatalogEnv(t)
	dev := e.tokens[RoleDeveloper]

	var ms []Marketplace
	e.do("GET", "/v1/marketplaces", e.tokens[RoleAgent], nil).json(t, &ms)
	if len(ms) != 1 || ms[0].Name != "corp" || ms[0].Plugins != 4 || !strings.Contains(string(ms[0].Source), "directory") {
		t.Fatalf("marketplaces: %+v", ms)
	}

	var hits []PluginSummary
	e.do("GET", "/v1/plugins?q=deploy", dev, nil).json(t, &hits)
	if len(hits) != 1 || hits[0].ID != "deploy@corp" || hits[0].Version != "" && hits[0].Category != "ops" {
		t.Fatalf("search deploy: %+v", hits)
	}
	e.do("GET", "/v1/plugins?category=quality", dev, nil).json(t, &hits)
	if ids(hits) != "broken@corp lint@corp" {
		t.Fatalf("category filter: %s", ids(hits))
	}
	e.do("GET", "/v1/plugins?marketplace=other", dev, nil).json(t, &hits)
	if len(hits) != 0 {
		t.Fatalf("other marketplace: %+v", hits)
	}
	e.do("GET", "/v1/plugins?limit=2", dev, nil).json(t, &hits)
	if len(hits) != 2 {
		t.Fatalf("limit 2: %d hits", len(hits))
	}

	var v PluginView
	res := e.do("GET", "/v1/plugins/corp/deploy", dev, nil)
	res.json(t, &v)
	if v.ID != "deploy@corp" || v.Version != "1.2.0" || v.Digest != f.deployW1 || len(v.Signatures) != 1 {
		t.Fatalf("detail: %s", res.body)
	}
	if len(v.Dependencies) != 1 || v.Dependencies[0].Name != "lint" {
		t.Fatalf("dependencies: %+v", v.Dependencies)
	}
	kinds := map[string]string{}
	for _, c := range v.Components {
		kinds[c.Kind] = c.Name
	}
	if kinds["command"] != "ship" || kinds["skill"] != "rollback" {
		t.Fatalf("components: %+v", v.Components)
	}
	// "deploy:ship ship it" and "deploy:rollback roll back": 44 characters
	// of always-on context, 11 tokens.
	if v.AlwaysOnTokens == nil || *v.AlwaysOnTokens != 11 {
		t.Fatalf("alwaysOnTokens: %s", res.body)
	}
	if v.Decision == nil || !v.Decision.Allowed || v.Decision.PolicyVersion == "" {
		t.Fatalf("decision: %+v", v.Decision)
	}

	// A denial carries the layer and rule and is audited.
	e.putLayer("org", "*new", map[string]any{"settings": map[string]any{"enabledPlugins": map[string]bool{"risky@corp": false}}})
	e.do("GET", "/v1/plugins/corp/risky", dev, nil).json(t, &v)
	if v.Decision.Allowed || v.Decision.Forced != "off" || v.Decision.Reasons[0].Layer != "org" || v.Decision.Reasons[0].Rule != "enabledPlugins" {
		t.Fatalf("risky decision: %+v", v.Decision)
	}
	var page AuditPage
	e.do("GET", "/v1/audit?action="+ActionDecisionDeny, e.tokens[RoleAdmin], nil).json(t, &page)
	if len(page.Entries) != 1 || page.Entries[0].Object != "risky@corp" || page.Entries[0].Role != RoleDeveloper {
		t.Fatalf("denial audit: %+v", page.Entries)
	}

	// Update and remove.
	res = e.do("POST", "/v1/marketplaces/corp/update", e.tokens[RoleAdmin], nil)
	if res.status != 200 {
		t.Fatalf("update: %d %s", res.status, res.body)
	}
	if res = e.do("DELETE", "/v1/marketplaces/corp", e.tokens[RoleAdmin], nil); res.status != 204 {
		t.Fatalf("remove: %d %s", res.status, res.body)
	}
	e.do("GET", "/v1/plugins", dev, nil).json(t, &hits)
	if len(hits) != 0 {
		t.Fatalf("after remove: %+v", hits)
	}
	e.do("GET", "/v1/audit?action="+ActionMarketplaceRemove, e.tokens[RoleAdmin], nil).json(t, &page)
	if len(page.Entries) != 1 {
		t.Fatalf("remove not audited: %+v", page.Entries)
	}
}

func ids(hs []PluginSummary) string {
	var s []string
	for _, h := range hs {
		s = append(s, h.ID)
	}
	return strings.Join(s, " ")
}

func TestResolve(t *testing.T) {
	e, _ := newCatalogEnv(t)
	dev := e.tokens[RoleDeveloper]
	e.putLayer("org", "*new", map[string]any{"settings": map[string]any{"enabledPlugins": map[string]bool{"lint@corp": false}}})

	var r ResolveResult
	res := e.do("POST", "/v1/resolve", dev, map[string]any{"plugins": []string{"deploy@corp", "risky@corp"}})
	res.json(t, &r)
	if res.status != 200 || len(r.Plugins) != 3 {
		t.Fatalf("resolve: %d %s", res.status, res.body)
	}
	got := r.Plugins[0].ID + " " + r.Plugins[1].ID + " " + r.Plugins[2].ID
	if got != "lint@corp deploy@corp risky@corp" {
		t.Fatalf("closure order %s, want dependencies first", got)
	}
	if r.Plugins[0].Role != "dependency" || r.Plugins[0].RequiredBy != "deploy@corp" || r.Plugins[1].Role != "root" {
		t.Fatalf("roles: %+v", r.Plugins)
	}
	if r.Allowed || r.Plugins[0].Decision.Allowed || !r.Plugins[1].Decision.Allowed || r.Plugins[0].Decision.Reasons[0].Layer != "org" {
		t.Fatalf("decisions: %s", res.body)
	}
	if r.PolicyVersion == "" || r.Plugins[0].Decision.PolicyVersion != r.PolicyVersion {
		t.Fatalf("policy version: %s", res.body)
	}

	// A missing dependency names who required it.
	res = e.do("POST", "/v1/resolve", dev, map[string]any{"plugins": []string{"broken@corp"}})
	ae := res.apiError(t)
	if res.status != 422 || ae.Code != "dependency-unsatisfied" || !strings.Contains(ae.Message, "broken@corp requires ghost@corp") {
		t.Fatalf("missing dependency: %d %s", res.status, res.body)
	}
	// An unknown root is a 404.
	res = e.do("POST", "/v1/resolve", dev, map[string]any{"plugins": []string{"nope@corp"}})
	if res.status != 404 {
		t.Fatalf("unknown root: %d %s", res.status, res.body)
	}
}

func TestVerify(t *testing.T) {
	e, f := newCatalogEnv(t)
	ci := e.tokens[RoleCI]

	var v VerifyResult
	res := e.do("POST", "/v1/verify", ci, map[string]any{"plugin": "deploy@corp", "digest": f.deployW1})
	res.json(t, &v)
	if !v.OK || v.Expected != f.deployW1 || len(v.Signatures) != 1 || !v.Signatures[0].Valid || !v.Signatures[0].Trusted ||
		v.Signatures[0].Legacy || len(v.Warnings) != 0 {
		t.Fatalf("genuine: %s", res.body)
	}

	// An old signature over the bare digest by the trusted key: accepted,
	// marked weaker.
	old, err := trust.Sign(f.privPEM, f.deployW1)
	if err != nil {
		t.Fatal(err)
	}
	res = e.do("POST", "/v1/verify", ci, map[string]any{"plugin": "deploy@corp", "digest": f.deployW1,
		"signatures": []any{map[string]string{"keyid": old.KeyID, "sig": old.Sig}}})
	v = VerifyResult{}
	res.json(t, &v)
	if !v.OK || !v.Signatures[0].Valid || !v.Signatures[0].Legacy || len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], "weaker") {
		t.Fatalf("legacy signature: %s", res.body)
	}

	// The deploy statement's signature presented for another plugin with
	// the same content: refused.
	var pub PluginDetail
	e.do("GET", "/v1/plugins/corp/deploy", ci, nil).json(t, &pub)
	res = e.do("POST", "/v1/verify", ci, map[string]any{"plugin": "lint@corp", "digest": f.deployW1, "signatures": pub.Signatures})
	v = VerifyResult{}
	res.json(t, &v)
	if v.OK || v.Signatures[0].Valid || !strings.Contains(v.Signatures[0].Error, "another plugin name, marketplace or version") {
		t.Fatalf("relabelled signature: %s", res.body)
	}

	// A changed tree: another digest.
	other := "w1:" + strings.Repeat("A", 43) + "="
	e.do("POST", "/v1/verify", ci, map[string]any{"plugin": "deploy@corp", "digest": other}).json(t, &v)
	if v.OK || len(v.Reasons) == 0 || v.Signatures[0].Valid {
		t.Fatalf("changed tree must fail on digest and signature: %+v", v)
	}

	// Signatures alone, by an untrusted key.
	priv, _, err := trust.GenerateKey(trust.AlgEd25519)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := trust.Sign(priv, f.deployW1)
	if err != nil {
		t.Fatal(err)
	}
	e.do("POST", "/v1/verify", ci, map[string]any{"digest": f.deployW1, "signatures": []any{map[string]string{"keyid": sig.KeyID, "sig": sig.Sig}}}).json(t, &v)
	if v.OK || v.Signatures[0].Trusted {
		t.Fatalf("untrusted key: %+v", v)
	}
	// A plugin with neither digest nor signatures cannot pass.
	e.do("POST", "/v1/verify", ci, map[string]any{"plugin": "lint@corp", "digest": f.deployW1}).json(t, &v)
	if v.OK {
		t.Fatalf("nothing published: %+v", v)
	}
}

func TestMarketplacePolicyGate(t *testing.T) {
	e, f := newCatalogEnv(t)
	admin := e.tokens[RoleAdmin]
	// An empty allowlist: no marketplace may be added or refreshed.
	res := e.putLayer("org", "*new", map[string]any{"settings": map[string]any{"strictKnownMarketplaces": []any{}}})
	if res.status != 201 {
		t.Fatalf("layer: %d %s", res.status, res.body)
	}
	before := len(mustMarketplaces(t, e))
	res = e.do("POST", "/v1/marketplaces", admin, map[string]any{"name": "other", "source": map[string]string{"source": "directory", "path": f.root}})
	ae := res.apiError(t)
	if res.status != 403 || ae.Code != "policy-denied" || !strings.Contains(ae.Message, "policy layer org") {
		t.Fatalf("add under an empty allowlist: %d %s", res.status, res.body)
	}
	if len(mustMarketplaces(t, e)) != before {
		t.Fatal("a denied add registered the marketplace")
	}
	if res = e.do("POST", "/v1/marketplaces/corp/update", admin, nil); res.status != 403 {
		t.Fatalf("update under an empty allowlist: %d %s", res.status, res.body)
	}
	var page AuditPage
	e.do("GET", "/v1/audit?action="+ActionDecisionDeny, admin, nil).json(t, &page)
	if len(page.Entries) != 2 || page.Entries[0].Object != "marketplace other" {
		t.Fatalf("marketplace denials audited: %+v", page.Entries)
	}
	// Allowing the directory by path lets it in.
	res = e.putLayer("org", `"1"`, map[string]any{"settings": map[string]any{"strictKnownMarketplaces": []any{map[string]string{"source": "directory", "path": f.root}}}})
	if res.status != 200 {
		t.Fatalf("layer update: %d %s", res.status, res.body)
	}
	if res = e.do("POST", "/v1/marketplaces/corp/update", admin, nil); res.status != 200 {
		t.Fatalf("update once allowed: %d %s", res.status, res.body)
	}
}

func mustMarketplaces(t testing.TB, e *env) []Marketplace {
	var ms []Marketplace
	e.do("GET", "/v1/marketplaces", e.tokens[RoleAdmin], nil).json(t, &ms)
	return ms
}

// auditFailStore fails every audit write while fail is set, as a full disk
// would at that moment.
type auditFailStore struct {
	store.Store
	fail atomic.Bool
}

func (s *auditFailStore) Update(fn func(store.Tx) error) error {
	return s.Store.Update(func(tx store.Tx) error { return fn(auditFailTx{tx, s}) })
}

type auditFailTx struct {
	store.Tx
	s *auditFailStore
}

func (t auditFailTx) Put(bucket, key string, value []byte) error {
	if bucket == audit.Bucket && t.s.fail.Load() {
		return errors.New("no space left on device")
	}
	return t.Tx.Put(bucket, key, value)
}

// A marketplace change and its audit entry commit together: when the entry
// cannot be written, the change is not made either.
func TestMarketplaceChangeAndAuditCommitTogether(t *testing.T) {
	f := newFixture(t)
	var fs *auditFailStore
	wrap := func(d *Deps) { fs = &auditFailStore{Store: d.Store}; d.Store = fs }
	e := newEnv(t, wrap, withCatalog(f, t.TempDir()))
	admin := e.tokens[RoleAdmin]
	add := func(name string) resp {
		return e.do("POST", "/v1/marketplaces", admin, map[string]any{
			"name": name, "source": map[string]string{"source": "directory", "path": f.root}})
	}
	names := func() string {
		var ms []Marketplace
		e.do("GET", "/v1/marketplaces", admin, nil).json(t, &ms)
		var out []string
		for _, m := range ms {
			out = append(out, m.Name)
		}
		return strings.Join(out, " ")
	}
	audited := func(action string) int {
		var page AuditPage
		e.do("GET", "/v1/audit?action="+action, admin, nil).json(t, &page)
		return len(page.Entries)
	}
	if res := add("corp"); res.status != 201 {
		t.Fatalf("add: %d %s", res.status, res.body)
	}

	fs.fail.Store(true)
	if res := add("other"); res.status != 500 {
		t.Fatalf("add with the audit failing: %d %s", res.status, res.body)
	}
	if res := e.do("DELETE", "/v1/marketplaces/corp", admin, nil); res.status != 500 {
		t.Fatalf("remove with the audit failing: %d %s", res.status, res.body)
	}
	if res := e.do("POST", "/v1/marketplaces/corp/update", admin, nil); res.status != 500 {
		t.Fatalf("update with the audit failing: %d %s", res.status, res.body)
	}
	fs.fail.Store(false)

	if got := names(); got != "corp" {
		t.Fatalf("marketplaces after the failed changes: %q, want only corp", got)
	}
	if n, m, u := audited(ActionMarketplaceAdd), audited(ActionMarketplaceRemove), audited(ActionMarketplaceUpdate); n != 1 || m != 0 || u != 0 {
		t.Fatalf("audited adds %d, removes %d, updates %d; want 1, 0, 0", n, m, u)
	}
	if res := e.do("DELETE", "/v1/marketplaces/corp", admin, nil); res.status != 204 {
		t.Fatalf("remove: %d %s", res.status, res.body)
	}
	if got, n := names(), audited(ActionMarketplaceRemove); got != "" || n != 1 {
		t.Fatalf("after the remove: marketplaces %q, %d remove entries", got, n)
	}
}

func TestVerifyCapsSignatureCount(t *testing.T) {
	e, f := newCatalogEnv(t)
	ci := e.tokens[RoleCI]
	priv, _, err := trust.GenerateKey(trust.AlgEd25519)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := trust.Sign(priv, f.deployW1)
	if err != nil {
		t.Fatal(err)
	}
	sigs := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]string{"keyid": sig.KeyID, "sig": sig.Sig}
		}
		return out
	}
	// Far below the body limit, far above what one plugin needs.
	res := e.do("POST", "/v1/verify", ci, map[string]any{"digest": f.deployW1, "signatures": sigs(MaxVerifySignatures + 1)})
	ae := res.apiError(t)
	if res.status != 413 || ae.Code != CodeTooLarge || ae.Field != "signatures" ||
		!strings.Contains(ae.Message, "the limit is 32") {
		t.Fatalf("%d signatures: %d %s", MaxVerifySignatures+1, res.status, res.body)
	}
	if res := e.do("POST", "/v1/verify", ci, map[string]any{"digest": f.deployW1, "signatures": sigs(MaxVerifySignatures)}); res.status != 200 {
		t.Fatalf("%d signatures: %d %s", MaxVerifySignatures, res.status, res.body)
	}
}
