package trust

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

const (
	digestA = "w1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
	digestB = "w1:d7vg7dRhZu2UClXtQYvt2gCyh9IHrhIbOWwS0KpvQqg="
)

type keypair struct {
	priv, pub []byte
	id        string
}

func newKey(t *testing.T, alg Alg) keypair {
	t.Helper()
	priv, pub, err := GenerateKey(alg)
	must(t, err)
	pk, err := ParsePublicKey(pub)
	must(t, err)
	id, err := KeyID(pk)
	must(t, err)
	return keypair{priv, pub, id}
}

func keyring(t *testing.T, keys ...keypair) Keyring {
	t.Helper()
	var pems [][]byte
	for _, k := range keys {
		pems = append(pems, k.pub)
	}
	kr, err := NewKeyring(pems...)
	must(t, err)
	return kr
}

func TestSignVerifyRoundTrip(t *testing.T) {
	for _, alg := range Algs {
		t.Run(string(alg), func(t *testing.T) {
			k := newKey(t, alg)
			if !strings.Contains(string(k.priv), "BEGIN PRIVATE KEY") || !strings.Contains(string(k.pub), "BEGIN PUBLIC KEY") {
				t.Fatalf("unexpected PEM:\n%s\n%s", k.priv, k.pub)
			}
			sig, err := Sign(k.priv, digestA)
			must(t, err)
			if sig.KeyID != k.id {
				t.Errorf("signature keyid %s, key id %s", sig.KeyID, k.id)
			}
			res := Verify([]Signature{sig}, digestA, keyring(t, k))
			if len(res) != 1 || !res[0].Valid || !res[0].Trusted || res[0].Failure != SigOK || res[0].Reason != "" {
				t.Fatalf("round trip: %+v", res)
			}
		})
	}
}

// The key id is the first 16 hex of sha256 over the DER SubjectPublicKeyInfo,
// checkable with openssl.
func TestKeyIDDefinition(t *testing.T) {
	for _, alg := range Algs {
		k := newKey(t, alg)
		blk, _ := pem.Decode(k.pub)
		if _, err := x509.ParsePKIXPublicKey(blk.Bytes); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(blk.Bytes)
		if want := hex.EncodeToString(sum[:])[:16]; k.id != want {
			t.Errorf("%s: keyid %s, want %s", alg, k.id, want)
		}
	}
}

func TestVerifyFailures(t *testing.T) {
	for _, alg := range Algs {
		t.Run(string(alg), func(t *testing.T) {
			a, b := newKey(t, alg), newKey(t, alg)
			sigA, err := Sign(a.priv, digestA)
			must(t, err)
			sigB, err := Sign(b.priv, digestA)
			must(t, err)
			raw, _ := base64.StdEncoding.DecodeString(sigA.Sig)
			cases := []struct {
				name    string
				sig     Signature
				digest  string
				trusted Keyring
				others  []string
				failure SigFailure
				trustd  bool
				reason  string
			}{
				{"unknown keyid", sigA, digestA, keyring(t, b), nil, SigUnknownKey, false,
					`unknown keyid "` + a.id + `": no trusted key has this id (trusted: ` + b.id + `)`},
				{"wrong key", Signature{KeyID: a.id, Sig: sigB.Sig}, digestA, keyring(t, a, b), nil, SigWrongKey, true,
					"wrong key: the signature was made with key " + b.id + " but is labelled with key " + a.id},
				{"signature over another digest", sigA, digestB, keyring(t, a), nil, SigOtherDigest, true,
					"does not cover digest " + digestB + ": it was made over other content"},
				{"signature over the expected digest of a changed tree", sigA, digestB, keyring(t, a), []string{digestA}, SigOtherDigest, true,
					"covers " + digestA + ", not this tree's digest " + digestB + ": the content changed after signing"},
				{"truncated signature", Signature{KeyID: a.id, Sig: base64.StdEncoding.EncodeToString(raw[:len(raw)-5])}, digestA, keyring(t, a), nil, SigMalformed, true,
					"is truncated or garbled"},
				{"garbled base64", Signature{KeyID: a.id, Sig: sigA.Sig[:len(sigA.Sig)-3] + "*"}, digestA, keyring(t, a), nil, SigMalformed, true,
					"is garbled: not standard base64"},
			}
			seen := map[string]string{}
			for _, c := range cases {
				res := Verify([]Signature{c.sig}, c.digest, c.trusted, c.others...)
				r := res[0]
				if r.Valid {
					t.Errorf("%s: accepted", c.name)
				}
				if r.Failure != c.failure || r.Trusted != c.trustd {
					t.Errorf("%s: failure %q trusted %v, want %q %v (%s)", c.name, r.Failure, r.Trusted, c.failure, c.trustd, r.Reason)
				}
				if !strings.Contains(r.Reason, c.reason) {
					t.Errorf("%s: reason %q lacks %q", c.name, r.Reason, c.reason)
				}
				if len(c.others) > 0 && r.SignedDigest != c.others[0] {
					t.Errorf("%s: signed digest %q, want %q", c.name, r.SignedDigest, c.others[0])
				}
				if prev, dup := seen[r.Reason]; dup {
					t.Errorf("%s and %s give the same message %q", c.name, prev, r.Reason)
				}
				seen[r.Reason] = c.name
			}
		})
	}
}

