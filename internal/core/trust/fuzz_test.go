package trust

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// buildHostile turns fuzz input into a tree under root. Records are separated
// by NUL; the first byte picks the operation, the rest is a path (any bytes,
// "/" nests) and, after a 0x01 byte, a symlink target or file content.
// Path components "", "." and ".." are dropped so that building the tree
// never writes outside root; symlink targets are written as given.
func buildHostile(root string, data []byte) {
	for _, rec := range bytes.Split(data, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		op, rest := rec[0]%6, rec[1:]
		name, arg, _ := bytes.Cut(rest, []byte{1})
		var comps []string
		for _, c := range strings.Split(string(name), "/") {
			if c != "" && c != "." && c != ".." {
				comps = append(comps, c)
			}
		}
		if op == 5 { // deep nesting: the name repeated
			n := 1 + int(len(arg))%60
			if len(comps) == 0 {
				comps = []string{"d"}
			}
			base := comps
			for range n {
				comps = append(comps, base...)
			}
			if len(comps) > 200 {
				comps = comps[:200]
			}
		}
		if len(comps) == 0 {
			continue
		}
		p := filepath.Join(append([]string{root}, comps...)...)
		os.MkdirAll(filepath.Dir(p), 0o755)
		switch op {
		case 0:
			os.WriteFile(p, arg, 0o644)
		case 1:
			os.WriteFile(p, arg, 0o755)
		case 2, 3:
			os.Symlink(string(arg), p)
		case 4, 5:
			os.MkdirAll(p, 0o755)
		}
	}
}

func FuzzDigest(f *testing.F) {
	rec := func(op byte, name, arg string) []byte {
		return append(append([]byte{op}, name...), append([]byte{1}, arg...)...)
	}
	join := func(rs ...[]byte) []byte { return bytes.Join(rs, []byte{0}) }
	f.Add(join(rec(0, "a.md", "hello"), rec(1, "bin/run", "#!/bin/sh"), rec(2, "l", "a.md")))
	f.Add(join(rec(2, "up", "../../outside/secret")))
	f.Add(join(rec(2, "abs", "/etc/passwd")))
	f.Add(join(rec(2, "a", "b"), rec(2, "b", "a"))) // loop
	f.Add(join(rec(4, "d", ""), rec(2, "d/x", ".."), rec(2, "d/y", "x/../..")))
	f.Add(join(rec(5, "deep", strings.Repeat("n", 59)), rec(0, "deep/f", "x")))
	f.Add(join(rec(0, strings.Repeat("L", 255), "long name"), rec(0, "caf\xe9", "latin-1")))
	f.Add(join(rec(0, "new\nline", ""), rec(0, "cr\r", ""), rec(0, ".git/HEAD", "x")))
	f.Add(join(rec(0, ".claude-plugin/wharf-signatures.json", "[]"), rec(2, "s", "../outside/secret")))
	f.Add(join(rec(2, "chain1", "chain2/../.."), rec(2, "chain2", "chain1")))

	f.Fuzz(func(t *testing.T, data []byte) {
		base := t.TempDir()
		root := filepath.Join(base, "root")
		must(t, os.MkdirAll(root, 0o755))
		// a secret next to the root: its content must never be hashed
		secret := make([]byte, 32)
		rand.Read(secret)
		must(t, os.MkdirAll(filepath.Join(base, "outside"), 0o755))
		must(t, os.WriteFile(filepath.Join(base, "outside", "secret"), secret, 0o644))
		secretSum := sha256.Sum256(secret)
		buildHostile(root, data)

		tree, err := Digest(root)
		tree2, err2 := Digest(root)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("not deterministic: %v / %v", err, err2)
		}
		if err != nil {
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Layer != plugin.LayerTrust || pe.Object == "" {
				t.Fatalf("error %v is not a trust *plugin.Error naming a path", err)
			}
			if _, ferr := Fingerprint(root); ferr == nil {
				t.Fatalf("Fingerprint accepts what Digest refuses (%v)", err)
			}
			return
		}
		if tree.Digest != tree2.Digest || !ValidDigest(tree.Digest) {
			t.Fatalf("digest %q then %q", tree.Digest, tree2.Digest)
		}
		for i, e := range tree.Entries {
			if e.Kind != KindSymlink && e.Hash == secretSum {
				t.Fatalf("%s hashed the secret outside the root", e.Path)
			}
			if i > 0 && tree.Entries[i-1].Path >= e.Path {
				t.Fatalf("entries not sorted: %q before %q", tree.Entries[i-1].Path, e.Path)
			}
		}
		if err := CheckFingerprint(root, tree.Fingerprint()); err != nil {
			t.Fatalf("fresh fingerprint fails: %v", err)
		}
	})
}

func FuzzParseSignatures(f *testing.F) {
	f.Add([]byte(`[{"keyid":"0123456789abcdef","sig":"MEUCIQ=="}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"keyid":"a","sig":"b","x":1}]`))
	f.Add([]byte(`{"keyid":"a"}`))
	f.Add([]byte("[{\"keyid\":\"\xff\",\"sig\":\"////\"}] trailing"))
	ecPriv, ecPub, err := GenerateKey(AlgECDSAP256)
	if err != nil {
		f.Fatal(err)
	}
	_, edPub, err := GenerateKey(AlgEd25519)
	if err != nil {
		f.Fatal(err)
	}
	kr, err := NewKeyring(ecPub, edPub)
	if err != nil {
		f.Fatal(err)
	}
	good, err := Sign(ecPriv, digestA)
	if err != nil {
		f.Fatal(err)
	}
	seed, _ := json.Marshal([]Signature{good})
	f.Add(seed)
	st := Statement{Type: StatementType, Plugin: "deploy", Marketplace: "corp", Version: "1.0.0", Digest: digestA}
	seed, _ = json.Marshal([]FileSignature{{Signature: good, Statement: &st}})
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		sigs, err := ParseSignatures(data, "sigs.json")
		if err != nil {
			if !strings.Contains(err.Error(), "sigs.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		again, _ := json.Marshal(sigs)
		back, err := ParseSignatures(again, "again.json")
		if err != nil || len(back) != len(sigs) {
			t.Fatalf("round trip: %v", err)
		}
		// hostile signatures against real keys: never a panic, never valid
		// unless it is the real signature
		ids := kr.IDs()
		for i, s := range sigs {
			s.KeyID = ids[i%len(ids)]
			r := Verify([]Signature{s.Signature}, digestA, kr, digestB)[0]
			if r.Valid && s.Sig != good.Sig {
				t.Fatalf("accepted a signature never made: %+v", s)
			}
		}
	})
}
