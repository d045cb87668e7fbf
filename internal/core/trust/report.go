package trust

// VerifyReport is the output of `wharf verify --json` (FORMATS.md):
// {"target","digest","expected"?,"ok","changed":[...],"signatures":[{"keyid","valid","trusted"}]}.
type VerifyReport struct {
	Target   string `json:"target"`
	Digest   string `json:"digest"`
	Expected string `json:"expected,omitempty"`
	OK       bool   `json:"ok"`
	// Checked is false when there was nothing to compare the digest with:
	// no expected digest and no signature. OK then only means the tree
	// could be digested.
	Checked    bool        `json:"checked"`
	Changed    []string    `json:"changed"`
	Signatures []ReportSig `json:"signatures"`
	// Warnings name what passed but is weaker than it should be: valid
	// signatures of the legacy form (over the bare digest).
	Warnings []string `json:"warnings,omitempty"`
}

// ReportSig is one signature verdict in a VerifyReport.
type ReportSig struct {
	KeyID   string `json:"keyid"`
	Valid   bool   `json:"valid"`
	Trusted bool   `json:"trusted"`
	// Legacy: a valid signature over the bare digest, which does not bind
	// the plugin's name, marketplace or version (weaker).
	Legacy bool `json:"legacy,omitempty"`
}

// NewReport fills a report from a digested tree and signature verdicts.
// OK is left to the caller, which knows whether a trusted signature is
// required (and then sets Checked too); Checked is true when a digest was
// expected or a signature found. Changed and Signatures are never null in
// the JSON.
func NewReport(target string, t *Tree, expected string, changed []string, sigs []SigResult) VerifyReport {
	r := VerifyReport{Target: target, Digest: t.Digest, Expected: expected, Changed: changed, Signatures: []ReportSig{},
		Checked: expected != "" || len(sigs) > 0}
	if r.Changed == nil {
		r.Changed = []string{}
	}
	for _, s := range sigs {
		r.Signatures = append(r.Signatures, ReportSig{KeyID: s.KeyID, Valid: s.Valid, Trusted: s.Trusted, Legacy: s.Valid && s.Legacy})
		if s.Valid && s.Legacy {
			r.Warnings = append(r.Warnings, LegacyWarning(s.KeyID))
		}
	}
	return r
}

// LegacyWarning is the warning for a valid signature of the legacy form.
func LegacyWarning(keyID string) string {
	return "signature by key " + keyID + " is of the old form (over the bare digest): weaker, it does not bind the plugin's name, marketplace or version; re-sign with: wharf sign"
}
