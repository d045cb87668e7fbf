package trust

import (
	"crypto/sha256"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func fixtures(t *testing.T) []string {
	files, err := filepath.Glob("testdata/trees/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixture trees: %v", err)
	}
	return files
}

// The golden digests are checked in: the same tree gives the same digest on
// any machine, whatever the umask, creation order and mtimes.
func TestDigestGolden(t *testing.T) {
	for _, file := range fixtures(t) {
		entries, golden := parseFixture(t, file)
		t.Run(filepath.Base(file), func(t *testing.T) {
			if !ValidDigest(golden) {
				t.Fatalf("%s: golden digest %q is not a w1: digest", file, golden)
			}
			for _, v := range []struct {
				name  string
				umask int
				o     buildOpts
			}{
				{"umask022", 0o022, buildOpts{}},
				{"umask077-reversed", 0o077, buildOpts{reverse: true, seed: 1}},
				{"umask000-shuffled-mtimes", 0o000, buildOpts{seed: 99}},
			} {
				old := umask(v.umask)
				dir := t.TempDir()
				buildTree(t, dir, entries, v.o)
				umask(old)
				tree, err := Digest(dir)
				if err != nil {
					t.Fatalf("%s: %v", v.name, err)
				}
				if tree.Digest != golden {
					t.Errorf("%s: digest %s, golden %s", v.name, tree.Digest, golden)
				}
			}
		})
	}
}

func TestDigestLineEndsMatter(t *testing.T) {
	_, lf := parseFixture(t, "testdata/trees/lf.txtar")
	_, crlf := parseFixture(t, "testdata/trees/crlf.txtar")
	if lf == crlf {
		t.Fatalf("LF and CRLF trees have the same golden digest %s", lf)
	}
}

// The digest is what docs/w1digest.py computes, on every fixture and on
// a generated tree.
func TestDigestMatchesPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	script := filepath.Join("..", "..", "..", "docs", "w1digest.py")
	var dirs []string
	for _, file := range fixtures(t) {
		entries, _ := parseFixture(t, file)
		dir := t.TempDir()
		buildTree(t, dir, entries, buildOpts{})
		dirs = append(dirs, dir)
	}
	dirs = append(dirs, makePlugin(t, t.TempDir(), 40))
	// one python3 run for every tree: its startup dominates
	out, err := exec.Command(py, append([]string{script}, dirs...)...).Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	got := strings.Fields(string(out))
	if len(got) != len(dirs) {
		t.Fatalf("%d digests for %d trees: %q", len(got), len(dirs), got)
	}
	for i, dir := range dirs {
		tree, err := Digest(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got[i] != tree.Digest {
			t.Errorf("%s: python %s, Go %s", dir, got[i], tree.Digest)
		}
	}
}

// python3 docs/w1digest.py refuses what Digest refuses.
func TestPythonRefusesEscape(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	dir := t.TempDir()
	writeFile(t, dir, "a.md", "a", 0o644)
	must(t, os.Symlink("../../etc/passwd", filepath.Join(dir, "leak")))
	out, err := exec.Command(py, filepath.Join("..", "..", "..", "docs", "w1digest.py"), dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "outside the plugin root") {
		t.Fatalf("python accepted an escaping symlink: %v %s", err, out)
	}
	if _, err := Digest(dir); err == nil {
		t.Fatal("Digest accepted an escaping symlink")
	}
}

// The canonical lines of basic.txtar are checked in too, so a change in the
// line format shows exactly which line moved; hashing the file gives the digest.
func TestDigestLinesGolden(t *testing.T) {
	entries, golden := parseFixture(t, "testdata/trees/basic.txtar")
	dir := t.TempDir()
	buildTree(t, dir, entries, buildOpts{})
	tree, err := Digest(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/trees/basic.lines")
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, e := range tree.Entries {
		got.WriteString(e.Line() + "\n")
	}
	if got.String() != string(want) {
		t.Errorf("lines differ from testdata/trees/basic.lines:\ngot:\n%s\nwant:\n%s", got.String(), want)
	}
	sum := sha256.Sum256(want)
	if d := DigestPrefix + base64.StdEncoding.EncodeToString(sum[:]); d != golden {
		t.Errorf("sha256 of basic.lines gives %s, golden is %s", d, golden)
	}
}

// The short Python function shown in docs/trust.md computes the same digest
// as Digest on the fixture trees, so the documentation stays true.
func TestDocSnippetMatches(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "trust.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```python\n")
	code, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/trust.md has no python code block")
	}
	script := filepath.Join(t.TempDir(), "snippet.py")
	must(t, os.WriteFile(script, []byte(code+"\nimport sys\nfor d in sys.argv[1:]:\n    print(w1(d))\n"), 0o644))
	files := fixtures(t)
	var dirs, goldens []string
	for _, file := range files {
		entries, golden := parseFixture(t, file)
		dir := t.TempDir()
		buildTree(t, dir, entries, buildOpts{})
		dirs, goldens = append(dirs, dir), append(goldens, golden)
	}
	out, err := exec.Command(py, append([]string{script}, dirs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := strings.Fields(string(out))
	if len(got) != len(dirs) {
		t.Fatalf("%d digests for %d trees: %q", len(got), len(dirs), got)
	}
	for i := range dirs {
		if got[i] != goldens[i] {
			t.Errorf("%s: the docs' snippet gives %s, golden %s", files[i], got[i], goldens[i])
		}
	}
}
