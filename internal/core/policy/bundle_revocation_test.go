package policy

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/wharfhq/wharf/plugin"
)

// signedWithRevocations is a signed bundle with no layer and the given
// wharf.revocations.
func signedWithRevocations(t *testing.T, s *testSigner, revs any) []byte {
	t.Helper()
	return signedWharfData(t, s, map[string]any{
		"policy":      map[string]any{"version": "sha256:r", "revision": 2, "layers": []any{}},
		"revocations": revs,
	})
}

// signedWharfData is a signed bundle whose data.json is {"wharf": wharf},
// its revision wharf.policy.version.
func signedWharfData(t *testing.T, s *testSigner, wharf map[string]any) []byte {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"wharf": wharf})
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	if err := util.UnmarshalJSON(raw, &data); err != nil {
		t.Fatal(err)
	}
	rev, _ := wharf["policy"].(map[string]any)["version"].(string)
	b := bundle.Bundle{Manifest: bundle.Manifest{Revision: rev}, Data: data}
	b.Manifest.Init()
	b.Manifest.SetRegoVersion(ast.RegoV1)
	if err := b.GenerateSignature(bundle.NewSigningConfig(s.privPEM, BundleAlgorithm, ""), s.keyID, false); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := bundle.NewWriter(&buf).DisableFormat(true).Write(b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadBundleRevocations(t *testing.T) {
	s := newTestSigner(t)
	d := "w1:" + "IEsdeHMoYGvQ/TFQYZm3lTWiq8tniruye/rOcraa+iM="
	b := signedWithRevocations(t, s, []map[string]string{
		{"id": "r-1", "plugin": "deploy@corp", "version": "1.2.0", "reason": "leaks tokens"},
		{"id": "r-2", "digest": d, "reason": "malware"},
	})
	_, info, err := ReadBundle(bytes.NewReader(b), s.pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Revocations) != 2 {
		t.Fatalf("revocations = %+v", info.Revocations)
	}
	if r, ok := info.Revocations.Match(plugin.MustParseID("other@corp"), "9", d); !ok || r.ID != "r-2" {
		t.Fatal("the digest revocation must match that content under any name")
	}
	if r, ok := info.Revocations.Match(plugin.MustParseID("deploy@corp"), "1.2.0", ""); !ok || r.Reason != "leaks tokens" {
		t.Fatal("the version revocation must match deploy@corp 1.2.0")
	}
	// A signed bundle whose revocation names nothing is refused, not
	// half-applied.
	for _, bad := range []map[string]string{
		{"id": "r-3", "plugin": "deploy@corp", "reason": "no version"},
		{"plugin": "deploy@corp", "version": "1", "reason": "no id"},
		{"id": "r-4", "plugin": "not an id", "version": "1", "reason": "x"},
		{"id": "r-5", "digest": "sha256:abc", "reason": "x"},
	} {
		_, _, err := ReadBundle(bytes.NewReader(signedWithRevocations(t, s, []any{bad})), s.pubPEM)
		if l, typ := errType(err); l != plugin.LayerTrust || typ != TypeBundleInvalid {
			t.Fatalf("%v: err = %v, want %s", bad, err, TypeBundleInvalid)
		}
	}
}
