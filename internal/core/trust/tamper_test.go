package trust

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/plugin"
)

// Each tamper is detected by the full re-hash against the pin and, when
// stat-visible, by the fingerprint, and both name the changed path.
func TestTamper(t *testing.T) {
	cases := []struct {
		name    string
		tamper  func(t *testing.T, root string)
		path    string
		what    string // the fingerprint's kind of change
		statHit bool   // visible to the fingerprint
	}{
		{"modify one byte", func(t *testing.T, root string) {
			p := filepath.Join(root, "commands", "c03.md")
			b, _ := os.ReadFile(p)
			b[len(b)-2] ^= 1
			must(t, os.WriteFile(p, b, 0o644))
		}, "commands/c03.md", "modified", true},
		{"flip the executable bit", func(t *testing.T, root string) {
			must(t, os.Chmod(filepath.Join(root, "bin", "run"), 0o644))
		}, "bin/run", "mode", true},
		{"add a file", func(t *testing.T, root string) {
			writeFile(t, root, "commands/evil.md", "rm -rf ~", 0o644)
		}, "commands/evil.md", "added", true},
		{"add a file at the root", func(t *testing.T, root string) {
			writeFile(t, root, ".mcp.json", `{"mcpServers":{}}`, 0o644)
		}, ".mcp.json", "added", true},
		{"remove a file", func(t *testing.T, root string) {
			must(t, os.Remove(filepath.Join(root, "commands", "c01.md")))
		}, "commands/c01.md", "removed", true},
		{"replace a file by a symlink", func(t *testing.T, root string) {
			p := filepath.Join(root, ".claude-plugin", "plugin.json")
			must(t, os.Remove(p))
			must(t, os.Symlink("../commands/c00.md", p))
		}, ".claude-plugin/plugin.json", "kind", true},
		{"modify one byte and restore the mtime", func(t *testing.T, root string) {
			p := filepath.Join(root, "commands", "c02.md")
			fi, _ := os.Stat(p)
			b, _ := os.ReadFile(p)
			b[0] ^= 1
			must(t, os.WriteFile(p, b, 0o644))
			must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
		}, "commands/c02.md", "modified", runtime.GOOS == "linux"}, // the ctime moved
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := makePlugin(t, t.TempDir(), 10)
			tree, err := Digest(root)
			if err != nil {
				t.Fatal(err)
			}
			id := plugin.MustParseID("deploy@corp")
			pin := NewPin(id, "1.2.0", tree)
			if err := pin.CheckFast(root); err != nil {
				t.Fatalf("untouched tree fails the fingerprint: %v", err)
			}
			if _, err := pin.Check(root); err != nil {
				t.Fatalf("untouched tree fails the pin: %v", err)
			}

			c.tamper(t, root)

			// full re-hash
			_, err = pin.Check(root)
			pe := trustErr(t, err, "deploy@corp 1.2.0", tree.Digest, c.path)
			if pe.Type != plugin.TypeTrustRejected {
				t.Errorf("type %q", pe.Type)
			}
			var me *MismatchError
			if !errors.As(err, &me) {
				t.Fatalf("%v is not a *MismatchError", err)
			}
			if me.Expected != tree.Digest || me.Actual == tree.Digest || !ValidDigest(me.Actual) {
				t.Errorf("expected %s actual %s", me.Expected, me.Actual)
			}
			if !slices.Equal(me.Changed, []string{c.path}) {
				t.Errorf("changed %q, want [%s]", me.Changed, c.path)
			}
			if !strings.Contains(err.Error(), me.Actual) {
				t.Errorf("message %q lacks the actual digest", err)
			}

			// fingerprint
			err = pin.CheckFast(root)
			if !c.statHit {
				if err != nil {
					t.Fatalf("without ctimes a same-size edit with the mtime restored is invisible to stat; got %v", err)
				}
				return
			}
			trustErr(t, err, "deploy@corp", c.path)
			var fe *FingerprintError
			if !errors.As(err, &fe) {
				t.Fatalf("%v is not a *FingerprintError", err)
			}
			if !slices.Contains(fe.Changed, Change{c.path, c.what}) {
				t.Errorf("fingerprint changes %v lack %s (%s)", fe.Changed, c.path, c.what)
			}
		})
	}
}

// Writing the detached signatures file into a tree changes neither its
// digest nor its fingerprint verdict.
func TestSigningLeavesDigestAndFingerprint(t *testing.T) {
	root := makePlugin(t, t.TempDir(), 5)
	tree, err := Digest(root)
	must(t, err)
	fp := tree.Fingerprint()
	must(t, AddSignature(root, Signature{KeyID: "0123456789abcdef", Sig: "AAAA"}))
	after, err := Digest(root)
	must(t, err)
	if after.Digest != tree.Digest {
		t.Errorf("digest moved from %s to %s after writing %s", tree.Digest, after.Digest, SignaturesFile)
	}
	if err := CheckFingerprint(root, fp); err != nil {
		t.Errorf("fingerprint: %v", err)
	}
}

