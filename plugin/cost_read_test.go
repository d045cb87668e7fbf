package plugin

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		desc = firstLine(string(body))
	}
	return strings.Join([]string{name, desc}, " ")
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
		for _, kind := range []string{"front", "body"} {
			var head string
			if kind == "front" {
				head = "---\ndescription: sized " + kind + "\n---\n"
			} else {
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
