package plugin

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Severity says whether a Diagnostic makes the input unusable.
type Severity string

// Severities of a Diagnostic.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Diagnostic is one finding about a manifest: where it is, which field, and
// what is wrong. Line and Col are 1-based (Col counts characters); 0 means
// unknown. Field is a path like plugins[3].source.repo.
type Diagnostic struct {
	File     string   `json:"file"`
	Line     int      `json:"line,omitempty"`
	Col      int      `json:"col,omitempty"`
	Field    string   `json:"field,omitempty"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	// Code names a plugin directory finding (README_MISSING, ...); empty
	// for every other diagnostic.
	Code string `json:"code,omitempty"`
}

// String formats d like a compiler message:
//
//	marketplace.json:12:5: plugins[3].source.repo: expected string, got number
//
// Warnings carry a "warning: " prefix before the field.
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.File)
	if d.Line > 0 {
		fmt.Fprintf(&b, ":%d", d.Line)
		if d.Col > 0 {
			fmt.Fprintf(&b, ":%d", d.Col)
		}
	}
	b.WriteString(": ")
	if d.Severity == SeverityWarning {
		b.WriteString("warning: ")
	}
	if d.Field != "" {
		b.WriteString(d.Field)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	return b.String()
}

// SyntaxError is malformed JSON at a position.
type SyntaxError struct {
	File string
	Line int
	Col  int
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s:%d:%d: invalid JSON: %s", e.File, e.Line, e.Col, e.Msg)
}

// FieldError is a well-formed document with a field that is wrong: wrong type,
// bad path, invalid name, missing required field, conflicting definitions.
type FieldError struct {
	File  string
	Field string
	Line  int
	Col   int
	Msg   string
}

func (e *FieldError) Error() string {
	return Diagnostic{File: e.File, Line: e.Line, Col: e.Col, Field: e.Field, Severity: SeverityError, Message: e.Msg}.String()
}

// SizeError is a manifest or component file larger than MaxManifestSize.
type SizeError struct {
	File  string
	Size  int64 // bytes seen: the file size, or Limit+1 when reading stopped
	Limit int64
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("%s: %d bytes is over the %d byte limit for manifest files", e.File, e.Size, e.Limit)
}

// MaxManifestSize bounds every JSON or Markdown file this package reads.
const MaxManifestSize = 10 << 20

// decoder walks a parsed JSON tree and collects diagnostics.
type decoder struct {
	file    string
	src     []byte
	lines   []int // offsets of line starts, built on first use
	diags   []Diagnostic
	hasErr  bool
	omitted int
	// soft, while set, turns errors into warnings collected in softMsgs:
	// the problem makes one component unusable, not the whole file.
	soft       bool
	softMsgs   []string
	softSuffix string
}

// maxDiagnostics bounds the findings kept for one file; a hostile file with a
// million unknown keys must not cost a million messages. The first error is
// always kept, so a capped list still fails.
const maxDiagnostics = 1000

func newDecoder(file string, src []byte) *decoder { return &decoder{file: file, src: src} }

func (d *decoder) pos(off int) (int, int) {
	if d.lines == nil {
		d.lines = append(d.lines, 0)
		for i, c := range d.src {
			if c == '\n' {
				d.lines = append(d.lines, i+1)
			}
		}
	}
	if off > len(d.src) {
		off = len(d.src)
	}
	i := sort.Search(len(d.lines), func(i int) bool { return d.lines[i] > off }) - 1
	if i < 0 {
		i = 0
	}
	return i + 1, utf8.RuneCount(d.src[d.lines[i]:off]) + 1
}

func (d *decoder) add(sev Severity, off int, field, format string, args ...any) {
	if d.soft && sev == SeverityError {
		sev = SeverityWarning
		msg := fmt.Sprintf(format, args...)
		if field != "" {
			d.softMsgs = append(d.softMsgs, field+": "+msg)
		} else {
			d.softMsgs = append(d.softMsgs, msg)
		}
		format, args = "%s%s", []any{msg, d.softSuffix}
	}
	if len(d.diags) >= maxDiagnostics && (sev != SeverityError || d.hasErr) {
		d.omitted++
		return
	}
	if sev == SeverityError {
		d.hasErr = true
	}
	diag := Diagnostic{File: d.file, Field: field, Severity: sev, Message: fmt.Sprintf(format, args...)}
	if off >= 0 && d.src != nil {
		diag.Line, diag.Col = d.pos(off)
	}
	d.diags = append(d.diags, diag)
}

func (d *decoder) errorf(n *node, field, format string, args ...any) {
	d.add(SeverityError, offOf(n), field, format, args...)
}

func (d *decoder) warnf(n *node, field, format string, args ...any) {
	d.add(SeverityWarning, offOf(n), field, format, args...)
}

func offOf(n *node) int {
	if n == nil {
		return -1
	}
	return n.off
}

// finish returns the diagnostics, with a note when some were left out.
func (d *decoder) finish() []Diagnostic {
	if d.omitted > 0 {
		d.diags = append(d.diags, Diagnostic{File: d.file, Severity: SeverityWarning,
			Message: fmt.Sprintf("%d more problems not shown", d.omitted)})
		d.omitted = 0
	}
	return d.diags
}

// raw returns the source text of n, for values kept as json.RawMessage.
func (d *decoder) raw(n *node) json.RawMessage {
	if n == nil || n.end <= n.off || n.end > len(d.src) {
		return nil
	}
	return append(json.RawMessage(nil), d.src[n.off:n.end]...)
}

func (d *decoder) typeError(n *node, field, want string) {
	d.errorf(n, field, "expected %s, got %s", want, n.kind)
}

func (d *decoder) str(n *node, field string) string {
	if n.kind != kindString {
		d.typeError(n, field, "string")
		return ""
	}
	return n.str
}

func (d *decoder) boolPtr(n *node, field string) *bool {
	if n.kind != kindBool {
		d.typeError(n, field, "boolean")
		return nil
	}
	b := n.boolean
	return &b
}

// strList decodes an array of strings. With lenient, a single string is
// accepted as a one-element list and reported as a warning.
func (d *decoder) strList(n *node, field string, lenient bool) []string {
	switch n.kind {
	case kindString:
		if lenient {
			d.warnf(n, field, "expected an array of strings, got a single string; read as a one-element array")
			return []string{n.str}
		}
	case kindArray:
		out := make([]string, 0, len(n.elems))
		for i, e := range n.elems {
			if e.kind != kindString {
				d.typeError(e, index(field, i), "string")
				continue
			}
			out = append(out, e.str)
		}
		return out
	}
	d.typeError(n, field, "array of strings")
	return nil
}

func (d *decoder) strMap(n *node, field string) map[string]string {
	if n.kind != kindObject {
		d.typeError(n, field, "object of strings")
		return nil
	}
	out := make(map[string]string, len(n.members))
	for _, m := range n.members {
		if m.val.kind != kindString {
			d.typeError(m.val, key(field, m.key), "string")
			continue
		}
		out[m.key] = m.val.str
	}
	return out
}

// object checks that n is an object and reports duplicate keys. It returns
// false (after reporting) when n is not an object.
func (d *decoder) object(n *node, field string) bool {
	if n.kind != kindObject {
		d.typeError(n, field, "object")
		return false
	}
	var dup []bool
	if len(n.members) > smallObject {
		dup = duplicateKeys(n.members)
	}
	for i, m := range n.members {
		if dup != nil && dup[i] || dup == nil && hasEarlierKey(n.members, i) {
			d.warnf(&node{off: m.keyOff}, key(field, m.key), "duplicate key; the last value is used")
		}
	}
	return true
}

// smallObject is the member count up to which object compares keys one by
// one (hasEarlierKey); a larger object is indexed once in a map
// (duplicateKeys). Objects of a manifest have a handful of keys, and a map
// per object was a large part of a marketplace parse's memory.
const smallObject = 16

// hasEarlierKey reports whether members[i]'s key is the key of an earlier
// member.
func hasEarlierKey(members []member, i int) bool {
	for _, m := range members[:i] {
		if m.key == members[i].key {
			return true
		}
	}
	return false
}

// duplicateKeys marks the members whose key an earlier member has.
func duplicateKeys(members []member) []bool {
	dup := make([]bool, len(members))
	seen := make(map[string]bool, len(members))
	for i, m := range members {
		dup[i] = seen[m.key]
		seen[m.key] = true
	}
	return dup
}

// unknown reports an unknown key as a warning; the caller keeps its value.
func (d *decoder) unknown(m member, field string) {
	d.warnf(&node{off: m.keyOff}, key(field, m.key), "unknown key %q (kept, but not used by wharf)", m.key)
}

// hasErrors reports whether any diagnostic is an error.
func hasErrors(diags []Diagnostic) bool {
	for _, d := range diags {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// firstError turns the first error diagnostic into a *FieldError, or nil.
func firstError(diags []Diagnostic) *FieldError {
	for _, d := range diags {
		if d.Severity == SeverityError {
			return &FieldError{File: d.File, Field: d.Field, Line: d.Line, Col: d.Col, Msg: d.Message}
		}
	}
	return nil
}

// countErrors returns how many diagnostics are errors.
func countErrors(diags []Diagnostic) int {
	n := 0
	for _, d := range diags {
		if d.Severity == SeverityError {
			n++
		}
	}
	return n
}

// key appends an object key to a field path.
func key(field, k string) string {
	if isIdent(k) {
		if field == "" {
			return k
		}
		return field + "." + k
	}
	return field + "[" + strconv.Quote(k) + "]"
}

func index(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '_' && c != '$' && c != '-' {
			return false
		}
	}
	return true
}

// parseErrorFor wraps a syntax, field or size error as wharf's typed error.
func parseErrorFor(file string, err error) *Error {
	return &Error{Layer: LayerMaterialization, Type: TypeManifestParse, Object: file, Err: err,
		Hint: "fix the file, then check it with: wharf validate " + file}
}