func TestFingerprintStatOnlyMatchesTree(t *testing.T) {
	root := makePlugin(t, t.TempDir(), 8)
	fp, err := Fingerprint(root)
	must(t, err)
	tree, err := Digest(root)
	must(t, err)
	tfp := tree.Fingerprint()
	if len(fp.Entries) != len(tfp.Entries) {
		t.Fatalf("%d entries stat-only, %d from the tree", len(fp.Entries), len(tfp.Entries))
	}
	for i := range fp.Entries {
		a, b := fp.Entries[i], tfp.Entries[i]
		b.Hash = ""
		if a != b {
			t.Errorf("entry %d: %+v vs %+v", i, a, b)
		}
		if a.Hash != "" {
			t.Errorf("stat-only fingerprint carries a hash for %s", a.Path)
		}
	}
	must(t, CheckFingerprint(root, fp))
	// a stat-only fingerprint still names changes
	must(t, os.Chmod(filepath.Join(root, "bin", "run"), 0o600))
	trustErr(t, CheckFingerprint(root, fp), "bin/run (mode)")
}

func TestFingerprintRemovedDirectory(t *testing.T) {
	root := makePlugin(t, t.TempDir(), 6)
	fp, err := Fingerprint(root)
	must(t, err)
	must(t, os.RemoveAll(filepath.Join(root, "commands")))
	err = CheckFingerprint(root, fp)
	trustErr(t, err, "commands (removed)", "commands/c00.md (removed)")
}

func TestFingerprintNoneRecorded(t *testing.T) {
	root := makePlugin(t, t.TempDir(), 3)
	trustErr(t, CheckFingerprint(root, FP{}), "no fingerprint was recorded")
}

// A directory whose mtime moved without a change in what the digest covers
// (a file created and deleted) passes.
func TestFingerprintDirTouchedOnly(t *testing.T) {
	root := makePlugin(t, t.TempDir(), 4)
	fp, err := Fingerprint(root)
	must(t, err)
	writeFile(t, root, "commands/tmp", "x", 0o644)
	must(t, os.Remove(filepath.Join(root, "commands", "tmp")))
	now := time.Now()
	must(t, os.Chtimes(filepath.Join(root, "commands"), now, now))
	if err := CheckFingerprint(root, fp); err != nil {
		t.Errorf("%v", err)
	}
}

func TestCheckPinWithoutFileList(t *testing.T) {
	root := makePlugin(t, t.TempDir(), 4)
	tree, err := Digest(root)
	must(t, err)
	id := plugin.MustParseID("deploy@corp")
	must(t, CheckPin(id, "1.0.0", tree.Digest, root))
	writeFile(t, root, "commands/c00.md", "changed", 0o644)
	err = CheckPin(id, "1.0.0", tree.Digest, root)
	trustErr(t, err, "deploy@corp 1.0.0", "does not match the pinned digest "+tree.Digest)
	var me *MismatchError
	if !errors.As(err, &me) || len(me.Changed) != 0 {
		t.Errorf("without a recorded file list nothing can be named: %v", err)
	}
}

func TestCheckIntegrity(t *testing.T) {
	root := makePlugin(t, t.TempDir(), 4)
	tree, err := Digest(root)
	must(t, err)
	id := plugin.MustParseID("deploy@corp")
	if _, err := CheckIntegrity(id, "1.0.0", tree.Digest, root); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckIntegrity(id, "1.0.0", "", root); err != nil {
		t.Fatalf("no integrity published: %v", err)
	}
	other := "w1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
	_, err = CheckIntegrity(id, "1.0.0", other, root)
	pe := trustErr(t, err, "marketplace integrity digest "+other, tree.Digest)
	if !strings.Contains(pe.Hint, "wharf marketplace update corp") {
		t.Errorf("hint %q does not say how to refresh the marketplace", pe.Hint)
	}
	_, err = CheckIntegrity(id, "1.0.0", "sha256:abc", root)
	trustErr(t, err, `"sha256:abc" is not a w1: digest`)
}

func TestDiff(t *testing.T) {
	a := &Tree{Entries: []Entry{{Path: "a", Kind: KindFile}, {Path: "b", Kind: KindFile, Hash: [32]byte{1}}, {Path: "c", Kind: KindFile}, {Path: "e", Kind: KindFile}}}
	b := &Tree{Entries: []Entry{{Path: "b", Kind: KindFile, Hash: [32]byte{2}}, {Path: "c", Kind: KindExec}, {Path: "d", Kind: KindFile}, {Path: "e", Kind: KindSymlink}}}
	got := DiffDetail(a, b)
	want := []Change{{"a", "removed"}, {"b", "modified"}, {"c", "mode"}, {"d", "added"}, {"e", "kind"}}
	if !slices.Equal(got, want) {
		t.Errorf("DiffDetail = %v, want %v", got, want)
	}
	if d := Diff(a, a); len(d) != 0 {
		t.Errorf("Diff of a tree with itself: %v", d)
	}
	if d := Diff(nil, b); !slices.Equal(d, []string{"b", "c", "d", "e"}) {
		t.Errorf("Diff(nil, b) = %v", d)
	}
}