func TestVerifyMixedKeyTypes(t *testing.T) {
	e, d := newKey(t, AlgECDSAP256), newKey(t, AlgEd25519)
	se, err := Sign(e.priv, digestA)
	must(t, err)
	sd, err := Sign(d.priv, digestA)
	must(t, err)
	// an Ed25519 signature labelled with the ECDSA key: found to be d's
	res := Verify([]Signature{se, sd, {KeyID: e.id, Sig: sd.Sig}}, digestA, keyring(t, e, d))
	if !res[0].Valid || !res[1].Valid || res[2].Valid {
		t.Fatalf("%+v", res)
	}
	if res[2].Failure != SigWrongKey || !strings.Contains(res[2].Reason, "made with key "+d.id) {
		t.Errorf("ed25519 signature labelled with an ECDSA key: %+v", res[2])
	}
}

func TestSignRefuses(t *testing.T) {
	k := newKey(t, AlgEd25519)
	_, err := Sign(k.priv, "sha256:abc")
	trustErr(t, err, `refusing to sign "sha256:abc": not a w1: digest`)
	_, err = Sign([]byte("not a key"), digestA)
	trustErr(t, err, "reading private key")
	_, err = Sign(k.pub, digestA)
	trustErr(t, err, "reading private key")
	_, _, err = GenerateKey("rsa")
	trustErr(t, err, `unknown key algorithm "rsa"`)
	_, err = ParsePublicKey(k.priv)
	trustErr(t, err, "reading public key")
}

func TestSignaturesFile(t *testing.T) {
	root := makePlugin(t, t.TempDir(), 3)
	sigs, err := ReadSignatures(root)
	if err != nil || sigs != nil {
		t.Fatalf("no file: %v %v", sigs, err)
	}
	a, b := newKey(t, AlgECDSAP256), newKey(t, AlgEd25519)
	sa, _ := Sign(a.priv, digestA)
	sb, _ := Sign(b.priv, digestA)
	must(t, AddSignature(root, sa))
	must(t, AddSignature(root, sb))
	sa2, _ := Sign(a.priv, digestB)
	must(t, AddSignature(root, sa2)) // replaces a's first signature
	sigs, err = ReadSignatures(root)
	must(t, err)
	if len(sigs) != 2 || sigs[0].Signature != sb || sigs[1].Signature != sa2 || sigs[0].Statement != nil {
		t.Fatalf("signatures %+v", sigs)
	}
	ents, _ := os.ReadDir(filepath.Join(root, ".claude-plugin"))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
	// the file is the entry's `signatures` shape: a plain JSON array
	data, _ := os.ReadFile(filepath.Join(root, SignaturesFile))
	var generic []map[string]string
	must(t, json.Unmarshal(data, &generic))
	if len(generic) != 2 || len(generic[0]) != 2 || generic[0]["keyid"] != sb.KeyID || generic[0]["sig"] != sb.Sig {
		t.Errorf("file shape: %s", data)
	}
}

func TestSignaturesFileRefuses(t *testing.T) {
	cases := []struct {
		name, data, want string
	}{
		{"not json", "[{\"keyid\": \"a\",\n \"sig\": }]", "line 2"},
		{"object instead of list", `{"keyid":"a","sig":"b"}`, "cannot unmarshal object"},
		{"unknown field", `[{"keyid":"a","sig":"b","alg":"x"}]`, `unknown field "alg"`},
		{"missing sig", `[{"keyid":"a"}]`, "signature 0: keyid and sig are both required"},
		{"trailing data", `[] []`, "data after the JSON array"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			writeFile(t, root, SignaturesFile, c.data, 0o644)
			_, err := ReadSignatures(root)
			trustErr(t, err, SignaturesFile, c.want)
		})
	}
	t.Run("symlink", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, root, "real.json", "[]", 0o644)
		must(t, os.MkdirAll(filepath.Join(root, ".claude-plugin"), 0o755))
		must(t, os.Symlink("../real.json", filepath.Join(root, SignaturesFile)))
		_, err := ReadSignatures(root)
		trustErr(t, err, "not a regular file")
	})
	t.Run("too large", func(t *testing.T) {
		_, err := ParseSignatures(make([]byte, MaxSignaturesFile+1), "big.json")
		trustErr(t, err, "big.json", "more than the")
	})
}

func TestVerifyReportJSON(t *testing.T) {
	tree := &Tree{Digest: digestB}
	r := NewReport("./deploy", tree, digestA, nil, []SigResult{{KeyID: "0123456789abcdef", Valid: false, Trusted: true, Reason: "x"}})
	b, err := json.Marshal(r)
	must(t, err)
	want := `{"target":"./deploy","digest":"` + digestB + `","expected":"` + digestA + `","ok":false,"checked":true,"changed":[],"signatures":[{"keyid":"0123456789abcdef","valid":false,"trusted":true}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	r = NewReport("p", tree, "", []string{"a"}, nil)
	r.OK = true
	b, _ = json.Marshal(r)
	if want := `{"target":"p","digest":"` + digestB + `","ok":true,"checked":false,"changed":["a"],"signatures":[]}`; string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestKeyErrorsAreTrustLayer(t *testing.T) {
	_, err := ParsePublicKey([]byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"))
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Layer != plugin.LayerTrust || !strings.Contains(pe.Hint, "wharf keygen") {
		t.Fatalf("%v", err)
	}
}
