// Package policy decides, with embedded OPA, whether a marketplace, plugin,
// component surface, hook or sideloaded directory may be used.
//
// Policy is an ordered list of layers (org → department → team). Each layer is
// a managed settings document plus optional admin Rego modules in package
// wharf.admin.<layer> that may only add deny reasons. The built-in module
// (rego/wharf.rego) implements the standard keys per layer, so lower layers
// only tighten: allowlists intersect, blocklists and denies union, and a
// forced enabledPlugins state set higher wins. Invalid security values fail
// closed with a warning.
//
// An Engine is safe for concurrent use. Its Version hashes every input
// document and module (derived from the same list the evaluation reads); the
// prepared query (compiled on the first decision that evaluates), the
// decision cache and the optional memo file (WithMemoFile) are keyed on it,
// and Reload swaps in a new set of layers atomically.
package policy
