package plugin

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

// alwaysOnLineReference is alwaysOnLine reading the file the plain way:
// the first maxCostRead bytes with io.ReadAll.
func alwaysOnLineReference(t *testing.T, file, name string) string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCostRead))
	if err != nil {
		t.Fatal(err)
	}
	meta, body, _, _, err := claudeFrontMatter([]byte(strings.ToValidUTF8(string(data), "\uFFFD")))
	if err != nil {
		meta, body = nil, []byte(strings.ToValidUTF8(string(data), "\uFFFD"))
	}
	desc := metaText(meta["description"])
	if desc == "" {
		desc = firstLineReference(string(body))
	}
	return strings.Join([]string{name, desc}, " ")
}

// firstLineReference is firstLine over the body's lines split apart.
func firstLineReference(body string) string {
	for _, l := range strings.Split(body, "\n") {
		l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "#"))
		if l == "" {
			continue
		}
		if u := utf16.Encode([]rune(l)); len(u) > maxFallbackDescription {
			l = string(utf16.Decode(u[:maxFallbackDescription]))
		}
		return l
	}
	return "Skill"
}

// firstLine and utf16Len give what the plain forms give, for bodies of
// blank lines, headings, CRLF, Unicode spaces, invalid UTF-8 and long
// lines, and for whatever the fuzzer makes of them.
func FuzzFirstLine(f *testing.F) {
	for _, s := range []string{"", "\n", "\n\n  \t\n# Title\nrest", "### \r\n\u00a0x\u2003\r\n", "\xff\xfe tail", "## \n#\n" + strings.Repeat("\U0001F600", 120), "no newline"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if got, want := firstLine(body), firstLineReference(string(body)); got != want {
			t.Errorf("firstLine(%q) = %q; split apart: %q", body, got, want)
		}
		if got, want := utf16Len(string(body)), len(utf16.Encode([]rune(string(body)))); got != want {
			t.Errorf("utf16Len(%q) = %d; utf16.Encode: %d", body, got, want)
		}
	})
}

// TestAlwaysOnLineReadsAsPlainRead: the read sized to the file gives the
// line the plain bounded read gives, for files around every size the read
// treats apart (empty, the default buffer, the bound and past it), with
// the description in the front matter or only in the body's first line,
// and one that ends past the bound.
func TestAlwaysOnLineReadsAsPlainRead(t *testing.T) {
	dir := t.TempDir()
	sizes := []int{0, 1, 100, 511, 512, 513, 4096, maxCostRead - 1, maxCostRead, maxCostRead + 1, 2*maxCostRead + 7}
	for _, size := range sizes {
		for _, kind := range []string{"front", "body", "latin1"} {
			var head string
			switch kind {
			case "front":
				head = "---\ndescription: sized " + kind + "\n---\n"
			case "latin1": // not UTF-8: each bad byte reads as U+FFFD
				head = "---\ndescription: caf\xe9 \xff sized\n---\n# caf\xe9\n"
			default:
				head = "# A heading that stands for the description\n"
			}
			content := head
			if size > len(head) {
				content += strings.Repeat("x", size-len(head))
			} else {
				content = head[:size]
			}
			file := filepath.Join(dir, kind+".md")
			if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, ok := alwaysOnLine(file, "n")
			if !ok {
				t.Fatalf("size %d %s: not read", size, kind)
			}
			if want := alwaysOnLineReference(t, file, "n"); got != want {
				t.Errorf("size %d %s: line %.60q; the plain read gives %.60q", size, kind, got, want)
			}
		}
	}
}
