package trust

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// trustErr asserts err is a trust-layer *plugin.Error whose message names want.
func trustErr(t *testing.T, err error, want ...string) *plugin.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one naming %q", want)
	}
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Layer != plugin.LayerTrust {
		t.Fatalf("error %v (%T) is not a trust-layer *plugin.Error", err, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	return pe
}

func TestDigestRefuses(t *testing.T) {
	cases := []struct {
		name  string
		build func(t *testing.T, root string)
		is    error
		names string
	}{
		{"symlink up and out", func(t *testing.T, root string) {
			must(t, os.Symlink("../../outside", filepath.Join(root, "cmd", "leak")))
		}, ErrSymlinkEscape, "cmd/leak"},
		{"absolute symlink", func(t *testing.T, root string) {
			must(t, os.Symlink("/etc/passwd", filepath.Join(root, "passwd")))
		}, ErrSymlinkEscape, "passwd"},
		{"absolute symlink back into the root", func(t *testing.T, root string) {
			must(t, os.Symlink(filepath.Join(root, "cmd", "a.md"), filepath.Join(root, "self")))
		}, ErrSymlinkEscape, "self"},
		{"escape through another symlink", func(t *testing.T, root string) {
			// lexically d/x/../.. stays inside, but x points at the root, so
			// the kernel resolves it to the root's parent
			must(t, os.MkdirAll(filepath.Join(root, "d"), 0o755))
			must(t, os.Symlink("..", filepath.Join(root, "d", "x")))
			must(t, os.Symlink("x/../..", filepath.Join(root, "d", "y")))
		}, ErrSymlinkEscape, "d/y"},
		{"symlink loop", func(t *testing.T, root string) {
			must(t, os.Symlink("b", filepath.Join(root, "a")))
			must(t, os.Symlink("a/x", filepath.Join(root, "b")))
		}, ErrSymlinkLoop, "a"},
		{"fifo", func(t *testing.T, root string) {
			if err := mkfifo(filepath.Join(root, "cmd", "pipe")); err != nil {
				t.Skip("a FIFO is refused on Unix only:", err)
			}
		}, ErrSpecialFile, "cmd/pipe"},
		{"newline in name", func(t *testing.T, root string) {
			writeFile(t, root, "bad\nname", "x", 0o644)
		}, ErrBadPath, `bad\nname`},
		{"carriage return in a directory name", func(t *testing.T, root string) {
			writeFile(t, root, "dir\r/file", "x", 0o644)
		}, ErrBadPath, `dir\r/file`},
		{"invalid UTF-8", func(t *testing.T, root string) {
			writeFile(t, root, "caf\xe9.md", "x", 0o644)
		}, ErrBadPath, `caf\xe9.md`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			writeFile(t, root, "cmd/a.md", "a", 0o644)
			c.build(t, root)
			_, err := Digest(root)
			pe := trustErr(t, err, c.names)
			if !errors.Is(err, c.is) {
				t.Errorf("error %v is not %v", err, c.is)
			}
			if pe.Type != plugin.TypeTrustRejected {
				t.Errorf("type %q, want %q", pe.Type, plugin.TypeTrustRejected)
			}
			if _, err := Fingerprint(root); !errors.Is(err, c.is) {
				t.Errorf("Fingerprint: %v, want %v", err, c.is)
			}
		})
	}
}

func TestDigestAllows(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "sub/deeper/file", "x", 0o644)
	must(t, os.Symlink("deeper/../../sub", filepath.Join(root, "sub", "up"))) // stays inside
	must(t, os.Symlink("sub/deeper", filepath.Join(root, "d")))               // a symlinked dir is not followed
	must(t, os.Symlink("d/../file-at-sub", filepath.Join(root, "via")))       // d/.. is sub: inside
	must(t, os.Symlink("not/there/yet", filepath.Join(root, "dangling")))     // dangling inside the root
	writeFile(t, root, ".git", "gitdir: ../.git/worktrees/p\n", 0o644)        // a .git *file* is content
	writeFile(t, root, SignaturesFile+"/inside", "a dir here is not skipped", 0o644)
	tree, err := Digest(root)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range tree.Entries {
		paths = append(paths, e.Path)
	}
	want := ".claude-plugin/wharf-signatures.json/inside .git d dangling sub/deeper/file sub/up via"
	if got := strings.Join(paths, " "); got != want {
		t.Errorf("entries %q, want %q", got, want)
	}
}

func TestDigestMissingRoot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	_, err := Digest(dir)
	pe := trustErr(t, err, dir)
	if pe.Type != plugin.TypeNotFound {
		t.Errorf("type %q, want %q", pe.Type, plugin.TypeNotFound)
	}
	f := filepath.Join(t.TempDir(), "file")
	must(t, os.WriteFile(f, nil, 0o644))
	trustErr(t, func() error { _, err := Digest(f); return err }(), "not a directory")
}

func TestDigestUnreadableFileNamed(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	root := t.TempDir()
	writeFile(t, root, "secret", "x", 0o000)
	_, err := Digest(root)
	trustErr(t, err, "secret")
}

func TestValidDigest(t *testing.T) {
	for s, want := range map[string]bool{
		"w1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=": true,
		"w1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU":  false, // padding required
		"w2:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=": false,
		"w1:AAAA": false,
		"":        false,
	} {
		if ValidDigest(s) != want {
			t.Errorf("ValidDigest(%q) = %v", s, !want)
		}
	}
}

// A file that changes between the walk and its hashing is refused, not
// hashed as whatever it became.
func TestDigestFileChangedWhileHashing(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(t *testing.T, p string)
	}{
		{"grew", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			f.WriteString("appended")
			f.Close()
		}},
		{"became a fifo", func(t *testing.T, p string) {
			must(t, os.Remove(p))
			if err := mkfifo(p); err != nil {
				t.Skip("a FIFO is refused on Unix only:", err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			writeFile(t, root, "commands/a.md", "a", 0o644)
			w, err := walk(root, false)
			must(t, err)
			c.change(t, filepath.Join(root, "commands", "a.md"))
			err = hashFiles(root, w.entries)
			trustErr(t, err, "commands/a.md")
			if !errors.Is(err, ErrChanged) {
				t.Errorf("%v is not ErrChanged", err)
			}
		})
	}
	t.Run("became a symlink", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, root, "a.md", "a", 0o644)
		writeFile(t, root, "b.md", "b", 0o644)
		w, err := walk(root, false)
		must(t, err)
		must(t, os.Remove(filepath.Join(root, "a.md")))
		must(t, os.Symlink("/etc/passwd", filepath.Join(root, "a.md")))
		err = hashFiles(root, w.entries)
		trustErr(t, err, "a.md") // O_NOFOLLOW: never read through it
	})
}
