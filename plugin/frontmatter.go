package plugin

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxFrontMatter bounds the YAML header of a Markdown component; YAML is
// parsed eagerly and anything this large is not a header.
const maxFrontMatter = 256 << 10

// ParseFrontMatter splits Markdown into its YAML front matter and body. The
// front matter starts with a "---" line at the very top and ends at the next
// "---" (or "...") line. Without front matter, meta is nil and body is data.
// An unterminated header, invalid YAML or a header that is not a mapping is
// an error (a *FrontMatterError).
//
// Real plugins often write front matter that is not valid YAML (an
// unquoted description containing ": "). Such a header is read leniently, as
// Claude Code does: one "key: value" per top-level line, the value taken as a
// plain string, continuation lines appended.
func ParseFrontMatter(data []byte) (meta map[string]any, body []byte, err error) {
	meta, body, _, err = parseFrontMatter(data)
	return meta, body, err
}

// parseFrontMatter is ParseFrontMatter that also reports whether the header
// was invalid YAML read leniently.
func parseFrontMatter(data []byte) (meta map[string]any, body []byte, lenient bool, err error) {
	header, body, has, err := splitFrontMatter(data)
	if !has || err != nil {
		return nil, body, false, err
	}
	meta, err = decodeFrontMatter(header)
	if err != nil {
		var ok bool
		if meta, ok = lenientFrontMatter(header); !ok {
			return nil, nil, false, err
		}
		lenient = true
	}
	return meta, body, lenient, nil
}

// splitFrontMatter cuts data into its front matter header and body. has
// is false when data does not start with a "---" line (body is data); an
// unterminated or oversized header is an error.
func splitFrontMatter(data []byte) (header, body []byte, has bool, err error) {
	rest, ok := cutLine(data, "---")
	if !ok {
		return nil, data, false, nil
	}
	off := len(data) - len(rest)
	for i := off; i <= len(data); {
		j := bytes.IndexByte(data[i:], '\n')
		var cur []byte
		next := len(data) + 1
		if j < 0 {
			cur = data[i:]
		} else {
			cur = data[i : i+j]
			next = i + j + 1
		}
		cur = bytes.TrimSuffix(cur, []byte("\r"))
		if string(bytes.TrimRight(cur, " \t")) == "---" || string(bytes.TrimRight(cur, " \t")) == "..." {
			header := data[off:i]
			if len(header) > maxFrontMatter {
				return nil, nil, true, &FrontMatterError{Line: 1, Msg: fmt.Sprintf("front matter is over %d bytes", maxFrontMatter)}
			}
			if next > len(data) {
				return header, []byte{}, true, nil
			}
			return header, data[next:], true, nil
		}
		if j < 0 {
			break
		}
		i = next
	}
	return nil, nil, true, &FrontMatterError{Line: 1, Msg: "front matter starts with --- but has no closing --- line"}
}

// FrontMatterError is invalid YAML front matter in a Markdown component.
// Line is 1-based in the Markdown file, 0 when unknown.
type FrontMatterError struct {
	Line int
	Msg  string
}

func (e *FrontMatterError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("front matter line %d: %s", e.Line, e.Msg)
	}
	return "front matter: " + e.Msg
}

func cutLine(data []byte, want string) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(data, []byte(want))
	if !ok {
		return nil, false
	}
	rest = bytes.TrimLeft(rest, " \t")
	if r, ok := bytes.CutPrefix(rest, []byte("\r\n")); ok {
		return r, true
	}
	if r, ok := bytes.CutPrefix(rest, []byte("\n")); ok {
		return r, true
	}
	return nil, false
}

func decodeFrontMatter(header []byte) (m map[string]any, err error) {
	if m, ok := simpleFrontMatter(header); ok {
		return m, nil
	}
	return yamlFrontMatter(header)
}

