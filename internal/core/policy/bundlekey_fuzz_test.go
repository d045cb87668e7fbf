package policy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// FuzzParseBundleKey: a hostile bundle key (pinned with --policy-key or
// fetched on first use) is refused with a trust error, never a panic; an
// accepted key is a P-256 key whose key id is stable across re-encoding.
func FuzzParseBundleKey(f *testing.F) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	good := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	f.Add(good)
	f.Add(append([]byte("junk before\n"), good...))
	k384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der384, _ := x509.MarshalPKIXPublicKey(&k384.PublicKey)
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der384}))
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der[:len(der)/2]}))
	f.Add([]byte("-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n"))
	f.Add([]byte("not pem"))
	f.Fuzz(func(t *testing.T, data []byte) {
		key, err := ParseBundleKey(data)
		if err != nil {
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Layer != plugin.LayerTrust || pe.Hint == "" {
				t.Fatalf("not a trust error with a hint: %v", err)
			}
			return
		}
		if key.Curve != elliptic.P256() {
			t.Fatalf("accepted a key on %s", key.Curve.Params().Name)
		}
		id, err := BundleKeyID(key)
		if err != nil {
			t.Fatalf("accepted key has no id: %v", err)
		}
		der, err := x509.MarshalPKIXPublicKey(key)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseBundleKey(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
		if err != nil {
			t.Fatalf("re-encoded key refused: %v", err)
		}
		if id2, _ := BundleKeyID(again); id2 != id {
			t.Fatalf("key id changed on re-encoding: %s → %s", id, id2)
		}
	})
}
