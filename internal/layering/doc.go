// Package layering holds the test that keeps wharf's package imports pointing
// one way, as docs/architecture.md draws them. It has no code of its own.
package layering
