// Package lazyre is a regular expression compiled on its first use instead
// of at package initialization. Every wharf command links the packages of
// every other, so a regexp.MustCompile in a package variable is paid at
// the start of each command, whether or not it runs that code: a bounded
// repetition such as {0,62} compiles to hundreds of allocations.
//
//	var layerName = lazyre.New(`^[a-z][a-z0-9_]{0,62}$`)
//	...
//	layerName.MatchString(s)
//
// The methods are those of regexp.Regexp that wharf uses; Regexp returns
// the compiled expression for the others. A malformed expression panics
// on first use, as regexp.MustCompile would at start; a test that reaches
// the code finds it.
package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is an expression compiled once, when first used. It is safe for
// concurrent use.
type Regexp struct {
	expr string
	re   func() *regexp.Regexp
}

// New returns expr, to be compiled on first use.
func New(expr string) *Regexp {
	return &Regexp{expr: expr, re: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })}
}

// Regexp returns the compiled expression.
func (r *Regexp) Regexp() *regexp.Regexp { return r.re() }

// String returns the source text of the expression, without compiling it.
func (r *Regexp) String() string { return r.expr }

// MatchString reports whether s contains a match.
func (r *Regexp) MatchString(s string) bool { return r.re().MatchString(s) }

// FindStringSubmatch is regexp.Regexp.FindStringSubmatch.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.re().FindStringSubmatch(s) }

// ReplaceAllString is regexp.Regexp.ReplaceAllString.
func (r *Regexp) ReplaceAllString(src, repl string) string { return r.re().ReplaceAllString(src, repl) }

// ReplaceAllStringFunc is regexp.Regexp.ReplaceAllStringFunc.
func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.re().ReplaceAllStringFunc(src, repl)
}
