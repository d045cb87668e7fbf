package source

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckEntryPath(t *testing.T) {
	ok := map[string]string{
		"a":              "a",
		"./a//b/":        "a/b",
		"package/x.js":   "package/x.js",
		".":              "",
		"":               "",
		"a/./b":          "a/b",
		"dir/.hidden":    "dir/.hidden",
		"..a/b..":        "..a/b..",
		"ünïcode/ok.txt": "ünïcode/ok.txt",
	}
	for in, want := range ok {
		got, err := CheckEntryPath(in)
		if err != nil || got != want {
			t.Errorf("CheckEntryPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := []string{"../x", "a/../../x", "a/..", "/etc/passwd", "C:/x", "c:x", `a\..\x`, "a\x00b", "a\nb", "\xff", "//x"}
	for _, in := range bad {
		if got, err := CheckEntryPath(in); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("CheckEntryPath(%q) = %q, %v; want ErrUnsafePath", in, got, err)
		}
	}
}

func FuzzCheckEntryPath(f *testing.F) {
	for _, s := range []string{"a", "./a/b", "../x", "/abs", "a/../b", "C:/w", `a\b`, "a/./b/", "..", "...", "a/..b", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		clean, err := CheckEntryPath(name)
		if err != nil {
			if !errors.Is(err, ErrUnsafePath) {
				t.Fatalf("error %v does not wrap ErrUnsafePath", err)
			}
			return
		}
		if clean == "" {
			return
		}
		if !filepath.IsLocal(clean) {
			t.Fatalf("CheckEntryPath(%q) = %q, which is not local", name, clean)
		}
		root := "/root/dest"
		joined := filepath.Join(root, clean)
		if !strings.HasPrefix(joined, root+"/") {
			t.Fatalf("CheckEntryPath(%q) = %q escapes %s as %s", name, clean, root, joined)
		}
		for _, p := range strings.Split(clean, "/") {
			if p == "" || p == "." || p == ".." {
				t.Fatalf("CheckEntryPath(%q) = %q has element %q", name, clean, p)
			}
		}
		again, err := CheckEntryPath(clean)
		if err != nil || again != clean {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", name, clean, again, err)
		}
	})
}
