package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/sharedtest"
)

// sameLocalDir checks that LocalDirIn with the root resolved once gives
// what LocalDir gives (the directory, or the same error).
func sameLocalDir(t *testing.T, root string, e *Entry) (string, error) {
	t.Helper()
	want, werr := e.LocalDir(root)
	realRoot, err := RealRoot(root)
	if err != nil {
		// LocalDir checks the entry before it resolves the root.
		if cerr := e.checkLocal(); cerr != nil {
			err = cerr
		}
		if werr == nil || werr.Error() != err.Error() {
			t.Errorf("%s: RealRoot: %v; LocalDir: %v", root, err, werr)
		}
		return want, werr
	}
	got, gerr := e.LocalDirIn(root, realRoot)
	if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Errorf("%s %q: LocalDirIn gives %q, %v; LocalDir gives %q, %v", root, e.Source.Path, got, gerr, want, werr)
	}
	return want, werr
}

// TestLocalDirInEqualsLocalDirRealWorld: for every entry of the real
// marketplaces, resolving the root once finds the same directory.
func TestLocalDirInEqualsLocalDirRealWorld(t *testing.T) {
	root := sharedtest.RealWorldDir(t)
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		mroot := filepath.Join(root, d.Name())
		m, _, err := ReadMarketplace(mroot)
		if err != nil {
			t.Fatal(err)
		}
		for i := range m.Plugins {
			if _, err := sameLocalDir(t, mroot, &m.Plugins[i]); err == nil {
				n++
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d entries resolved", n)
	}
}

// TestLocalDirInEqualsLocalDirCrafted: the same for roots and sources
// through symlinks (inside, outside, dangling, looping), through a file,
// missing, the root itself, nested, and a relative root.
func TestLocalDirInEqualsLocalDirCrafted(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(real, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(to, at string) {
		if err := os.Symlink(to, filepath.Join(real, at)); err != nil {
			t.Fatal(err)
		}
	}
	mk("plugins/a")
	mk("plugins/deep/b/c")
	mk("elsewhere/x")
	if err := os.MkdirAll(filepath.Join(base, "outside", "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "plugins", "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln("../elsewhere", "plugins/in")
	ln(filepath.Join(base, "outside"), "plugins/out")
	ln("nowhere", "plugins/dangling")
	ln("loop2", "plugins/loop1")
	ln("loop1", "plugins/loop2")
	ln(real, "plugins/abs")
	if err := os.Symlink(real, filepath.Join(base, "via")); err != nil {
		t.Fatal(err)
	}
	sources := []string{"./", ".", "./plugins/a", "./plugins/a/", "./plugins//a", "./plugins/./a", "./plugins/deep/b/c",
		"./plugins/in/x", "./plugins/in", "./plugins/out/p", "./plugins/out", "./plugins/dangling", "./plugins/loop1",
		"./plugins/abs/plugins/a", "./plugins/missing", "./plugins/file", "./plugins/file/below", "./plugins/a/missing/deeper",
		"plugins/a", "../real/plugins/a", "/plugins/a"}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	relRoot, err := filepath.Rel(wd, real)
	if err != nil {
		t.Fatal(err)
	}
	roots := []string{real, filepath.Join(base, "via"), real + "/", filepath.Join(base, "via", "plugins", ".."), relRoot, filepath.Join(base, "missing")}
	resolved := 0
	for _, root := range roots {
		for _, src := range sources {
			e := &Entry{Manifest: Manifest{Name: "p"}, Source: Source{Kind: SourceRelative, Path: src}}
			if _, err := sameLocalDir(t, root, e); err == nil {
				resolved++
			}
		}
		e := &Entry{Manifest: Manifest{Name: "g"}, Source: Source{Kind: SourceGitHub}}
		sameLocalDir(t, root, e)
	}
	if resolved < 20 {
		t.Fatalf("only %d of the crafted sources resolved: the cases do not reach the directory", resolved)
	}
}
