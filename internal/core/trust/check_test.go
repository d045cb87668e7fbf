package trust

import (
	"errors"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// CheckSignatures is the one rule install and verify apply: each case is a
// plugin's signatures as found, and what the rule makes of them.
func TestCheckSignatures(t *testing.T) {
	k, other := newKey(t, AlgEd25519), newKey(t, AlgECDSAP256)
	trusted := keyring(t, k)
	id := plugin.ID{Name: "deploy", Source: "corp"}
	stA := NewStatement(id, "1.0.0", digestA)
	stB := NewStatement(id, "1.0.0", digestB)
	sign := func(kp keypair, st Statement) Signature {
		s, err := SignStatement(kp.priv, st)
		must(t, err)
		return s
	}
	legacy, err := Sign(k.priv, digestA)
	must(t, err)
	for _, c := range []struct {
		name    string
		sigs    []FileSignature
		st      Statement
		keys    []string
		legacy  []string
		failure SigFailure
		reason  string
		checked bool
	}{
		{name: "statement, detached with its record", sigs: []FileSignature{{sign(k, stA), &stA}}, st: stA, keys: []string{k.id}, checked: true},
		{name: "statement, entry without record", sigs: []FileSignature{{Signature: sign(k, stA)}}, st: stA, keys: []string{k.id}, checked: true},
		{name: "old form", sigs: []FileSignature{{Signature: legacy}}, st: stA, legacy: []string{k.id}, checked: true},
		{name: "trusted key, changed content", sigs: []FileSignature{{sign(k, stA), &stA}}, st: stB, failure: SigOtherDigest, checked: true,
			reason: "covers " + digestA + ", not this tree's digest " + digestB},
		{name: "relabelled", sigs: []FileSignature{{sign(k, stA), &stA}}, st: NewStatement(plugin.ID{Name: "ops", Source: "corp"}, "1.0.0", digestA),
			failure: SigOtherDigest, checked: true, reason: "does not cover ops@corp 1.0.0"},
		{name: "untrusted key, record matches", sigs: []FileSignature{{sign(other, stA), &stA}}, st: stA, failure: SigUnknownKey},
		{name: "untrusted key, record names another digest", sigs: []FileSignature{{sign(other, stA), &stA}}, st: stB, failure: SigOtherDigest, checked: true,
			reason: "was made over " + digestA + ", not this tree's digest " + digestB + ": the content changed after signing"},
		{name: "untrusted key, no record", sigs: []FileSignature{{Signature: sign(other, stA)}}, st: stB, failure: SigUnknownKey},
		{name: "no subject, checked against the record", sigs: []FileSignature{{sign(k, stA), &stA}}, st: Statement{Digest: digestA}, keys: []string{k.id}, checked: true},
		{name: "no subject, record, changed content", sigs: []FileSignature{{sign(k, stA), &stA}}, st: Statement{Digest: digestB}, failure: SigOtherDigest, checked: true},
		{name: "no subject, no record", sigs: []FileSignature{{Signature: sign(k, stA)}}, st: Statement{Digest: digestA}, failure: SigNoSubject, reason: "pass --marketplace"},
		{name: "no subject, old form", sigs: []FileSignature{{Signature: legacy}}, st: Statement{Digest: digestA}, legacy: []string{k.id}, checked: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := CheckSignatures(c.sigs, c.st, trusted, digestA)
			r := got.Results[0]
			if strings.Join(got.Keys, ",") != strings.Join(c.keys, ",") || strings.Join(got.LegacyKeys, ",") != strings.Join(c.legacy, ",") ||
				r.Failure != c.failure || !strings.Contains(r.Reason, c.reason) || got.Checked() != c.checked {
				t.Fatalf("got keys %q legacy %q checked %v, result %+v", got.Keys, got.LegacyKeys, got.Checked(), r)
			}
			bad := c.failure != SigOK && c.failure != SigUnknownKey && c.failure != SigNoSubject
			err := got.Err()
			var se *SignatureError
			if bad != errors.As(err, &se) {
				t.Fatalf("error %v, want one: %v", err, bad)
			}
			if bad {
				var pe *plugin.Error
				if !errors.As(err, &pe) || pe.Layer != plugin.LayerTrust || pe.Type != plugin.TypeTrustRejected || !strings.Contains(err.Error(), c.reason) {
					t.Fatalf("error %#v", err)
				}
			}
			if len(c.legacy) > 0 {
				fp, err := KeyFingerprint(trusted[k.id])
				must(t, err)
				if len(got.LegacyFingerprints) != 1 || got.LegacyFingerprints[0] != fp || fp[:KeyIDLen] != k.id {
					t.Fatalf("fingerprints %q, want %s", got.LegacyFingerprints, fp)
				}
				if w := got.Warnings(); len(w) != 1 || !strings.Contains(w[0], "old form") {
					t.Fatalf("warnings %q", w)
				}
			}
		})
	}
}

// The statement recorded in the detached file is read back as written, and
// an incomplete one is refused with the file's name.
func TestSignaturesFileStatement(t *testing.T) {
	root := t.TempDir()
	k := newKey(t, AlgEd25519)
	st := NewStatement(plugin.ID{Name: "deploy", Source: "corp"}, "1.0.0", digestA)
	sig, err := SignStatement(k.priv, st)
	must(t, err)
	must(t, AddSigned(root, sig, st))
	got, err := ReadSignatures(root)
	must(t, err)
	if len(got) != 1 || got[0].Signature != sig || got[0].Statement == nil || *got[0].Statement != st {
		t.Fatalf("read back %+v", got)
	}
	_, err = ParseSignatures([]byte(`[{"keyid":"a","sig":"b","statement":{"type":"wharf-plugin/v1","plugin":"deploy","marketplace":"","version":"","digest":"`+digestA+`"}}]`), "sigs.json")
	if err == nil || !strings.Contains(err.Error(), "sigs.json") || !strings.Contains(err.Error(), "signature 0: statement: the statement names no marketplace") {
		t.Fatalf("incomplete statement: %v", err)
	}
}