// simpleFrontMatter reads the headers most Markdown components have
// without the YAML parser, which costs more than reading the file: one
// "key: value" per line, where the key is a plain name and the value a
// one-line plain scalar that YAML can only read as that string (ASCII,
// starting with a letter, no '#', ": ", brackets or braces, not a
// boolean or null word, no key twice or longer than 128 bytes). ok is false for anything else,
// which the YAML parser reads; a test checks that the two agree on every
// header this accepts.
func simpleFrontMatter(header []byte) (map[string]any, bool) {
	var out map[string]any
	for line := range bytes.Lines(header) {
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) == 0 {
			continue
		}
		k, v, ok := simpleLine(line)
		if !ok {
			return nil, false
		}
		if out == nil {
			out = make(map[string]any, 4)
		}
		if _, dup := out[k]; dup {
			return nil, false
		}
		out[k] = v
	}
	return out, out != nil
}

// simpleLine splits "key: value" as simpleFrontMatter accepts it.
func simpleLine(line []byte) (string, string, bool) {
	i := bytes.IndexByte(line, ':')
	if i <= 0 || i+1 >= len(line) || line[i+1] != ' ' {
		return "", "", false
	}
	key := line[:i]
	if len(key) > 128 || !isLetter(key[0]) { // YAML bounds an implicit key at 1024
		return "", "", false
	}
	for _, c := range key {
		if !(isAlnum(c) || c == '_' || c == '-') {
			return "", "", false
		}
	}
	val := bytes.Trim(line[i+1:], " ")
	if len(val) == 0 || !isLetter(val[0]) || val[len(val)-1] == ':' {
		return "", "", false
	}
	for j, c := range val {
		if c < 0x20 || c > 0x7e || c == '#' || c == '[' || c == ']' || c == '{' || c == '}' || c == ':' && j+1 < len(val) && val[j+1] == ' ' {
			return "", "", false
		}
	}
	if yamlWord(key) || yamlWord(val) {
		return "", "", false
	}
	return string(key), string(val), true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// yamlWord reports the words YAML (1.1 or 1.2) may read as a boolean or
// null instead of a string.
func yamlWord(b []byte) bool {
	if len(b) > 5 {
		return false
	}
	switch strings.ToLower(string(b)) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return true
	}
	return false
}

// yamlFrontMatter decodes a header with the YAML parser.
func yamlFrontMatter(header []byte) (m map[string]any, err error) {
	// yaml.v3 has panicked on hostile input in the past; a panic here must
	// not take down a process that is listing plugins.
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, &FrontMatterError{Msg: fmt.Sprintf("YAML parser failed: %v", r)}
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal(header, &doc); err != nil {
		return nil, &FrontMatterError{Msg: err.Error()}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return map[string]any{}, nil // empty header
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &FrontMatterError{Line: root.Line + 1, Msg: "front matter must be a mapping of keys to values"}
	}
	out := map[string]any{}
	if err := root.Decode(&out); err != nil {
		return nil, &FrontMatterError{Line: root.Line + 1, Msg: err.Error()}
	}
	return out, nil
}

// lenientFrontMatter reads "key: value" lines. It fails (false) when the
// first non-blank line is not such a line: then the header is not front
// matter written carelessly but something else.
func lenientFrontMatter(header []byte) (map[string]any, bool) {
	out := map[string]any{}
	var cur string
	var val []string
	flush := func() {
		if cur != "" {
			out[cur] = strings.TrimSpace(strings.Join(val, "\n"))
		}
	}
	for _, line := range strings.Split(string(header), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if k, v, ok := topLevelKey(line); ok {
			flush()
			cur, val = k, []string{v}
			continue
		}
		if cur == "" {
			if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			return nil, false
		}
		val = append(val, line)
	}
	flush()
	for k, v := range out {
		s := v.(string)
		if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
			var x string
			if yaml.Unmarshal([]byte(s), &x) == nil {
				out[k] = x
			}
		}
	}
	return out, len(out) > 0
}

func topLevelKey(line string) (string, string, bool) {
	i := strings.Index(line, ":")
	if i <= 0 {
		return "", "", false
	}
	k := line[:i]
	for j := 0; j < len(k); j++ {
		c := k[j]
		if !(isAlnum(c) || c == '_' || c == '-') {
			return "", "", false
		}
	}
	if !isAlnum(k[0]) {
		return "", "", false
	}
	rest := line[i+1:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", "", false
	}
	return k, strings.TrimSpace(rest), true
}
