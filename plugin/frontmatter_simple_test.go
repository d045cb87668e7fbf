package plugin

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/sharedtest"
)

// checkSimple fails when simpleFrontMatter accepts a header that the YAML
// parser reads differently (or refuses), as wharf reads a front matter
// (yamlFrontMatter) or as Claude Code does (claudeYAMLParse).
func checkSimple(t *testing.T, name string, header []byte) bool {
	t.Helper()
	got, ok := simpleFrontMatter(header)
	if !ok {
		return false
	}
	want, err := yamlFrontMatter(header)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%s: the simple reading of %q is %v; YAML reads %v (%v)", name, header, got, want, err)
	}
	claude, err := claudeYAMLParse(header)
	if err != nil || !reflect.DeepEqual(got, claude) {
		t.Errorf("%s: the simple reading of %q is %v; Claude Code's YAML reading is %v (%v)", name, header, got, claude, err)
	}
	return true
}

func TestSimpleFrontMatter(t *testing.T) {
	for _, c := range []struct {
		header string
		simple bool
	}{
		{"name: a\ndescription: Review code, then report\n", true},
		{"name: a\r\n\r\ntools: Read, Bash(git:*), Write\n", true},
		{"description: see https://example.com/x for more\n", true},
		{"name: a\nname: b\n", false},         // a key twice: YAML refuses it
		{"description: a: b\n", false},        // ": " in a plain scalar
		{"description: a # comment\n", false}, // a comment
		{"tools: [Read, Write]\n", false},     // a flow sequence
		{"model: 3\n", false},                 // a number
		{"enabled: Yes\n", false},             // a boolean word
		{"description: >\n  folded\n", false}, // a block scalar
		{"name: a\n  continued\n", false},     // a continuation line
		{"description: \"quoted\"\n", false},  // a quoted scalar
		{"description: caf\xc3\xa9\n", false}, // not ASCII
		{"- item\n", false},                   // not a mapping
		{"name:a\n", false},                   // no space after the colon
		{"", false},                           // empty
	} {
		_, ok := simpleFrontMatter([]byte(c.header))
		if ok != c.simple {
			t.Errorf("simpleFrontMatter(%q) ok = %v, want %v", c.header, ok, c.simple)
		}
		checkSimple(t, "case", []byte(c.header))
	}
}

// Every front matter of the Markdown files of ../shared/realworld that
// the simple reading accepts reads the same as with YAML, and most of
// them are accepted (else the fast path would be for nothing).
func TestSimpleFrontMatterRealWorld(t *testing.T) {
	root := sharedtest.RealWorldDir(t)
	headers, simple := 0, 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".md" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		header, _, has, err := splitFrontMatter(data)
		if !has || err != nil {
			return nil
		}
		headers++
		if checkSimple(t, p, header) {
			simple++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d front matters read without the YAML parser", simple, headers)
	if headers == 0 || simple*2 < headers {
		t.Errorf("%d of %d front matters read without the YAML parser; want most", simple, headers)
	}
}

func FuzzSimpleFrontMatter(f *testing.F) {
	for _, s := range []string{"name: a\ndescription: b c\n", "a: b\r\n", "k: v:\n", "x-y: z w, v\n\nq: r\n", "k: NULL\n", "k: v\tw\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, header []byte) {
		checkSimple(t, "fuzz", header)
	})
}
