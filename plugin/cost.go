package plugin

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxCostRead bounds how much of one Markdown file the token estimate
// reads, as Claude Code does (1 MiB).
const maxCostRead = 1 << 20

// maxFallbackDescription is how much of a component's first line stands in
// for a missing description.
const maxFallbackDescription = 100

// AlwaysOnTokens estimates the context the plugin adds to every session:
// the figure `claude plugin details` prints as "Always-on" (Claude Code
// 2.1.332, without a token-counting service to ask). Each skill, command
// and agent is listed to the model by one line, "<name> <description>
// [<when to use>]": skills and commands named "<plugin>:<name>", agents by
// their file name. A missing description is the first line of the body
// (leading '#' dropped, at most 100 characters; "Skill" for an empty
// body). The estimate is the total length of those lines in UTF-16 code
// units divided by 4, rounded half up. Front matter is read as Claude Code
// reads it (claudeFrontMatter); a file that cannot be read adds nothing.
func (p *Plugin) AlwaysOnTokens() int {
	chars := 0
	for _, c := range p.Components {
		var name string
		switch c.Kind {
		case KindSkill, KindCommand:
			name = ComponentName(c.Kind, p.Namespace(), costName(c.Name))
		case KindAgent:
			name = strings.TrimSuffix(path.Base(c.Path), ".md")
		default:
			continue
		}
		line, ok := alwaysOnLine(filepath.Join(p.Root, filepath.FromSlash(c.Path)), name)
		if ok {
			chars += utf16Len(line)
		}
	}
	return (chars + 2) / 4
}

// utf16Len is len(utf16.Encode([]rune(s))), the length JavaScript gives s,
// without building either: an invalid byte is one U+FFFD, as in []rune(s).
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// costName is a component name as Claude Code lists it after the plugin
// prefix: every character but ASCII letters, digits, '_' and '-' becomes '-'.
func costName(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && (isAlnum(byte(r)) || r == '_' || r == '-') {
			return r
		}
		return '-'
	}, s)
}

// alwaysOnLine is the line a component adds to every session.
func alwaysOnLine(file, name string) (string, bool) {
	f, err := os.Open(file)
	if err != nil {
		return "", false
	}
	defer f.Close()
	// The buffer is the file's size and a byte (a component file is a few
	// KiB), not the bound: a bound-sized buffer per file cost a 50-plugin
	// `wharf list` 350 MiB of zeroed memory. It grows if the file grew.
	size := int64(512)
	if fi, err := f.Stat(); err == nil && fi.Size() >= 0 {
		size = min(fi.Size()+1, maxCostRead)
	}
	buf := make([]byte, 0, size)
	for len(buf) < maxCostRead {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := f.Read(buf[len(buf):min(cap(buf), maxCostRead)])
		buf = buf[:len(buf)+m]
		if err != nil || m == 0 {
			break
		}
	}
	data := buf
	if !utf8.Valid(data) {
		data = []byte(strings.ToValidUTF8(string(data), "\uFFFD"))
	}
	meta, body, _, _, err := claudeFrontMatter(data)
	if err != nil {
		meta, body = nil, data
	}
	desc := metaText(meta["description"])
	if desc == "" {
		desc = firstLine(body)
	}
	parts := []string{name, desc}
	if w, ok := meta["when_to_use"]; ok && w != nil {
		if s := fmt.Sprint(w); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " "), true
}

// metaText is a front matter value as Claude Code takes a description: a
// trimmed string, a number or boolean as text, anything else nothing.
func metaText(v any) string {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(x)
	}
	return ""
}

// firstLine is the description Claude Code makes from a body: its first
// non-blank line without leading '#', cut to 100 UTF-16 code units, or
// "Skill".
func firstLine(body []byte) string {
	for line := range bytes.Lines(body) {
		line = bytes.TrimSpace(bytes.TrimLeft(bytes.TrimSpace(line), "#"))
		if len(line) == 0 {
			continue
		}
		l := string(line)
		if utf16Len(l) > maxFallbackDescription {
			l = string(utf16.Decode(utf16.Encode([]rune(l))[:maxFallbackDescription]))
		}
		return l
	}
	return "Skill"
}
