package trust

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// A top-level .git directory is outside the digest, so an installed tree
// never has one: added later (to a tree without one, or inside one that
// was there when the fingerprint was taken), both the fingerprint and the
// full re-hash against the pin report it, though the digest is unchanged.
func TestUncoveredGitDirIsTampering(t *testing.T) {
	id := plugin.MustParseID("deploy@corp")
	for _, preexisting := range []bool{false, true} {
		root := makePlugin(t, t.TempDir(), 4)
		if preexisting {
			must(t, os.Mkdir(filepath.Join(root, ".git"), 0o755))
		}
		tree, err := Digest(root)
		must(t, err)
		pin := NewPin(id, "1.0.0", tree)
		if !preexisting {
			must(t, pin.CheckFast(root))
			if _, err := pin.Check(root); err != nil {
				t.Fatal(err)
			}
		}
		writeFile(t, root, ".git/run.sh", "echo unsigned\n", 0o755)
		after, err := Digest(root)
		must(t, err)
		if after.Digest != tree.Digest {
			t.Fatalf("the digest covers .git: %s -> %s", tree.Digest, after.Digest)
		}
		if got := Uncovered(root); !slices.Equal(got, []string{".git"}) {
			t.Fatalf("Uncovered = %q", got)
		}
		err = pin.CheckFast(root)
		trustErr(t, err, "deploy@corp 1.0.0", ".git (added)")
		var fe *FingerprintError
		if !errors.As(err, &fe) || !slices.Equal(fe.Paths(), []string{".git"}) {
			t.Fatalf("fingerprint (preexisting %v): %v; want only .git added", preexisting, err)
		}
		_, err = pin.Check(root)
		trustErr(t, err, "deploy@corp 1.0.0", ".git (added)")
		if !errors.As(err, &fe) {
			t.Fatalf("pin check: %v is not a *FingerprintError", err)
		}
	}
	// A .git below the top is covered by the digest like any directory.
	root := makePlugin(t, t.TempDir(), 4)
	writeFile(t, root, "vendor/.git/x", "covered", 0o644)
	if got := Uncovered(root); got != nil {
		t.Fatalf("Uncovered = %q for a nested .git", got)
	}
}
