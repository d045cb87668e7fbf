package policy

import (
	"fmt"

	"github.com/wharfhq/wharf/plugin"
)

// TypeRevoked is the error type of a plugin version or digest that a
// revocation withdrew: install refuses it (policy layer, exit 3), verify
// rejects it (trust layer, exit 4).
const TypeRevoked = "plugin-revoked"

// RevokedError is the error of acting on what r revoked: id at version
// (content digest) under layer (plugin.LayerPolicy for install,
// plugin.LayerTrust for verify). The message names the revocation and its
// reason.
func RevokedError(layer plugin.Layer, r Revocation, id plugin.ID, version, digest string) error {
	obj := id.String()
	if id.IsZero() {
		obj = digest
	} else if version != "" {
		obj += " " + version
	}
	what := "digest " + r.Digest
	if r.Plugin != "" {
		what = r.Plugin + " " + r.Version
	}
	return &plugin.Error{Layer: layer, Type: TypeRevoked, Object: obj,
		Err:  fmt.Errorf("%s is revoked by revocation %s (%s): %s", obj, r.ID, what, r.Reason),
		Hint: "an administrator withdrew it everywhere; use another version, or ask them to lift revocation " + r.ID}
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
