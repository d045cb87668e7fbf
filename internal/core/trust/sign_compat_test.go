package trust

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"testing"
)

// Signatures are the standard forms, so tools other than wharf (openssl,
// cosign) make and check them: ECDSA over the SHA-256 of the message in
// ASN.1 DER or IEEE P1363 (r||s), pure Ed25519. Each direction is checked
// with the standard library alone.
func TestSignaturesAreStandard(t *testing.T) {
	for _, alg := range Algs {
		t.Run(string(alg), func(t *testing.T) {
			k := newKey(t, alg)
			blk, _ := pem.Decode(k.priv)
			priv, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
			must(t, err)
			pub, err := ParsePublicKey(k.pub)
			must(t, err)
			msg := []byte(digestA)
			sum := sha256.Sum256(msg)

			// wharf's signature checks with the standard library.
			sig, err := Sign(k.priv, digestA)
			must(t, err)
			raw, err := base64.StdEncoding.DecodeString(sig.Sig)
			must(t, err)
			switch p := pub.(type) {
			case *ecdsa.PublicKey:
				if !ecdsa.VerifyASN1(p, sum[:], raw) {
					t.Fatal("wharf's ECDSA signature is not ASN.1 ECDSA over SHA-256")
				}
			case ed25519.PublicKey:
				if !ed25519.Verify(p, msg, raw) {
					t.Fatal("wharf's Ed25519 signature is not pure Ed25519 over the digest")
				}
			}

			// Signatures made elsewhere verify in wharf.
			var foreign [][]byte
			switch p := priv.(type) {
			case *ecdsa.PrivateKey:
				der, err := ecdsa.SignASN1(rand.Reader, p, sum[:])
				must(t, err)
				r, s, err := ecdsa.Sign(rand.Reader, p, sum[:])
				must(t, err)
				p1363 := make([]byte, 64)
				r.FillBytes(p1363[:32])
				s.FillBytes(p1363[32:])
				foreign = [][]byte{der, p1363}
			case ed25519.PrivateKey:
				foreign = [][]byte{ed25519.Sign(p, msg)}
			}
			for i, f := range foreign {
				res := Verify([]Signature{{KeyID: k.id, Sig: base64.StdEncoding.EncodeToString(f)}}, digestA, keyring(t, k))
				if !res[0].Valid {
					t.Errorf("foreign signature %d not accepted: %+v", i, res[0])
				}
				res = Verify([]Signature{{KeyID: k.id, Sig: base64.StdEncoding.EncodeToString(f)}}, digestB, keyring(t, k))
				if res[0].Valid {
					t.Errorf("foreign signature %d accepted over another digest", i)
				}
			}
		})
	}
}
