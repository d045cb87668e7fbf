package plugin

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The manifest formats are decoded in two steps: a small JSON parser builds a
// tree that remembers where every value starts, then typed decoders walk the
// tree. encoding/json alone reports neither the line of a type error nor the
// path of the field, and it silently drops unknown keys; both matter to a
// marketplace author reading `wharf validate` output.

type nodeKind int

const (
	kindNull nodeKind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k nodeKind) String() string {
	switch k {
	case kindNull:
		return "null"
	case kindBool:
		return "boolean"
	case kindNumber:
		return "number"
	case kindString:
		return "string"
	case kindArray:
		return "array"
	case kindObject:
		return "object"
	}
	return "unknown"
}

// maxJSONDepth bounds nesting so hostile input cannot exhaust the stack.
const maxJSONDepth = 512

// maxJSONValues bounds the tree: a 10 MiB file of "[0,0,0,..." would
// otherwise cost half a gigabyte of nodes. Real marketplaces hold a few
// thousand values.
const maxJSONValues = 1 << 19

type member struct {
	key    string
	keyOff int
	val    *node
}

type node struct {
	kind    nodeKind
	off     int // offset of the value's first byte
	end     int // offset just past the value
	str     string
	boolean bool
	members []member
	elems   []*node
}

// get returns the value of key in an object node, or nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != kindObject {
		return nil
	}
	for _, m := range n.members {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// The parser allocates little, because a marketplace is parsed at every
// session start, where fresh memory costs a page fault per 4 KiB: keys and
// strings are written one after another into one buffer (strs) and sliced
// from it, nodes come from slabs, and an object's members or an array's
// elements are gathered on a stack shared by the whole parse and copied out
// once, at their exact size.
type jsonParser struct {
	src    []byte
	strs   strings.Builder // the text of every string and number parsed
	pos    int
	values int
	slab   []node
	ms     []member // members of the objects being parsed, innermost last
	es     []*node  // elements of the arrays being parsed, innermost last
}

// newNode returns a zeroed node from the current slab.
func (p *jsonParser) newNode(kind nodeKind, off int) *node {
	if len(p.slab) == cap(p.slab) {
		p.slab = make([]node, 0, 64)
	}
	p.slab = p.slab[:len(p.slab)+1]
	n := &p.slab[len(p.slab)-1]
	n.kind, n.off = kind, off
	return n
}

// parseJSON parses one JSON document. A syntax error is returned as
// *SyntaxError with its line and column.
func parseJSON(src []byte, file string) (*node, error) {
	p := &jsonParser{src: src}
	p.strs.Grow(len(src)) // no string is longer than the document
	// A UTF-8 byte order mark is skipped: some editors on Windows write one.
	if len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF {
		p.pos = 3
	}
	p.skipSpace()
	n, err := p.value(0)
	if err == nil {
		p.skipSpace()
		if p.pos < len(src) {
			err = p.errorf("unexpected %s after the top-level value", p.describe())
		}
	}
	if err != nil {
		se := err.(*parseErr)
		line, col := position(src, se.off)
		return nil, &SyntaxError{File: file, Line: line, Col: col, Msg: se.msg}
	}
	return n, nil
}

type parseErr struct {
	off int
	msg string
}

func (e *parseErr) Error() string { return e.msg }

func (p *jsonParser) errorf(format string, args ...any) error {
	return &parseErr{off: p.pos, msg: fmt.Sprintf(format, args...)}
}

func (p *jsonParser) describe() string {
	if p.pos >= len(p.src) {
		return "end of input"
	}
	r, _ := utf8.DecodeRune(p.src[p.pos:])
	if r == utf8.RuneError {
		return fmt.Sprintf("byte 0x%02x", p.src[p.pos])
	}
	return fmt.Sprintf("character %q", r)
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (*node, error) {
	if depth > maxJSONDepth {
		return nil, p.errorf("nesting deeper than %d levels", maxJSONDepth)
	}
	if p.values++; p.values > maxJSONValues {
		return nil, p.errorf("more than %d values in one document", maxJSONValues)
	}
	if p.pos >= len(p.src) {
		return nil, p.errorf("unexpected end of input, expected a value")
	}
	start := p.pos
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.stringLit()
		if err != nil {
			return nil, err
		}
		n := p.newNode(kindString, start)
		n.end, n.str = p.pos, s
		return n, nil
	case c == 't':
		n := p.newNode(kindBool, start)
		n.boolean = true
		return p.literal("true", n)
	case c == 'f':
		return p.literal("false", p.newNode(kindBool, start))
	case c == 'n':
		return p.literal("null", p.newNode(kindNull, start))
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, p.errorf("unexpected %s, expected a value", p.describe())
	}
}

func (p *jsonParser) literal(word string, n *node) (*node, error) {
	if len(p.src)-p.pos < len(word) || string(p.src[p.pos:p.pos+len(word)]) != word {
		return nil, p.errorf("invalid literal, expected %s", word)
	}
	p.pos += len(word)
	n.end = p.pos
	return n, nil
}

func (p *jsonParser) number() (*node, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.src[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(p.src) && p.src[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return nil, p.errorf("invalid number")
	}
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return nil, p.errorf("invalid number: expected a digit after '.'")
		}
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errorf("invalid number: expected a digit in the exponent")
		}
	}
	n := p.newNode(kindNumber, start)
	n.end, n.str = p.pos, p.text(p.src[start:p.pos])
	return n, nil
}

