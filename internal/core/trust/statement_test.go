package trust

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

func TestStatementCanonical(t *testing.T) {
	st := NewStatement(plugin.ID{Name: "deploy", Source: "corp"}, "1.0.0", digestA)
	want := `{"type":"wharf-plugin/v1","plugin":"deploy","marketplace":"corp","version":"1.0.0","digest":"` + digestA + `"}`
	if got := string(st.Canonical()); got != want {
		t.Fatalf("canonical:\n%s\nwant\n%s", got, want)
	}
	// No HTML escaping: the bytes are what any JSON encoder writes plainly.
	st.Plugin = "a<b>&c"
	if got := string(st.Canonical()); !strings.Contains(got, `"plugin":"a<b>&c"`) {
		t.Errorf("escaped: %s", got)
	}
}

func TestStatementSignatureBindsEveryField(t *testing.T) {
	for _, alg := range Algs {
		t.Run(string(alg), func(t *testing.T) {
			k := newKey(t, alg)
			kr := keyring(t, k)
			st := NewStatement(plugin.ID{Name: "deploy", Source: "corp"}, "2.0.0", digestA)
			sig, err := SignStatement(k.priv, st)
			must(t, err)
			r := VerifyStatement([]Signature{sig}, st, kr)[0]
			if !r.Valid || !r.Trusted || r.Legacy {
				t.Fatalf("genuine statement signature: %+v", r)
			}
			// Relabelled or rolled back: the same signature presented for
			// another name, marketplace, version or content.
			for name, other := range map[string]Statement{
				"plugin":      NewStatement(plugin.ID{Name: "deploy-tools", Source: "corp"}, "2.0.0", digestA),
				"marketplace": NewStatement(plugin.ID{Name: "deploy", Source: "evil"}, "2.0.0", digestA),
				"version":     NewStatement(plugin.ID{Name: "deploy", Source: "corp"}, "1.0.0", digestA),
				"digest":      NewStatement(plugin.ID{Name: "deploy", Source: "corp"}, "2.0.0", digestB),
			} {
				r := VerifyStatement([]Signature{sig}, other, kr)[0]
				if r.Valid || r.Failure != SigOtherDigest || !strings.Contains(r.Reason, "another plugin name, marketplace or version") {
					t.Errorf("%s changed: %+v", name, r)
				}
			}
			// A statement signature is no bare-digest signature.
			if r := Verify([]Signature{sig}, digestA, kr)[0]; r.Valid {
				t.Errorf("a statement signature verified as a digest signature")
			}
			// Content changed after signing: the expected digest explains it.
			changed := st
			changed.Digest = digestB
			r = VerifyStatement([]Signature{sig}, changed, kr, digestA)[0]
			if r.Valid || r.SignedDigest != digestA || !strings.Contains(r.Reason, "the content changed after signing") {
				t.Errorf("changed content: %+v", r)
			}
		})
	}
}

func TestLegacyDigestSignatureIsValidButWeaker(t *testing.T) {
	k := newKey(t, AlgECDSAP256)
	kr := keyring(t, k)
	old, err := Sign(k.priv, digestA)
	must(t, err)
	st := NewStatement(plugin.ID{Name: "deploy", Source: "corp"}, "1.0.0", digestA)
	r := VerifyStatement([]Signature{old}, st, kr)[0]
	if !r.Valid || !r.Legacy {
		t.Fatalf("old digest-only signature: %+v; want valid and marked legacy", r)
	}
	rep := NewReport("deploy@corp", &Tree{Digest: digestA}, "", nil, []SigResult{r})
	if !rep.Signatures[0].Legacy || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "weaker") {
		t.Errorf("report: %+v", rep)
	}
}

func TestSignStatementRefusesIncomplete(t *testing.T) {
	k := newKey(t, AlgEd25519)
	for name, st := range map[string]Statement{
		"no plugin":      NewStatement(plugin.ID{Source: "corp"}, "1.0.0", digestA),
		"no marketplace": NewStatement(plugin.ID{Name: "deploy"}, "1.0.0", digestA),
		"bad digest":     NewStatement(plugin.ID{Name: "deploy", Source: "corp"}, "1.0.0", "sha256:x"),
	} {
		var pe *plugin.Error
		if _, err := SignStatement(k.priv, st); !errors.As(err, &pe) || pe.Type != plugin.TypeTrustRejected {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestDeclaredVersion(t *testing.T) {
	dir := t.TempDir()
	if v := DeclaredVersion(dir, "0.9.0"); v != "0.9.0" {
		t.Errorf("no plugin.json: %q", v)
	}
	must(t, os.MkdirAll(filepath.Join(dir, ".claude-plugin"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, ".claude-plugin/plugin.json"), []byte(`{"name":"deploy","version":"1.2.0"}`), 0o644))
	if v := DeclaredVersion(dir, "0.9.0"); v != "1.2.0" {
		t.Errorf("plugin.json version: %q", v)
	}
}
