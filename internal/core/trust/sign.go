package trust

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/wharfhq/wharf/plugin"
)

// Signature is one entry of a marketplace entry's `signatures` list and of
// the detached signatures file: {"keyid","sig"}, sig being the standard
// base64 of a signature over the digest string (UTF-8).
type Signature = plugin.Signature

// Alg names a key algorithm wharf signs with.
type Alg string

// The supported key algorithms.
const (
	AlgECDSAP256 Alg = "ecdsa-p256" // ECDSA over P-256 with SHA-256, ASN.1 DER signatures
	AlgEd25519   Alg = "ed25519"    // pure Ed25519 over the digest string
)

// Algs lists the supported algorithms, the default first.
var Algs = []Alg{AlgECDSAP256, AlgEd25519}

// KeyIDLen is the length in hex characters of a key id.
const KeyIDLen = 16

// GenerateKey makes a key pair and returns it PEM encoded: the private key
// as unencrypted PKCS#8 ("PRIVATE KEY"), the public key as PKIX ("PUBLIC KEY").
func GenerateKey(alg Alg) (privPEM, pubPEM []byte, err error) {
	var priv crypto.Signer
	switch alg {
	case AlgECDSAP256, "":
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case AlgEd25519:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, nil, keyError("", fmt.Errorf("unknown key algorithm %q", alg))
	}
	if err != nil {
		return nil, nil, keyError("", err)
	}
	privPEM, err = cryptoutils.MarshalPrivateKeyToPEM(priv)
	if err != nil {
		return nil, nil, keyError("", err)
	}
	pubPEM, err = cryptoutils.MarshalPublicKeyToPEM(priv.Public())
	if err != nil {
		return nil, nil, keyError("", err)
	}
	return privPEM, pubPEM, nil
}

// KeyID is the first 16 hex characters of the sha256 of the key's DER
// SubjectPublicKeyInfo: `openssl pkey -pubin -outform DER | sha256sum`
// gives the same, so a key id can be checked without wharf.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := cryptoutils.MarshalPublicKeyToDER(pub)
	if err != nil {
		return "", keyError("", err)
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])[:KeyIDLen], nil
}

// KeyFingerprint is the full sha256, in hex, of the key's DER
// SubjectPublicKeyInfo: the key id is its first 16 characters.
func KeyFingerprint(pub crypto.PublicKey) (string, error) {
	der, err := cryptoutils.MarshalPublicKeyToDER(pub)
	if err != nil {
		return "", keyError("", err)
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:]), nil
}

// ParsePublicKey reads a PEM public key and accepts only the supported
// algorithms.
func ParsePublicKey(pubPEM []byte) (crypto.PublicKey, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pubPEM)
	if err != nil {
		return nil, keyError("", fmt.Errorf("reading public key: %w", err))
	}
	if err := supported(pub); err != nil {
		return nil, err
	}
	return pub, nil
}

func supported(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return keyError("", fmt.Errorf("ECDSA key on %s: only P-256 is supported", k.Curve.Params().Name))
		}
		return nil
	case ed25519.PublicKey:
		return nil
	}
	return keyError("", fmt.Errorf("%T keys are not supported: use ecdsa-p256 or ed25519", pub))
}

// Keyring maps key ids to the public keys trusted to sign.
type Keyring map[string]crypto.PublicKey

// NewKeyring parses PEM public keys and indexes them by KeyID.
func NewKeyring(pubPEMs ...[]byte) (Keyring, error) {
	kr := Keyring{}
	for _, p := range pubPEMs {
		if err := kr.AddPEM(p); err != nil {
			return nil, err
		}
	}
	return kr, nil
}

// AddPEM adds one PEM public key and returns nothing but an error.
func (kr Keyring) AddPEM(pubPEM []byte) error {
	pub, err := ParsePublicKey(pubPEM)
	if err != nil {
		return err
	}
	id, err := KeyID(pub)
	if err != nil {
		return err
	}
	kr[id] = pub
	return nil
}

