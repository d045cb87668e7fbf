package trust

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// knownTree writes a small tree and returns the hashes of its files, as a
// writer that hashed them while writing would know them.
func knownTree(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	root := t.TempDir()
	files := map[string][]byte{
		".claude-plugin/plugin.json": []byte(`{"name":"k"}`),
		"commands/a.md":              []byte("a"),
		"deep/er/b.md":               []byte("b"),
		"bin/run":                    []byte("#!/bin/sh\n"),
	}
	for p, data := range files {
		mode := os.FileMode(0o644)
		if p == "bin/run" {
			mode = 0o755
		}
		writeFile(t, root, p, string(data), mode)
	}
	must(t, os.Symlink("commands/a.md", filepath.Join(root, "alias.md")))
	return root, files
}

func knownOf(files map[string][]byte) KnownHash {
	return func(path string, size int64) ([sha256.Size]byte, bool) {
		data, ok := files[path]
		if !ok {
			return [sha256.Size]byte{}, false
		}
		return sha256.Sum256(data), int64(len(data)) == size
	}
}

// DigestKnown gives Digest's tree — digest, entries, stats — whether it
// knows every file's hash, none, or a hash for a size the file no longer
// has (which it then reads).
func TestDigestKnownEqualsDigest(t *testing.T) {
	root, files := knownTree(t)
	plain, err := Digest(root)
	must(t, err)
	for name, known := range map[string]KnownHash{
		"all known":  knownOf(files),
		"none known": knownOf(nil),
		"nil":        nil,
		"stale size": knownOf(map[string][]byte{"commands/a.md": []byte("not a")}),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := DigestKnown(root, known)
			must(t, err)
			if got.Digest != plain.Digest {
				t.Fatalf("digest %s, want %s", got.Digest, plain.Digest)
			}
			if len(got.Entries) != len(plain.Entries) || len(got.Dirs) != len(plain.Dirs) {
				t.Fatalf("entries %d/%d dirs %d/%d", len(got.Entries), len(plain.Entries), len(got.Dirs), len(plain.Dirs))
			}
			for i := range got.Entries {
				if got.Entries[i] != plain.Entries[i] {
					t.Errorf("entry %d: %+v, want %+v", i, got.Entries[i], plain.Entries[i])
				}
			}
		})
	}
	// A hash known for the size the file has is the one taken (the file is
	// not read): the known hash decides, which is why only the writer of
	// the file may offer it.
	lied, err := DigestKnown(root, knownOf(map[string][]byte{"commands/a.md": []byte("X")}))
	must(t, err)
	if lied.Digest == plain.Digest {
		t.Fatal("a known hash of the same size is taken as the file's: the digest must differ from the tree's")
	}
}

// CheckIntegrityKnown passes what CheckIntegrity passes and fails what it
// fails, with CheckIntegrity's error.
func TestCheckIntegrityKnown(t *testing.T) {
	root, files := knownTree(t)
	id := plugin.MustParseID("k@m")
	plain, err := Digest(root)
	must(t, err)
	got, err := CheckIntegrityKnown(id, "1.0.0", plain.Digest, root, knownOf(files))
	if err != nil || got.Digest != plain.Digest {
		t.Fatalf("matching integrity: %v, %v", got, err)
	}
	other := "w1:" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	_, want := CheckIntegrity(id, "1.0.0", other, root)
	_, err = CheckIntegrityKnown(id, "1.0.0", other, root, knownOf(files))
	var me *MismatchError
	if want == nil || err == nil || !errors.As(err, &me) || err.Error() != want.Error() {
		t.Fatalf("mismatch: %v, want %v", err, want)
	}
	if _, err := CheckIntegrityKnown(id, "1.0.0", "sha256:nope", root, knownOf(files)); err == nil {
		t.Fatal("an integrity that is not a w1: digest passed")
	}
}
