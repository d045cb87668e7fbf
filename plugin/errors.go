package plugin

import (
	"errors"
	"fmt"
	"strings"
)

// Layer names where in wharf's three-layer model (plus trust, policy and
// dependencies) a failure happened. Messages and exit codes are derived from it.
type Layer string

// The layers of ARCHITECTURE.md.
const (
	LayerIntent          Layer = "intent"          // settings, identifiers, flags
	LayerMaterialization Layer = "materialization" // clones, cache, registry, manifests on disk
	LayerActive          Layer = "active"          // component loading and activation
	LayerTrust           Layer = "trust"           // digests and signatures
	LayerPolicy          Layer = "policy"          // denied by managed policy
	LayerDependency      Layer = "dependency"      // resolver: missing, cyclic, cross-marketplace
)

// Error types, as they appear in `--json` output (errorDetails[].type).
const (
	TypeInvalidID             = "invalid-id"
	TypeManifestParse         = "manifest-parse-error"
	TypeManifestInvalid       = "manifest-invalid"
	TypeComponentLoad         = "component-load-failed"
	TypeDependencyUnsatisfied = "dependency-unsatisfied"
	TypeTrustRejected         = "trust-rejected"
	TypePolicyDenied          = "policy-denied"
	TypeNotFound              = "not-found"
	TypeConflict              = "conflict"
	TypeSource                = "source-error"
)

// Error is wharf's typed error: which layer failed, on which object, why, and
// what the user can do next. Callers branch on Layer and Type with errors.As.
type Error struct {
	Layer  Layer
	Type   string // one of the Type* constants
	Object string // e.g. "deploy@corp 1.2.0" or a file path
	Err    error  // the cause; never nil for a constructed Error
	Hint   string // the next action, e.g. "run: wharf marketplace update corp"
}

func (e *Error) Error() string {
	msg := ""
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Object != "" && !containsObject(msg, e.Object) {
		msg = e.Object + ": " + msg
	}
	// The layer classifies the error (exit codes, --json's "layer"); the
	// message a person reads names the object and what happened, never
	// the layer.
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

func containsObject(msg, obj string) bool { return strings.Contains(msg, obj) }

// Errorf builds an *Error with a formatted cause.
func Errorf(layer Layer, typ, object, hint, format string, args ...any) *Error {
	return &Error{Layer: layer, Type: typ, Object: object, Hint: hint, Err: fmt.Errorf(format, args...)}
}

// LayerOf returns the layer of the first *Error in err's chain, or "".
func LayerOf(err error) Layer {
	var e *Error
	if errors.As(err, &e) {
		return e.Layer
	}
	return ""
}

// HintOf returns the first non-empty hint in err's chain, or "".
func HintOf(err error) string {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return ""
		}
		if e.Hint != "" {
			return e.Hint
		}
		err = e.Err
	}
	return ""
}
