package trust

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/wharfhq/wharf/plugin"
)

// FuzzParsePEMKeys: hostile PEM bytes as a trusted public key
// (--trusted-key, $WHARF_HOME/keys) or a signing private key (wharf sign
// --key) are refused with a trust error, never a panic. An accepted public
// key has a stable key id; an accepted private key makes signatures its
// public key verifies.
func FuzzParsePEMKeys(f *testing.F) {
	for _, alg := range Algs {
		priv, pub, err := GenerateKey(alg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(pub)
		f.Add(priv)
		f.Add(append(append([]byte{}, pub...), priv...))
		f.Add(pub[:len(pub)/2])
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&p384.PublicKey)
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	r, _ := rsa.GenerateKey(rand.Reader, 1024)
	der, _ = x509.MarshalPKIXPublicKey(&r.PublicKey)
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	f.Add([]byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"))
	f.Add([]byte("not a key"))
	st := NewStatement(plugin.ID{Name: "deploy", Source: "corp"}, "1.0.0", digestA)
	f.Fuzz(func(t *testing.T, data []byte) {
		trustErr := func(what string, err error) {
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Layer != plugin.LayerTrust || pe.Hint == "" {
				t.Fatalf("%s: not a trust error with a hint: %v", what, err)
			}
		}
		if pub, err := ParsePublicKey(data); err != nil {
			trustErr("public key", err)
		} else {
			id, err := KeyID(pub)
			if err != nil || len(id) != KeyIDLen {
				t.Fatalf("accepted key id %q, %v", id, err)
			}
			kr := Keyring{}
			if err := kr.AddPEM(data); err != nil || kr[id] == nil {
				t.Fatalf("AddPEM of an accepted key: %v", err)
			}
		}
		sig, err := SignStatement(data, st)
		if err != nil {
			trustErr("private key", err)
			return
		}
		// A private key that signs: its own public key verifies it.
		priv, err := cryptoutils.UnmarshalPEMToPrivateKey(data, cryptoutils.SkipPassword)
		if err != nil {
			t.Fatalf("signed with a key that does not parse: %v", err)
		}
		pub := priv.(crypto.Signer).Public()
		id, err := KeyID(pub)
		if err != nil || id != sig.KeyID {
			t.Fatalf("signature key id %q, public key id %q (%v)", sig.KeyID, id, err)
		}
		if r := VerifyStatement([]Signature{sig}, st, Keyring{id: pub})[0]; !r.Valid || r.Legacy {
			t.Fatalf("own signature does not verify: %+v", r)
		}
	})
}
