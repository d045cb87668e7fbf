package plugin

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Claude Code reads a Markdown component's front matter as YAML; when that
// fails it tries once more after quoting every top-level "key: value" line
// whose value holds a character YAML treats specially ({ } [ ] * & # ! | >
// % @ ` or ": ") and is not already quoted at both ends, and after turning
// each leading tab into two spaces. A key given twice keeps its last
// value. When both attempts fail, every field is dropped: an agent keeps
// only a name taken from its file name, a skill or command loads with no
// metadata. claudeFrontMatter does the same.
var (
	claudeKeyLine  = regexp.MustCompile(`^([a-zA-Z_-]+):\s+(.+)$`)
	claudeSpecial  = regexp.MustCompile("[{}\\[\\]*&#!|>%@`]|: ")
	claudeLeadTabs = regexp.MustCompile(`(?m)^\t+`)
)

// claudeFrontMatter splits data and reads its header as Claude Code does.
// has is false without front matter; perr is the YAML error when Claude Code
// would drop every field (meta is then empty, body still the text after
// the header); err is a header that cannot be split at all.
func claudeFrontMatter(data []byte) (meta map[string]any, body []byte, has bool, perr, err error) {
	header, body, has, err := splitFrontMatter(data)
	if !has || err != nil {
		return nil, body, has, nil, err
	}
	meta, perr = claudeYAML(header)
	if perr != nil {
		meta, perr2 := claudeYAML([]byte(claudeQuote(string(header))))
		if perr2 == nil {
			return meta, body, true, nil, nil
		}
		return map[string]any{}, body, true, perr, nil
	}
	return meta, body, true, nil, nil
}

// claudeQuote is Claude Code's second reading of a header.
func claudeQuote(header string) string {
	lines := strings.Split(header, "\n")
	for i, line := range lines {
		m := claudeKeyLine.FindStringSubmatch(strings.TrimSuffix(line, "\r"))
		if m == nil {
			continue
		}
		v := m[2]
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			continue
		}
		if claudeSpecial.MatchString(v) {
			v = strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `"`, `\"`)
			lines[i] = m[1] + `: "` + v + `"`
		}
	}
	return claudeLeadTabs.ReplaceAllStringFunc(strings.Join(lines, "\n"), func(tabs string) string {
		return strings.Repeat("  ", len(tabs))
	})
}

// claudeYAML decodes a header; a mapping's repeated key keeps its last
// value, and a header that is not a mapping reads as no fields. The
// headers simpleFrontMatter accepts it reads without the YAML parser
// (checkSimple tests that both readings agree on them).
func claudeYAML(header []byte) (map[string]any, error) {
	if m, ok := simpleFrontMatter(header); ok {
		return m, nil
	}
	return claudeYAMLParse(header)
}

// claudeYAMLParse is claudeYAML through the YAML parser.
func claudeYAMLParse(header []byte) (m map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("YAML parser failed: %v", r)
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal(header, &doc); err != nil {
		return nil, err
	}
	out := map[string]any{}
	if doc.Kind == 0 || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return out, nil
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		var k any
		if err := root.Content[i].Decode(&k); err != nil {
			return nil, err
		}
		var v any
		if err := root.Content[i+1].Decode(&v); err != nil {
			return nil, err
		}
		out[fmt.Sprint(k)] = v
	}
	return out, nil
}
