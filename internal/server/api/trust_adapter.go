package api

import (
	"context"

	"github.com/wharfhq/wharf/internal/core/trust"
)

// TrustVerifier checks signatures with package trust against a keyring of
// trusted public keys. It is immutable and safe for concurrent use.
type TrustVerifier struct {
	Keyring trust.Keyring
}

// VerifySignatures implements Verifier.
func (v TrustVerifier) VerifySignatures(_ context.Context, subj SignedSubject, sigs []Signature) ([]SignatureVerdict, error) {
	ts := make([]trust.Signature, len(sigs))
	for i, s := range sigs {
		ts[i] = trust.Signature{KeyID: s.KeyID, Sig: s.Sig}
	}
	var rs []trust.SigResult
	if subj.Plugin.IsZero() {
		rs = trust.Verify(ts, subj.Digest, v.Keyring)
	} else {
		rs = trust.VerifyStatement(ts, trust.NewStatement(subj.Plugin, subj.Version, subj.Digest), v.Keyring)
	}
	out := make([]SignatureVerdict, len(rs))
	for i, r := range rs {
		out[i] = SignatureVerdict{KeyID: r.KeyID, Valid: r.Valid, Trusted: r.Trusted, Legacy: r.Valid && r.Legacy, Error: r.Reason}
	}
	return out, nil
}
