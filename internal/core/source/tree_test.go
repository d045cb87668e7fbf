package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tree remembers the directories it made so that it does not look at
// them again for every entry below; that must not let an entry through a
// link or a file that takes a directory's place, in any order of entries.
func TestTreeDirectoriesStayDirectories(t *testing.T) {
	type op struct{ kind, name, arg string }
	cases := []struct {
		name string
		ops  []op
		want error // of the last op; every earlier op succeeds
	}{
		{"file below a known directory", []op{{"dir", "d", ""}, {"file", "d/x", ""}, {"file", "d/e/y", ""}}, nil},
		{"link where a known directory is", []op{{"file", "d/x", ""}, {"link", "d", "x2"}}, ErrUnsafePath},
		{"file where a known directory is", []op{{"dir", "d/e", ""}, {"file", "d", ""}}, ErrUnsafePath},
		{"file through a link", []op{{"dir", "real", ""}, {"link", "ln", "real"}, {"file", "ln/x", ""}}, ErrLink},
		{"directory through a link", []op{{"dir", "real", ""}, {"link", "ln", "real"}, {"dir", "ln/sub", ""}}, ErrLink},
		{"directory where a link is", []op{{"dir", "real", ""}, {"link", "ln", "real"}, {"dir", "ln", ""}}, ErrUnsafePath},
		{"file below a file", []op{{"file", "f", ""}, {"file", "f/x", ""}}, ErrUnsafePath},
		{"directory counted once", []op{{"dir", "a/b", ""}, {"dir", "a/b", ""}, {"file", "a/b/c", ""}, {"file", "a/b/d", ""}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dest := t.TempDir()
			tr, err := newTree(dest, Limits{MaxEntries: 100, MaxBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.close()
			for k, o := range tc.ops {
				switch o.kind {
				case "dir":
					err = tr.mkdir(o.name)
				case "file":
					err = tr.file(o.name, false, strings.NewReader("x"))
				case "link":
					err = tr.symlink(o.name, o.arg)
				}
				if k < len(tc.ops)-1 && err != nil {
					t.Fatalf("%s %s: %v", o.kind, o.name, err)
				}
			}
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("last op: %v, want %v", err, tc.want)
			}
			// Nothing was written outside dest, and nothing below a link.
			filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Type()&os.ModeSymlink != 0 {
					if ents, _ := os.ReadDir(filepath.Join(filepath.Dir(p), mustReadlink(t, p))); len(ents) > 0 && tc.want == ErrLink {
						t.Errorf("%s: an entry was written through the link", p)
					}
				}
				return nil
			})
		})
	}
	// Entries are counted once each, directories included.
	dest := t.TempDir()
	tr, err := newTree(dest, Limits{MaxEntries: 3, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	for _, name := range []string{"a/x", "a/y"} {
		if err := tr.file(name, false, strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.file("a/z", false, strings.NewReader("x")); !errors.Is(err, ErrTooManyEntries) {
		t.Errorf("fourth entry: %v, want ErrTooManyEntries", err)
	}
}

func mustReadlink(t *testing.T, p string) string {
	t.Helper()
	s, err := os.Readlink(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