// IDs lists the key ids, sorted.
func (kr Keyring) IDs() []string {
	ids := make([]string, 0, len(kr))
	for id := range kr {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Sign signs the bare digest string (UTF-8) with a PEM private key: the
// legacy form, which binds the content but not the plugin's name,
// marketplace or version. wharf sign writes SignStatement signatures;
// Sign remains for tools and tests that need the old form.
func Sign(privPEM []byte, digest string) (Signature, error) {
	if !ValidDigest(digest) {
		return Signature{}, keyError("", fmt.Errorf("refusing to sign %q: not a w1: digest", digest))
	}
	return signBytes(privPEM, []byte(digest))
}

// SignStatement signs st's canonical JSON with a PEM private key.
func SignStatement(privPEM []byte, st Statement) (Signature, error) {
	if err := st.check(); err != nil {
		return Signature{}, keyError("", err)
	}
	return signBytes(privPEM, st.Canonical())
}

func signBytes(privPEM, msg []byte) (Signature, error) {
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey(privPEM, cryptoutils.SkipPassword)
	if err != nil {
		return Signature{}, keyError("", fmt.Errorf("reading private key: %w", err))
	}
	signer, ok := priv.(crypto.Signer)
	if !ok {
		return Signature{}, keyError("", fmt.Errorf("loading private key: %T keys are not supported: use ecdsa-p256 or ed25519", priv))
	}
	pub := signer.Public()
	if err := supported(pub); err != nil {
		return Signature{}, err
	}
	id, err := KeyID(pub)
	if err != nil {
		return Signature{}, err
	}
	var sig []byte
	switch k := priv.(type) {
	case ed25519.PrivateKey:
		sig = ed25519.Sign(k, msg)
	case *ecdsa.PrivateKey:
		sum := sha256.Sum256(msg)
		sig, err = ecdsa.SignASN1(rand.Reader, k, sum[:])
	default:
		err = fmt.Errorf("%T keys are not supported", priv)
	}
	if err != nil {
		return Signature{}, keyError("", fmt.Errorf("signing: %w", err))
	}
	return Signature{KeyID: id, Sig: base64.StdEncoding.EncodeToString(sig)}, nil
}

// SigFailure classifies why a signature was not accepted.
type SigFailure string

// The ways a signature fails; each has its own message in SigResult.Reason.
const (
	SigOK          SigFailure = ""
	SigUnknownKey  SigFailure = "unknown-key"  // keyid names no trusted key
	SigMalformed   SigFailure = "malformed"    // not base64, truncated or garbled
	SigWrongKey    SigFailure = "wrong-key"    // made by another trusted key than the one it names
	SigOtherDigest SigFailure = "other-digest" // the named key signed other content (or, for a statement, another plugin, marketplace or version)
	// SigNoSubject: not over the bare digest, and nothing says which
	// plugin it binds (no subject given, no statement recorded): it cannot
	// be checked, which is not a verdict on the content.
	SigNoSubject SigFailure = "no-subject"
)

// SigResult is the verdict on one signature.
type SigResult struct {
	KeyID   string
	Valid   bool // verifies over the statement (or digest) with the key its keyid names
	Trusted bool // the keyid names a trusted key
	// Legacy is set on a valid signature over the bare digest (the form
	// before statements): it binds the content but not the plugin's name,
	// marketplace or version, so it is weaker than a statement signature.
	Legacy  bool
	Failure SigFailure
	Reason  string // empty when Valid
	// SignedDigest is the digest the signature covers when it was found to
	// cover one of the other digests Verify was asked to try, or the digest
	// its recorded statement names when that is not the tree's.
	SignedDigest string
	// SignedAs names the plugin the recorded statement binds (deploy@corp
	// 1.0.0), when the signature was checked against it (CheckSignatures
	// with no subject).
	SignedAs string
}

// Verify checks each signature against the bare digest with the trusted
// keys (the legacy form only: see VerifyStatement). Other digests (for
// example the expected digest when the tree changed) are tried only to
// explain a failure, never to accept a signature.
func Verify(sigs []Signature, digest string, trusted Keyring, otherDigests ...string) []SigResult {
	out := make([]SigResult, 0, len(sigs))
	for _, s := range sigs {
		out = append(out, verifyOne(s, nil, digest, trusted, otherDigests))
	}
	return out
}

// VerifyStatement checks each signature against st with the trusted keys.
// A signature over st's canonical JSON is valid; one over the bare digest
// (the legacy form) is valid too, marked Legacy. Anything else fails: in
// particular a signature made for the same content under another plugin
// name, marketplace or version. Other digests are tried only to explain a
// failure.
func VerifyStatement(sigs []Signature, st Statement, trusted Keyring, otherDigests ...string) []SigResult {
	out := make([]SigResult, 0, len(sigs))
	for _, s := range sigs {
		out = append(out, verifyOne(s, &st, st.Digest, trusted, otherDigests))
	}
	return out
}

func verifyOne(s Signature, st *Statement, digest string, trusted Keyring, others []string) SigResult {
	r := SigResult{KeyID: s.KeyID}
	pub, ok := trusted[s.KeyID]
	if !ok {
		r.Failure = SigUnknownKey
		r.Reason = fmt.Sprintf("unknown keyid %q: no trusted key has this id (trusted: %s)", s.KeyID, orNone(trusted.IDs()))
		return r
	}
	r.Trusted = true
	raw, err := base64.StdEncoding.Strict().DecodeString(s.Sig)
	if err != nil {
		r.Failure = SigMalformed
		r.Reason = fmt.Sprintf("signature by key %s is garbled: not standard base64 (%v)", s.KeyID, err)
		return r
	}
	if err := wellFormed(pub, raw); err != nil {
		r.Failure = SigMalformed
		r.Reason = fmt.Sprintf("signature by key %s is truncated or garbled: %v", s.KeyID, err)
		return r
	}
	// The messages a valid signature may cover: the statement, then the
	// bare digest (legacy).
	msgs := [][]byte{[]byte(digest)}
	if st != nil {
		msgs = [][]byte{st.Canonical(), []byte(digest)}
	}
	for i, m := range msgs {
		if verifies(pub, raw, m) {
			r.Valid = true
			r.Legacy = i == len(msgs)-1
			return r
		}
	}
	for _, id := range trusted.IDs() {
		if id == s.KeyID {
			continue
		}
		for _, m := range msgs {
			if verifies(trusted[id], raw, m) {
				r.Failure = SigWrongKey
				r.Reason = fmt.Sprintf("wrong key: the signature was made with key %s but is labelled with key %s", id, s.KeyID)
				return r
			}
		}
	}
	r.Failure = SigOtherDigest
	for _, d := range others {
		if d == digest {
			continue
		}
		covers := verifies(pub, raw, []byte(d))
		if st != nil && !covers {
			o := *st
			o.Digest = d
			covers = verifies(pub, raw, o.Canonical())
		}
		if covers {
			r.SignedDigest = d
			r.Reason = fmt.Sprintf("signature by key %s covers %s, not this tree's digest %s: the content changed after signing", s.KeyID, d, digest)
			return r
		}
	}
	if st != nil {
		r.Reason = fmt.Sprintf("signature by key %s does not cover %s with digest %s: it was made for another plugin name, marketplace or version, or over other content (a signature cannot be moved to another plugin or marketplace)", s.KeyID, st, digest)
		return r
	}
	r.Reason = fmt.Sprintf("signature by key %s does not cover digest %s: it was made over other content (the plugin changed after signing, or the signature belongs to another plugin)", s.KeyID, digest)
	return r
}

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// wellFormed checks the signature's encoding for the key's algorithm, so a
// truncated or garbled signature is told apart from one over other content.
func wellFormed(pub crypto.PublicKey, sig []byte) error {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		if len(sig) != ed25519.SignatureSize {
			return fmt.Errorf("an ed25519 signature is %d bytes, this one is %d", ed25519.SignatureSize, len(sig))
		}
		return nil
	case *ecdsa.PublicKey:
		var rs struct{ R, S *big.Int }
		rest, err := asn1.Unmarshal(sig, &rs)
		if err != nil {
			if len(sig) == 64 { // IEEE P1363 r||s, also accepted by sigstore
				return nil
			}
			return fmt.Errorf("an ecdsa-p256 signature is an ASN.1 DER sequence of two integers (%d bytes given, not parseable: %v)", len(sig), err)
		}
		if len(rest) > 0 {
			return fmt.Errorf("%d trailing bytes after the ASN.1 signature", len(rest))
		}
		n := k.Curve.Params().N
		if rs.R.Sign() <= 0 || rs.S.Sign() <= 0 || rs.R.Cmp(n) >= 0 || rs.S.Cmp(n) >= 0 {
			return errors.New("signature integers out of range for P-256")
		}
		return nil
	}
	return fmt.Errorf("unsupported key type %T", pub)
}

// verifies reports whether sig is k's signature over msg: pure Ed25519, or
// ECDSA over the SHA-256 of msg in ASN.1 DER or IEEE P1363 (r||s) form, as
// sigstore's verifiers accept them.
func verifies(pub crypto.PublicKey, sig []byte, msg []byte) bool {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return len(k) == ed25519.PublicKeySize && ed25519.Verify(k, msg, sig)
	case *ecdsa.PublicKey:
		if k.X == nil || k.Y == nil || !k.Curve.IsOnCurve(k.X, k.Y) {
			return false
		}
		sum := sha256.Sum256(msg)
		var rs struct{ R, S *big.Int }
		if _, err := asn1.Unmarshal(sig, &rs); err == nil {
			return ecdsa.VerifyASN1(k, sum[:], sig)
		}
		if len(sig) == 0 || len(sig) > 132 || len(sig)%2 != 0 {
			return false
		}
		r := new(big.Int).SetBytes(sig[:len(sig)/2])
		s := new(big.Int).SetBytes(sig[len(sig)/2:])
		return ecdsa.Verify(k, sum[:], r, s)
	}
	return false
}

func keyError(obj string, err error) error {
	return &plugin.Error{Layer: plugin.LayerTrust, Type: plugin.TypeTrustRejected, Object: obj, Err: err,
		Hint: "keys are PEM files made by: wharf keygen"}
}
