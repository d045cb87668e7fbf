package settings

import (
	"strings"
	"testing"
)

// legacySignatureKeys opts keys in to old-form signatures: a value that
// cannot be trusted opts no key in, and each bad entry is named.
func TestLegacySignatureKeysFailClosed(t *testing.T) {
	const id, fp = "0123456789abcdef", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		name, doc, issue string
		keys             []string
		invalid          bool
	}{
		{name: "key id and fingerprint", doc: `{"legacySignatureKeys": ["` + id + `", "` + fp + `", "` + id + `"]}`, keys: []string{id, fp}},
		{name: "not a list", doc: `{"legacySignatureKeys": "` + id + `"}`, invalid: true,
			issue: "m.json:1: legacySignatureKeys: must be an array of key ids or sha256 fingerprints, got a string; no key may use old-form signatures (fail closed)"},
		{name: "bad entries ignored", doc: `{"legacySignatureKeys": ["` + id + `", "ABCDEF0123456789", 7, "abc"]}`, keys: []string{id},
			issue: `legacySignatureKeys[1]: "ABCDEF0123456789" is neither a key id`},
		{name: "twice", doc: `{"legacySignatureKeys": ["` + id + `"], "legacySignatureKeys": ["` + id + `"]}`, invalid: true,
			issue: "key appears twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse("m.json", []byte(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			l := s.LegacySignatureKeys
			if !l.Set || l.Invalid != c.invalid || strings.Join(l.Keys, ",") != strings.Join(c.keys, ",") {
				t.Fatalf("got %+v, want keys %q invalid %v; issues:\n%s", l, c.keys, c.invalid, issueStrings(s))
			}
			if c.issue == "" && len(s.Issues) != 0 || !strings.Contains(issueStrings(s), c.issue) {
				t.Fatalf("issues:\n%s\nwant one containing %q", issueStrings(s), c.issue)
			}
			if c.issue != "" && s.Err() == nil {
				t.Fatal("an invalid value is not an error")
			}
		})
	}
	// The documents of one managed directory add up; an invalid one keeps
	// the merge invalid.
	a, _ := Parse("a.json", []byte(`{"legacySignatureKeys": ["`+id+`"]}`))
	b, _ := Parse("b.json", []byte(`{"legacySignatureKeys": 1}`))
	m := &Settings{}
	m.mergeFrom(a)
	m.mergeFrom(b)
	if !m.LegacySignatureKeys.Invalid || len(m.LegacySignatureKeys.Keys) != 1 {
		t.Fatalf("merged %+v", m.LegacySignatureKeys)
	}
}
