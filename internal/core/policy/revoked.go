package policy

import (
	"fmt"

	"github.com/wharfhq/wharf/plugin"
)

// TypeRevoked is the error type of a plugin version or digest that a
// revocation withdrew: install refuses it (policy layer, exit 3), verify
// rejects it (trust layer, exit 4).
const TypeRevoked = "plugin-revoked"

// RevokedReason is the one text of what r withdrew and why, as every
// consumer shows it (wharf list, install, verify, channel builds, inventory
// reports): "revoked by revocation <id> (<plugin> <version> | digest <d>):
// <reason>".
func RevokedReason(r Revocation) string {
	what := "digest " + r.Digest
	if r.Plugin != "" {
		what = r.Plugin + " " + r.Version
	}
	reason := r.Reason
	if reason == "" {
		reason = "no reason given"
	}
	return fmt.Sprintf("revoked by revocation %s (%s): %s", r.ID, what, reason)
}

// RevokedHint is the one next step for content r withdrew.
func RevokedHint(r Revocation) string {
	return "an administrator withdrew it everywhere; use another version once one is published, or ask an administrator to lift revocation " + r.ID + " on the policy server"
}

// RevokedError is the error of acting on what r revoked: id at version
// (content digest) under layer (plugin.LayerPolicy for load and install,
// plugin.LayerTrust for verify). Its message is "<id> <version> is " +
// RevokedReason(r) and its hint RevokedHint(r).
func RevokedError(layer plugin.Layer, r Revocation, id plugin.ID, version, digest string) error {
	obj := id.String()
	if id.IsZero() {
		obj = digest
	} else if version != "" {
		obj += " " + version
	}
	return &plugin.Error{Layer: layer, Type: TypeRevoked, Object: obj,
		Err:  fmt.Errorf("%s is %s", obj, RevokedReason(r)),
		Hint: RevokedHint(r)}
}

// WithRevocations sets the revocations of the policy bundle the engine's
// server layers came from.
func WithRevocations(rs Revocations) Option {
	return func(e *Engine) { e.SetRevocations(rs) }
}

// SetRevocations replaces the revocations in force (a reload that pulled a
// new bundle sets them again).
func (e *Engine) SetRevocations(rs Revocations) {
	c := append(Revocations(nil), rs...)
	e.revs.Store(&c)
}

// Revocations returns the revocations in force: those of the policy
// bundles pulled from the policy servers; nil without any.
func (e *Engine) Revocations() Revocations {
	if e == nil {
		return nil
	}
	p := e.revs.Load()
	if p == nil {
		return nil
	}
	return *p
}
