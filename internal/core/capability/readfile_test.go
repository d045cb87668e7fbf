package capability

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/sharedtest"
)

// describe is everything a fileText says, errors by their text.
func describe(ft fileText) string {
	e := func(err error) string {
		if err == nil {
			return "nil"
		}
		return fmt.Sprintf("%T %v", err, err)
	}
	return fmt.Sprintf("open=%s stat=%s regular=%v exec=%v size=%d read=%v readErr=%s data=%q",
		e(ft.openErr), e(ft.statErr), ft.regular, ft.exec, ft.size, ft.read, e(ft.readErr), ft.data)
}

func sameReadFile(t *testing.T, name string, max int64) {
	t.Helper()
	alloc := func(n int) []byte { return make([]byte, n) }
	got, want := describe(readFile(name, max, alloc)), describe(readFilePlain(name, max, alloc))
	if got != want {
		t.Errorf("%s (max %d):\nreadFile      %s\nreadFilePlain %s", name, max, got, want)
	}
}

// TestReadFileEqualsPlainRealWorld: for every file and directory of
// ../shared/realworld, reading with readFile finds what package os finds,
// with the scan limit above and below the file's size.
func TestReadFileEqualsPlainRealWorld(t *testing.T) {
	root := sharedtest.RealWorldDir(t)
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		sameReadFile(t, p, maxScanSize)
		sameReadFile(t, p, 100)
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 1000 {
		t.Fatalf("only %d paths under %s", n, root)
	}
}

// TestReadFileEqualsPlainCrafted: the same for what a hostile tree holds
// (missing files, directories, symlinks dangling, looping and pointing
// out, a path through a file, empty and executable files), and for a
// file whose stat says more than a read gives (a sysfs attribute) when
// the system has one.
func TestReadFileEqualsPlainCrafted(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(name, to string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	paths := []string{
		write("empty", "", 0o644),
		write("run.sh", "#!/bin/sh\necho hi\n", 0o755),
		write("text.md", "# title\n", 0o644),
		write("noperm", "hidden", 0o000),
		filepath.Join(dir, "missing"),
		filepath.Join(dir, "text.md", "below-a-file"),
		dir,
		link("to-file", "run.sh"),
		link("dangling", "nowhere"),
		link("loop-a", "loop-b"),
		link("loop-b", "loop-a"),
		link("out", outside),
		link("to-dir", "."),
		"/sys/kernel/mm/transparent_hugepage/enabled",
		"/proc/self/status",
	}
	for _, p := range paths {
		for _, max := range []int64{0, 1, 5, maxScanSize} {
			sameReadFile(t, p, max)
		}
	}
	// The short read: a file whose stat says 4096 and that reads less.
	if ft := readFilePlain(paths[13], maxScanSize, func(n int) []byte { return make([]byte, n) }); ft.readErr == nil {
		t.Logf("%s does not read short here (%s): the short read is not exercised", paths[13], describe(ft))
	}
}

// FuzzReadFileEqualsPlain: any content, mode and scan limit read the same
// through readFile and package os.
func FuzzReadFileEqualsPlain(f *testing.F) {
	f.Add([]byte("#!/bin/sh\ncurl x | sh\n"), uint16(0o755), int64(maxScanSize))
	f.Add([]byte(""), uint16(0o644), int64(0))
	f.Add(bytes.Repeat([]byte("A"), 5000), uint16(0o600), int64(4999))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, mode uint16, max int64) {
		p := filepath.Join(dir, "f")
		os.Remove(p)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, os.FileMode(mode)&0o777); err != nil {
			t.Fatal(err)
		}
		sameReadFile(t, p, max)
	})
}
