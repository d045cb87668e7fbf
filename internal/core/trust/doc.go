// Package trust computes and checks what wharf trusts about a plugin's
// content: the canonical `w1:` digest of a plugin tree, the cheap stat
// fingerprint checked on the cache-only load path, trust pins recorded at
// install, and signatures over the digest made with sigstore keys.
//
// The digest is defined in docs/trust.md precisely enough to be recomputed by
// a short script (docs/w1digest.py). Every error this package returns is a
// *plugin.Error in the trust layer that names the path or plugin involved.
package trust