// stringLit scans a string literal and decodes it with encoding/json, which
// knows every escape and surrogate rule.
func (p *jsonParser) stringLit() (string, error) {
	start := p.pos
	p.pos++ // opening quote
	simple := true
	for {
		if p.pos >= len(p.src) {
			p.pos = start
			return "", p.errorf("unterminated string")
		}
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			if simple {
				return p.text(p.src[start+1 : p.pos-1]), nil
			}
			var s string
			if err := json.Unmarshal(p.src[start:p.pos], &s); err != nil {
				p.pos = start
				return "", p.errorf("invalid string: %v", err)
			}
			return s, nil
		case c == '\\':
			simple = false
			if p.pos+1 >= len(p.src) {
				p.pos++
				return "", p.errorf("unterminated string")
			}
			switch e := p.src[p.pos+1]; e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.pos += 2
			case 'u':
				for i := 2; i < 6; i++ {
					if p.pos+i >= len(p.src) || !isHex(p.src[p.pos+i]) {
						p.pos += i
						return "", p.errorf("invalid \\u escape in string")
					}
				}
				p.pos += 6
			default:
				p.pos++
				return "", p.errorf("invalid escape '\\%c' in string", e)
			}
		case c < 0x20:
			return "", p.errorf("control character 0x%02x in string; escape it", c)
		case c >= 0x80:
			simple = false // let encoding/json replace invalid UTF-8
			p.pos++
		default:
			p.pos++
		}
	}
}

// text returns b as a string held in p.strs. A Builder never changes bytes
// it has handed out, so the strings stay valid as it grows.
func (p *jsonParser) text(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	at := p.strs.Len()
	p.strs.Write(b)
	return p.strs.String()[at:]
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (p *jsonParser) object(depth int) (*node, error) {
	n := p.newNode(kindObject, p.pos)
	base := len(p.ms) // p.ms[base:] are this object's members
	p.pos++
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		n.end = p.pos
		return n, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return nil, p.errorf("unexpected %s, expected a quoted key", p.describe())
		}
		keyOff := p.pos
		key, err := p.stringLit()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return nil, p.errorf("unexpected %s, expected ':' after key %q", p.describe(), key)
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		p.ms = append(p.ms, member{key: key, keyOff: keyOff, val: v})
		p.skipSpace()
		if p.pos >= len(p.src) {
			return nil, p.errorf("unexpected end of input, expected ',' or '}'")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			n.end = p.pos
			n.members = append([]member(nil), p.ms[base:]...)
			p.ms = p.ms[:base]
			return n, nil
		default:
			return nil, p.errorf("unexpected %s, expected ',' or '}'", p.describe())
		}
	}
}

func (p *jsonParser) array(depth int) (*node, error) {
	n := p.newNode(kindArray, p.pos)
	base := len(p.es) // p.es[base:] are this array's elements
	p.pos++
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		n.end = p.pos
		return n, nil
	}
	for {
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		p.es = append(p.es, v)
		p.skipSpace()
		if p.pos >= len(p.src) {
			return nil, p.errorf("unexpected end of input, expected ',' or ']'")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			n.end = p.pos
			n.elems = append([]*node(nil), p.es[base:]...)
			p.es = p.es[:base]
			return n, nil
		default:
			return nil, p.errorf("unexpected %s, expected ',' or ']'", p.describe())
		}
	}
}

// position converts a byte offset to a 1-based line and a 1-based column
// counted in characters.
func position(src []byte, off int) (line, col int) {
	if off > len(src) {
		off = len(src)
	}
	line, lineStart := 1, 0
	for i := 0; i < off; i++ {
		if src[i] == '\n' {
			line++
			lineStart = i + 1
		}
	}
	return line, utf8.RuneCount(src[lineStart:off]) + 1
}
