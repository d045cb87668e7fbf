// Package toolpin pins the tool definitions of MCP servers: a canonical
// hash of what a server lists (each tool's name, description and input
// schema), the pins an administrator approved (per plugin and server), and
// the check the runtime makes at every start and at every
// notifications/tools/list_changed: definitions that differ from a pin
// have drifted, and the server exposes none of its tools.
//
// The hash ("mcp1:" and the hex SHA-256 of the canonical form) is defined
// exactly, so anyone can recompute it:
//
//  1. Each tool is the JSON object {"description": D, "inputSchema": S,
//     "name": N}, keys in that order. N and D are JSON strings (a name or
//     description that is not valid UTF-8 is an error); an absent schema is
//     null.
//  2. S is the schema in canonical JSON: object keys sorted bytewise with
//     no duplicates, no insignificant white space, strings escaped as Go's
//     encoding/json does without HTML escaping, numbers as the shortest
//     form that reads back as the same float64 (1.0 and 1 are one value).
//  3. The tools' canonical objects are sorted bytewise, so the order a
//     server lists them in does not matter, and joined by "\n" (canonical
//     JSON holds no raw newline).
//  4. The hash is "mcp1:" and the lowercase hex SHA-256 of that text.
package toolpin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Prefix starts every hash of tool definitions.
const Prefix = "mcp1:"

// Limits on what is hashed: a server listing more, or deeper, is refused.
const (
	MaxTools = 4096
	MaxDepth = 64
)

// Tool is one tool definition as a server lists it.
type Tool struct {
	Name        string
	Description string
	// InputSchema is the schema as JSON; nil is JSON null.
	InputSchema json.RawMessage
}

// Hash returns the hash of tools' definitions (see the package doc). It is
// the same for the same definitions in any order and with the schema's
// keys in any order; any change to a name, a description or a schema's
// value changes it.
func Hash(tools []Tool) (string, error) {
	c, err := Canonical(tools)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return Prefix + hex.EncodeToString(sum[:]), nil
}

// Canonical returns the text Hash hashes.
func Canonical(tools []Tool) ([]byte, error) {
	if len(tools) > MaxTools {
		return nil, fmt.Errorf("server lists %d tools; the limit is %d", len(tools), MaxTools)
	}
	lines := make([][]byte, 0, len(tools))
	for i, t := range tools {
		if !utf8.ValidString(t.Name) {
			return nil, fmt.Errorf("tool %d: name is not valid UTF-8", i)
		}
		if !utf8.ValidString(t.Description) {
			return nil, fmt.Errorf("tool %q: description is not valid UTF-8", t.Name)
		}
		var b bytes.Buffer
		b.WriteString(`{"description":`)
		writeString(&b, t.Description)
		b.WriteString(`,"inputSchema":`)
		schema := bytes.TrimSpace(t.InputSchema)
		if len(schema) == 0 {
			b.WriteString("null")
		} else if err := canonicalJSON(&b, schema); err != nil {
			return nil, fmt.Errorf("tool %q: inputSchema: %w", t.Name, err)
		}
		b.WriteString(`,"name":`)
		writeString(&b, t.Name)
		b.WriteByte('}')
		lines = append(lines, b.Bytes())
	}
	sort.Slice(lines, func(i, j int) bool { return bytes.Compare(lines[i], lines[j]) < 0 })
	return bytes.Join(lines, []byte{'\n'}), nil
}

// CanonicalJSON returns raw (one JSON value) in canonical form.
func CanonicalJSON(raw []byte) ([]byte, error) {
	var b bytes.Buffer
	if err := canonicalJSON(&b, raw); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func canonicalJSON(b *bytes.Buffer, raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := writeValue(b, dec, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON value")
	}
	return nil
}

func writeValue(b *bytes.Buffer, dec *json.Decoder, depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("nested deeper than %d levels", MaxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			members := map[string][]byte{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return fmt.Errorf("not valid JSON: %w", err)
				}
				k, ok := kt.(string)
				if !ok {
					return errors.New("not valid JSON: object key is not a string")
				}
				if _, dup := members[k]; dup {
					return fmt.Errorf("key %q appears twice in one object", k)
				}
				var vb bytes.Buffer
				if err := writeValue(&vb, dec, depth+1); err != nil {
					return err
				}
				members[k] = vb.Bytes()
			}
			if _, err := dec.Token(); err != nil {
				return fmt.Errorf("not valid JSON: %w", err)
			}
			keys := make([]string, 0, len(members))
			for k := range members {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			b.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					b.WriteByte(',')
				}
				writeString(b, k)
				b.WriteByte(':')
				b.Write(members[k])
			}
			b.WriteByte('}')
		case '[':
			b.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					b.WriteByte(',')
				}
				if err := writeValue(b, dec, depth+1); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return fmt.Errorf("not valid JSON: %w", err)
			}
			b.WriteByte(']')
		default:
			return fmt.Errorf("not valid JSON: unexpected %q", v)
		}
	case string:
		writeString(b, v)
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("number %s is out of range", v)
		}
		if f == 0 {
			f = 0 // -0 and 0 are one value
		}
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case nil:
		b.WriteString("null")
	}
	return nil
}

// writeString writes s as a JSON string: encoding/json's escaping without
// the HTML escapes. Invalid UTF-8 never reaches it from a name or a
// description (refused) and is replaced by the JSON decoder in a schema.
func writeString(b *bytes.Buffer, s string) {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Write(bytes.TrimSuffix(tmp.Bytes(), []byte{'\n'}))
}

// ValidHash reports whether h has the form of a hash of tool definitions.
func ValidHash(h string) bool {
	if len(h) != len(Prefix)+64 || h[:len(Prefix)] != Prefix {
		return false
	}
	for _, c := range h[len(Prefix):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
