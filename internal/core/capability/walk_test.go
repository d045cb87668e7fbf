//go:build unix

package capability

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/sharedtest"
)

// describeEntries is everything a listing says: each entry's name, type,
// directory flag and Info (mode, size), and the error, by its text.
func describeEntries(ents []fs.DirEntry, err error) string {
	var b strings.Builder
	for _, d := range ents {
		fmt.Fprintf(&b, "%s type=%v dir=%v", d.Name(), d.Type(), d.IsDir())
		if fi, ierr := d.Info(); ierr != nil {
			fmt.Fprintf(&b, " info error %v\n", ierr)
		} else {
			fmt.Fprintf(&b, " mode=%v size=%d\n", fi.Mode(), fi.Size())
		}
	}
	fmt.Fprintf(&b, "error: %v", err)
	return b.String()
}

// walkLog is every call of a WalkDir function, in order.
func walkLog(root string, walk func(string, fs.WalkDirFunc) error, skipGit bool) string {
	var b strings.Builder
	err := walk(root, func(p string, d fs.DirEntry, err error) error {
		if d == nil {
			fmt.Fprintf(&b, "%s <nil> %v\n", p, err)
			return nil
		}
		fmt.Fprintf(&b, "%s %s %v %v\n", p, d.Name(), d.Type(), err)
		if skipGit && d.IsDir() && d.Name() == "skip" {
			return filepath.SkipDir
		}
		if d.Name() == "stop" {
			return filepath.SkipAll
		}
		return nil
	})
	fmt.Fprintf(&b, "end: %v", err)
	return b.String()
}

func sameWalk(t *testing.T, root string) {
	t.Helper()
	var l dirLister
	for _, skip := range []bool{false, true} {
		want := walkLog(root, filepath.WalkDir, skip)
		got := walkLog(root, func(r string, fn fs.WalkDirFunc) error { return walkDir(r, fn, l.readDir) }, skip)
		if got != want {
			t.Errorf("%s: walkDir differs from filepath.WalkDir\nwalkDir:\n%s\nfilepath.WalkDir:\n%s", root, got, want)
		}
	}
}

func sameReadDir(t *testing.T, l *dirLister, dir string) {
	t.Helper()
	want := describeEntries(os.ReadDir(dir))
	if got := describeEntries(l.readDir(dir)); got != want {
		t.Errorf("%s: dirLister differs from os.ReadDir\ndirLister:\n%s\nos.ReadDir:\n%s", dir, got, want)
	}
}

// TestReadDirEqualsOSRealWorld: listing every directory (and every file,
// which is no directory) of ../shared/realworld gives what os.ReadDir
// gives, and walking each marketplace calls the walk function as
// filepath.WalkDir does.
func TestReadDirEqualsOSRealWorld(t *testing.T) {
	root := sharedtest.RealWorldDir(t)
	var l dirLister
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		sameReadDir(t, &l, p)
		if d.IsDir() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("only %d directories under %s", n, root)
	}
	sameWalk(t, root)
}

// TestReadDirEqualsOSCrafted: the same for a hostile tree: symlinks
// (dangling, looping, to a directory), a named pipe, a socket, an empty
// directory, names with spaces, newlines and non-UTF-8 bytes, a
// directory larger than one listing buffer, a missing path, a file, and
// SkipDir and SkipAll from the walk function.
func TestReadDirEqualsOSCrafted(t *testing.T) {
	root := filepath.Join(t.TempDir(), "tree")
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(root, p), []byte(p), mode); err != nil {
			t.Fatal(err)
		}
	}
	mk("a/b/c")
	mk("empty")
	mk("skip/inner")
	mk("big")
	mk("z/stop")
	write("a/b/c/file.md", 0o644)
	write("skip/inner/x.md", 0o644)
	write("run.sh", 0o755)
	write("with space", 0o644)
	write("new\nline", 0o644)
	write("bad\xff\xfe", 0o644)
	for i := 0; i < 600; i++ { // more than 8192 bytes of records
		write(fmt.Sprintf("big/entry-with-a-long-name-%04d.md", i), 0o644)
	}
	for _, l := range [][2]string{{"nowhere", "dangling"}, {"loop2", "loop1"}, {"loop1", "loop2"}, {"a", "to-dir"}, {"run.sh", "to-file"}} {
		if err := os.Symlink(l[0], filepath.Join(root, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mknod(filepath.Join(root, "sock"), syscall.S_IFSOCK|0o644, 0); err != nil {
		t.Logf("no socket node: %v", err)
	}
	var l dirLister
	for _, d := range []string{root, filepath.Join(root, "a"), filepath.Join(root, "empty"), filepath.Join(root, "big"),
		filepath.Join(root, "missing"), filepath.Join(root, "run.sh"), filepath.Join(root, "to-dir"), filepath.Join(root, "dangling"),
		filepath.Join(root, "loop1"), filepath.Join(root, "fifo")} {
		sameReadDir(t, &l, d)
	}
	for _, r := range []string{root, root + "/", filepath.Join(root, "a"), filepath.Join(root, "to-dir"), filepath.Join(root, "missing"),
		filepath.Join(root, "run.sh"), filepath.Join(root, "a", "..", "a")} {
		sameWalk(t, r)
	}
	if ents, err := l.readDir(filepath.Join(root, "big")); err != nil || len(ents) != 600 {
		t.Fatalf("big: %d entries, %v", len(ents), err)
	}
}
