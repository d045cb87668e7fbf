package trust

import (
	"fmt"
	"strings"

	"github.com/wharfhq/wharf/plugin"
)

// PluginSignatures gathers a plugin's signatures: its marketplace entry's
// (entry, which record no statement), then the detached file in dir. A
// detached file that cannot be read or parsed is an error naming it.
func PluginSignatures(dir string, entry []Signature) ([]FileSignature, error) {
	out := make([]FileSignature, 0, len(entry))
	for _, s := range entry {
		out = append(out, FileSignature{Signature: s})
	}
	detached, err := ReadSignatures(dir)
	if err != nil {
		return nil, err
	}
	return append(out, detached...), nil
}

// SignatureCheck is the verdict of CheckSignatures on a plugin's signatures.
type SignatureCheck struct {
	// Statement is what the signatures had to cover (Plugin empty when the
	// subject was not known: see CheckSignatures).
	Statement Statement
	// Results has one verdict per signature, in order.
	Results []SigResult
	// Keys are the trusted keys whose signature covers the statement.
	Keys []string
	// LegacyKeys are the trusted keys whose signature covers only the bare
	// digest (the old form): it binds the content, not the plugin's name,
	// marketplace or version.
	LegacyKeys []string
	// LegacyFingerprints are the sha256 fingerprints (KeyFingerprint) of the
	// LegacyKeys, in the same order.
	LegacyFingerprints []string
}

// CheckSignatures is the one rule by which wharf judges a plugin's
// signatures: install and update (whose verified keys policy's
// requireSignatures reads) and wharf verify all apply it.
//
// A signature by a trusted key is checked against st (the statement binding
// the plugin as published and its content digest), else against the bare
// digest (valid, Legacy). When st names no plugin (a directory verified
// without naming its marketplace), a signature is checked against the
// statement recorded beside it, with the tree's digest, else against the
// bare digest. A signature by a key not trusted here cannot be checked; it
// still fails when the statement recorded beside it names another digest
// (the content changed after signing).
//
// others are digests tried only to explain a failure.
func CheckSignatures(sigs []FileSignature, st Statement, trusted Keyring, others ...string) SignatureCheck {
	c := SignatureCheck{Statement: st, Results: make([]SigResult, 0, len(sigs))}
	for _, s := range sigs {
		var r SigResult
		switch {
		case st.Plugin != "":
			r = verifyOne(s.Signature, &st, st.Digest, trusted, others)
		case s.Statement != nil:
			rec := *s.Statement
			rec.Digest = st.Digest
			r = verifyOne(s.Signature, &rec, st.Digest, trusted, others)
			r.SignedAs = rec.String()
		default:
			r = verifyOne(s.Signature, nil, st.Digest, trusted, others)
			if r.Failure == SigOtherDigest && r.SignedDigest == "" {
				r.Failure = SigNoSubject
				r.Reason = fmt.Sprintf("signature by key %s is not over the bare digest and records no statement: it binds a plugin's name and marketplace, so it can be checked only against them: pass --marketplace <name>", s.KeyID)
			}
		}
		if r.Failure == SigUnknownKey && s.Statement != nil && s.Statement.Digest != st.Digest {
			r.Failure = SigOtherDigest
			r.SignedDigest = s.Statement.Digest
			r.Reason = fmt.Sprintf("signature by key %s (not a trusted key here) was made over %s, not this tree's digest %s: the content changed after signing",
				s.KeyID, s.Statement.Digest, st.Digest)
		}
		switch {
		case r.Valid && r.Legacy:
			if !contains(c.LegacyKeys, r.KeyID) {
				fp, _ := KeyFingerprint(trusted[r.KeyID]) // a trusted key: parsed, so it marshals
				c.LegacyKeys = append(c.LegacyKeys, r.KeyID)
				c.LegacyFingerprints = append(c.LegacyFingerprints, fp)
			}
		case r.Valid:
			c.Keys = appendNew(c.Keys, r.KeyID)
		}
		c.Results = append(c.Results, r)
	}
	return c
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func appendNew(l []string, s string) []string {
	if contains(l, s) {
		return l
	}
	return append(l, s)
}

// Verified lists every trusted key whose signature is valid, of either
// form: statement signatures first.
func (c SignatureCheck) Verified() []string {
	out := append([]string{}, c.Keys...)
	for _, k := range c.LegacyKeys {
		out = appendNew(out, k)
	}
	return out
}

// Checked reports whether any signature got a verdict on the content: a
// trusted key's, or one whose recorded statement names another digest. A
// signature by an unknown key without a differing record, or one that could
// not be checked for want of a subject, tells nothing.
func (c SignatureCheck) Checked() bool {
	for _, r := range c.Results {
		if r.Failure != SigUnknownKey && r.Failure != SigNoSubject {
			return true
		}
	}
	return false
}

// Warnings names each valid signature of the old form.
func (c SignatureCheck) Warnings() []string {
	out := make([]string, 0, len(c.LegacyKeys))
	for _, k := range c.LegacyKeys {
		out = append(out, LegacyWarning(k))
	}
	return out
}

// Problems lists the reasons of the signatures that do not cover the
// plugin: every failure but a key not trusted here and a signature that
// could not be checked for want of a subject.
func (c SignatureCheck) Problems() []string {
	var out []string
	for _, r := range c.Results {
		if r.Failure != SigOK && r.Failure != SigUnknownKey && r.Failure != SigNoSubject {
			out = append(out, r.Reason)
		}
	}
	return out
}

// Err is a *SignatureError when a signature present does not cover the
// plugin (Problems), else nil.
func (c SignatureCheck) Err() error {
	p := c.Problems()
	if len(p) == 0 {
		return nil
	}
	subject := c.Statement.String()
	if c.Statement.Plugin == "" {
		subject = c.Statement.Digest
	}
	return &plugin.Error{Layer: plugin.LayerTrust, Type: plugin.TypeTrustRejected, Object: subject,
		Err: &SignatureError{Subject: subject, Reasons: p},
		Hint: "a signature present does not cover this plugin as published: the content may have been copied from another plugin or marketplace, or changed after signing; " +
			"ask the marketplace owner to re-sign it (wharf sign), or remove the stale signature"}
}

// SignatureError says that signatures present do not cover a plugin.
type SignatureError struct {
	Subject string
	Reasons []string
}

func (e *SignatureError) Error() string {
	return strings.Join(e.Reasons, "; ")
}
