package trust

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestWalkAtEqualsByPath walks trees through directory descriptors
// (walkTree) and by path (walked.dir) and requires the same entries,
// directories and errors from both.
func TestWalkAtEqualsByPath(t *testing.T) {
	put := func(t *testing.T, p, content string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	trees := map[string]func(t *testing.T, dir string){
		"plugin": func(t *testing.T, dir string) {
			put(t, filepath.Join(dir, ".claude-plugin/plugin.json"), `{"name":"p"}`, 0o644)
			put(t, filepath.Join(dir, SignaturesFile), `{}`, 0o644)
			put(t, filepath.Join(dir, "commands/b.md"), "b", 0o644)
			put(t, filepath.Join(dir, "commands/a.md"), "a", 0o444)
			put(t, filepath.Join(dir, "bin/run"), "#!/bin/sh\n", 0o755)
			put(t, filepath.Join(dir, ".git/HEAD"), "ref", 0o644)
			put(t, filepath.Join(dir, "sub/.git/HEAD"), "kept", 0o644)
			put(t, filepath.Join(dir, "lease/x"), "omitted", 0o644)
			put(t, filepath.Join(dir, "ünï/ß.md"), "utf-8", 0o644)
			os.MkdirAll(filepath.Join(dir, "empty"), 0o555)
			os.Symlink("commands/a.md", filepath.Join(dir, "alias.md"))
			os.Symlink("commands", filepath.Join(dir, "cmds"))
			os.Symlink("missing", filepath.Join(dir, "dangling"))
			deep := filepath.Join(dir, "deep")
			for i := range deepWalk {
				deep = filepath.Join(deep, fmt.Sprintf("d%d", i))
				put(t, filepath.Join(deep, "f"), fmt.Sprint(i), 0o644)
			}
			os.Symlink("../f", filepath.Join(deep, "up"))
		},
		"escape": func(t *testing.T, dir string) {
			put(t, filepath.Join(dir, "a.md"), "a", 0o644)
			os.Symlink("../../etc/passwd", filepath.Join(dir, "out"))
		},
		"bad name": func(t *testing.T, dir string) {
			put(t, filepath.Join(dir, "a\nb.md"), "a", 0o644)
		},
		"fifo": func(t *testing.T, dir string) {
			put(t, filepath.Join(dir, "a.md"), "a", 0o644)
			if err := mkfifo(filepath.Join(dir, "sub/pipe")); err != nil {
				os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
				if err := mkfifo(filepath.Join(dir, "sub/pipe")); err != nil {
					t.Skip("no named pipes:", err)
				}
			}
		},
		"empty": func(t *testing.T, dir string) {},
	}
	for name, build := range trees {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			build(t, dir)
			for _, root := range []string{dir, dir + "/", filepath.Join(dir, "..", "p")} {
				for _, omit := range [][]string{nil, {"lease"}} {
					walk := func(at bool) (*walked, string) {
						old := walkAt
						walkAt = at
						defer func() { walkAt = old }()
						w, err := walk(root, true, omit...)
						if err != nil {
							return w, err.Error()
						}
						return w, ""
					}
					want, wantErr := walk(false)
					got, gotErr := walk(true)
					if gotErr != wantErr {
						t.Errorf("%s %v: error %q; by path %q", root, omit, gotErr, wantErr)
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%s %v: walked\n%s\nby path\n%s", root, omit, summary(got), summary(want))
					}
					if name == "plugin" && (want == nil || len(want.entries) < 10 || hasPath(want.entries, ".git/HEAD") || !hasPath(want.entries, "sub/.git/HEAD")) {
						t.Errorf("%s: the plugin walk found %d entries", root, len(want.entries))
					}
				}
			}
		})
	}
}

func hasPath(es []Entry, p string) bool {
	for _, e := range es {
		if e.Path == p {
			return true
		}
	}
	return false
}

func summary(w *walked) string {
	if w == nil {
		return "nil"
	}
	var b strings.Builder
	for _, e := range append(append([]Entry(nil), w.entries...), w.dirs...) {
		fmt.Fprintf(&b, "%s %c %x %d %v %d %v\n", e.Path, e.Kind, e.Hash[:4], e.Size, e.ModTime, e.Ctime, e.Mode)
	}
	return b.String()
}
