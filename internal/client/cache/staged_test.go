package cache

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

var stagedTree = map[string]string{
	".claude-plugin/plugin.json": `{"name":"st"}`,
	"commands/a.md":              "a",
	"skills/s/deep/SKILL.md":     "skill",
	"bin/run*":                   "#!/bin/sh\n",
	"alias.md":                   "->commands/a.md",
}

// stage fills a StageDir of c with stagedTree, plus extra, and seals it
// (read-only and durable, as a durable read-only fetch leaves it) when
// asked.
func stage(t *testing.T, c *Cache, id plugin.ID, extra map[string]string, seal bool) string {
	t.Helper()
	dir, err := c.StageDir(id, "stage")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []map[string]string{stagedTree, extra} {
		if err := files(m)(bg, dir); err != nil {
			t.Fatal(err)
		}
	}
	if seal {
		if err := atomicfile.SealTree(dir); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A version taken from a staged tree is the version a plain fill of the
// same files makes: same digest, same fingerprint paths, kinds and modes,
// read-only; the staged directory is gone (renamed into place), whether it
// came sealed or not, with the hashes its writer knew or without, with a
// signatures file to rewrite or a .git directory to drop.
func TestEnsureStagedEqualsFill(t *testing.T) {
	id := plugin.MustParseID("st@corp")
	plain, err := newCache(t, Options{}).Materialize(bg, id, "1.0.0", files(stagedTree))
	if err != nil {
		t.Fatal(err)
	}
	known := func(path string, size int64) ([sha256.Size]byte, bool) {
		for name, content := range stagedTree {
			if filepath.ToSlash(name) == path || name == path+"*" {
				return sha256.Sum256([]byte(content)), int64(len(content)) == size
			}
		}
		return [sha256.Size]byte{}, false
	}
	for _, tc := range []struct {
		name  string
		extra map[string]string
		seal  bool
		known trust.KnownHash
	}{
		{name: "sealed", seal: true},
		{name: "sealed, hashes known", seal: true, known: known},
		{name: "writable", seal: false},
		{name: "signatures to rewrite", extra: map[string]string{trust.SignaturesFile: "#!/bin/sh\nnot signatures\n"}, seal: true},
		{name: "git dir to drop", extra: map[string]string{".git/config": "x"}, seal: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache(t, Options{})
			dir := stage(t, c, id, tc.extra, tc.seal)
			v, err := c.Ensure(bg, Request{ID: id, Version: "1.0.0", Digest: plain.Digest, Staged: dir, Known: tc.known})
			if err != nil {
				t.Fatal(err)
			}
			if v.Digest != plain.Digest || v.Origin != "fill" {
				t.Fatalf("digest %s origin %s, want %s fill", v.Digest, v.Origin, plain.Digest)
			}
			if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("staged directory still there: %v", err)
			}
			if len(v.FP.Entries) != len(plain.FP.Entries) {
				t.Fatalf("fingerprint of %d paths, want %d", len(v.FP.Entries), len(plain.FP.Entries))
			}
			for i, e := range v.FP.Entries {
				p := plain.FP.Entries[i]
				if e.Path != p.Path || e.Kind != p.Kind || e.Mode != p.Mode || e.Size != p.Size || e.Hash != p.Hash {
					t.Errorf("fingerprint %+v, want %+v", e, p)
				}
			}
			if err := trust.CheckFingerprint(v.Path, v.FP); err != nil {
				t.Errorf("the recorded fingerprint fails: %v", err)
			}
			if got, err := trust.Digest(v.Path); err != nil || got.Digest != plain.Digest {
				t.Errorf("version dir digest %v %v", got, err)
			}
		})
	}
}

// A staged tree that is not what was asked for is removed, and no version
// directory appears; a directory that is not a staging directory of the
// plugin is refused and left alone.
func TestEnsureStagedRefused(t *testing.T) {
	id := plugin.MustParseID("st@corp")
	c := newCache(t, Options{})
	dir := stage(t, c, id, nil, true)
	other := trust.DigestPrefix + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	if _, err := c.Ensure(bg, Request{ID: id, Version: "1.0.0", Digest: other, Staged: dir}); err == nil {
		t.Fatal("a staged tree with another digest was taken")
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused staged tree is still there: %v", err)
	}
	final, _ := c.Dir(id, "1.0.0")
	if _, err := os.Lstat(final); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a version directory appeared: %v", err)
	}

	elsewhere := t.TempDir()
	_, err := c.Ensure(bg, Request{ID: id, Version: "1.0.0", Staged: elsewhere})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("a directory outside the cache as staged tree: %v, want ErrInvalid", err)
	}
	if _, err := os.Lstat(elsewhere); err != nil {
		t.Errorf("the directory that is not a staging directory was removed: %v", err)
	}
}