func TestCheckFingerprintsMany(t *testing.T) {
	base := t.TempDir()
	var checks []FPCheck
	for i := range 5 {
		root := makePlugin(t, filepath.Join(base, string(rune('a'+i))), 4)
		fp, err := Fingerprint(root)
		must(t, err)
		checks = append(checks, FPCheck{root, fp})
	}
	writeFile(t, checks[3].Root, "commands/new.md", "x", 0o644)
	errs := CheckFingerprints(checks)
	for i, err := range errs {
		if i == 3 {
			trustErr(t, err, checks[3].Root, "commands/new.md (added)")
		} else if err != nil {
			t.Errorf("%d: %v", i, err)
		}
	}
}

func TestFingerprintRootGone(t *testing.T) {
	root := makePlugin(t, filepath.Join(t.TempDir(), "p"), 3)
	fp, err := Fingerprint(root)
	must(t, err)
	must(t, os.RemoveAll(root))
	pe := trustErr(t, CheckFingerprint(root, fp), root)
	if pe.Type != plugin.TypeNotFound {
		t.Errorf("type %q, want %q", pe.Type, plugin.TypeNotFound)
	}
}

// The fingerprint survives the registry's JSON round trip unchanged.
func TestFingerprintJSON(t *testing.T) {
	root := makePlugin(t, t.TempDir(), 4)
	tree, err := Digest(root)
	must(t, err)
	pin := NewPin(plugin.MustParseID("deploy@corp"), "1.0.0", tree)
	b, err := json.Marshal(pin)
	must(t, err)
	var back Pin
	must(t, json.Unmarshal(b, &back))
	if !reflect.DeepEqual(back, pin) {
		t.Fatalf("round trip changed the pin:\n%+v\n%+v", pin, back)
	}
	must(t, back.CheckFast(root))
	if _, err := back.Check(root); err != nil {
		t.Fatal(err)
	}
}

// The check stats each recorded path through a reused buffer; a path longer
// than the buffer is stat'ed the ordinary way and still caught when it
// changes, and a recorded path with a NUL byte (a corrupt registry) never
// matches the file its first part names.
func TestFingerprintPathForms(t *testing.T) {
	root := makePlugin(t, t.TempDir(), 4)
	long := strings.Repeat("d", 200) + "/" + strings.Repeat("e", 200) + "/" + strings.Repeat("f", 200) + ".md"
	writeFile(t, root, long, "long", 0o644)
	fp, err := Fingerprint(root)
	must(t, err)
	if err := CheckFingerprint(root, fp); err != nil {
		t.Fatalf("untouched tree: %v", err)
	}
	must(t, os.WriteFile(filepath.Join(root, long), []byte("LONG"), 0o644))
	must(t, os.Chtimes(filepath.Join(root, long), time.Unix(1, 0), time.Unix(1, 0)))
	var fe *FingerprintError
	if err := CheckFingerprint(root, fp); !errors.As(err, &fe) || !slices.Contains(fe.Changed, Change{long, "modified"}) {
		t.Fatalf("a changed file with a %d-byte path: %v, want it named modified", len(long), err)
	}

	root = makePlugin(t, t.TempDir(), 4)
	fp, err = Fingerprint(root)
	must(t, err)
	for i, e := range fp.Entries {
		if e.Path == "commands/c00.md" {
			fp.Entries[i].Path += "\x00/../../evil"
		}
	}
	if err := CheckFingerprint(root, fp); err == nil {
		t.Fatal("a recorded path with a NUL byte matched the file before the NUL")
	}
}

// Moving a file's times without changing its content (touch, chown, a
// restore from backup, the same bytes written again) is not a tamper: the
// fingerprint re-hashes that file and accepts it.
func TestFingerprintAcceptsTimesMovedWithSameContent(t *testing.T) {
	root := makePlugin(t, t.TempDir(), 10)
	tree, err := Digest(root)
	if err != nil {
		t.Fatal(err)
	}
	pin := NewPin(plugin.MustParseID("deploy@corp"), "1.2.0", tree)
	p := filepath.Join(root, "commands", "c04.md")
	later := time.Now().Add(time.Hour)
	must(t, os.Chtimes(p, later, later))
	same := filepath.Join(root, "commands", "c05.md")
	b, err := os.ReadFile(same)
	must(t, err)
	must(t, os.WriteFile(same, b, 0o644)) // the same bytes written again
	if err := pin.CheckFast(root); err != nil {
		t.Fatalf("times moved, content unchanged: %v", err)
	}
	// The same check still refuses a real edit next to them.
	b, err = os.ReadFile(p)
	must(t, err)
	b[0] ^= 1
	must(t, os.WriteFile(p, b, 0o644))
	err = pin.CheckFast(root)
	var fe *FingerprintError
	if !errors.As(err, &fe) || !slices.Equal(fe.Paths(), []string{"commands/c04.md"}) {
		t.Fatalf("edit after a touch: %v", err)
	}
}
