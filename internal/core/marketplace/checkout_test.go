package marketplace

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/wharfhq/wharf/plugin"
)

// workTree is what a checkout leaves on disk, .git aside: per path, its
// kind, permission bits and content (a link's target).
func workTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if rel == ".git" {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link " + target
		case fi.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fi.Mode().Perm().String() + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// indexOf is the index of the clone at dir as git compares it: path,
// hash, mode and size.
func indexOf(t *testing.T, dir string) []string {
	t.Helper()
	r, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := r.Storer.Index()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range idx.Entries {
		out = append(out, e.Name+" "+e.Hash.String()+" "+e.Mode.String()+" "+time.Duration(e.Size).String())
	}
	sort.Strings(out)
	return out
}

func assertClean(t *testing.T, dir string) {
	t.Helper()
	r, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	st, err := wt.Status()
	if err != nil {
		t.Fatal(err)
	}
	if !st.IsClean() {
		t.Fatalf("%s is not clean after the checkout:\n%s", dir, st)
	}
}

// plainClone is go-git's own shallow clone and checkout of url into a new
// directory.
func plainClone(t *testing.T, url string) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := git.PlainClone(dir, false, &git.CloneOptions{URL: url, Depth: 1, SingleBranch: true, Tags: git.NoTags}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func assertSameCheckout(t *testing.T, fast, plain string) {
	t.Helper()
	fw, pw := workTree(t, fast), workTree(t, plain)
	if len(fw) != len(pw) {
		t.Errorf("checkout has %d paths, go-git's %d", len(fw), len(pw))
	}
	for p, want := range pw {
		if got, ok := fw[p]; !ok {
			t.Errorf("%s: missing (go-git: %.40q)", p, want)
		} else if got != want {
			t.Errorf("%s: %.60q, go-git: %.60q", p, got, want)
		}
	}
	for p := range fw {
		if _, ok := pw[p]; !ok {
			t.Errorf("%s: not in go-git's checkout", p)
		}
	}
	fi, pi := indexOf(t, fast), indexOf(t, plain)
	if strings.Join(fi, "\n") != strings.Join(pi, "\n") {
		t.Errorf("index differs from go-git's:\n%s\n--- go-git:\n%s", strings.Join(fi, "\n"), strings.Join(pi, "\n"))
	}
	assertClean(t, fast)
}

// trickyRepo is a marketplace repository of what a checkout can get
// wrong: an executable, a link, empty and 3 MiB files, a non-ASCII name,
// many directories, similar files (deltas in the pack) and a submodule
// entry. Its large file was edited in a second commit.
func trickyRepo(t *testing.T) *gitRepo {
	t.Helper()
	files := marketFiles("mk", "a", "b")
	big := bytes.Repeat([]byte("large line of a plugin's bundled data\n"), (3<<20)/38)
	files["plugins/a/data/big.txt"] = string(big)
	files["plugins/a/empty"] = ""
	files["plugins/b/skills/ünïcode ß/SKILL.md"] = "---\nname: u\n---\n"
	for i := 0; i < 40; i++ {
		files[filepath.ToSlash(filepath.Join("plugins/b/commands", strings.Repeat("d", i%5+1), "c"+string(rune('a'+i%26))+".md"))] = strings.Repeat("x", i*100)
	}
	repo := newGitRepo(t, files)
	if err := os.WriteFile(filepath.Join(repo.dir, "plugins/a/run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../a/data/big.txt", filepath.Join(repo.dir, "plugins/b/link")); err != nil {
		t.Fatal(err)
	}
	repo.git("add", "-A")
	repo.git("update-index", "--add", "--cacheinfo", "160000,"+repo.git("rev-parse", "HEAD")+",vendor/sub")
	repo.git("commit", "-q", "-m", "exec, link, submodule")
	// A second commit changing the large file a little, so that the pack
	// holds it as a delta.
	repo.commit("edit", map[string]string{"plugins/a/data/big.txt": string(big) + "one more line\n"})

	return repo
}

// TestCheckoutEqualsGoGitCheckout: the checkout of a new clone leaves what
// go-git's checkout leaves (files, modes, links, empty and large files, a
// submodule, many directories) and the same index, and an update after
// every kind of change upstream still equals a fresh go-git clone.
func TestCheckoutEqualsGoGitCheckout(t *testing.T) {
	repo := trickyRepo(t)
	m, _ := newTestManager(t, Options{})
	k, err := m.Add(context.Background(), gitSource(t, repo.url()), "")
	if err != nil {
		t.Fatal(err)
	}
	assertSameCheckout(t, k.InstallLocation, plainClone(t, repo.url()))

	// Upstream: modify, delete, add, make executable, replace a file by a
	// directory and a link by a file.
	repo.commit("change", map[string]string{
		"plugins/a/commands/a.md": "changed\n",
		"plugins/new/x.md":        "new\n",
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Remove(filepath.Join(repo.dir, "plugins/a/empty")))
	must(os.Chmod(filepath.Join(repo.dir, "plugins/a/commands/a.md"), 0o755))
	must(os.Remove(filepath.Join(repo.dir, "plugins/b/link")))
	must(os.WriteFile(filepath.Join(repo.dir, "plugins/b/link"), []byte("now a file\n"), 0o644))
	repo.git("add", "-A")
	repo.git("commit", "-q", "-m", "more")
	if _, err := m.Update(context.Background(), "mk"); err != nil {
		t.Fatal(err)
	}
	assertSameCheckout(t, k.InstallLocation, plainClone(t, repo.url()))

	// A pinned commit is checked out the same way.
	sha := repo.git("rev-parse", "HEAD~1")
	m2, _ := newTestManager(t, Options{})
	k2, err := m2.Add(context.Background(), gitSource(t, repo.url()+"#"+sha), "pinned")
	if err != nil {
		t.Fatal(err)
	}
	plain := t.TempDir()
	r, err := git.PlainClone(plain, false, &git.CloneOptions{URL: repo.url(), NoCheckout: true})
	must(err)
	wt, err := r.Worktree()
	must(err)
	must(wt.Checkout(&git.CheckoutOptions{Hash: plumbing.NewHash(sha), Force: true}))
	assertSameCheckout(t, k2.InstallLocation, plain)
}

// hostileRepo is a bare repository whose main branch is one commit of the
// tree entries given (built object by object, as an attacker would).
func hostileRepo(t *testing.T, entries []object.TreeEntry, sub []object.TreeEntry) string {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainInit(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Storer
	blob := func(content string) plumbing.Hash {
		o := s.NewEncodedObject()
		o.SetType(plumbing.BlobObject)
		w, _ := o.Writer()
		_, _ = w.Write([]byte(content))
		_ = w.Close()
		h, err := s.SetEncodedObject(o)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	var tree func(es []object.TreeEntry) plumbing.Hash
	tree = func(es []object.TreeEntry) plumbing.Hash {
		for i := range es {
			switch {
			case !es[i].Hash.IsZero():
			case es[i].Mode == filemode.Dir:
				es[i].Hash = tree([]object.TreeEntry{{Name: "config", Mode: filemode.Regular}})
			default:
				es[i].Hash = blob("content of " + es[i].Name)
			}
		}
		o := s.NewEncodedObject()
		if err := (&object.Tree{Entries: es}).Encode(o); err != nil {
			t.Fatal(err)
		}
		h, err := s.SetEncodedObject(o)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	for i := range entries {
		if entries[i].Mode == filemode.Dir {
			entries[i].Hash = tree(sub)
		}
	}
	entries = append(entries, object.TreeEntry{Name: ".claude-plugin", Mode: filemode.Dir,
		Hash: tree([]object.TreeEntry{{Name: "marketplace.json", Mode: filemode.Regular, Hash: blob(manifestJSON("evil"))}})})
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	root := tree(entries)
	sig := object.Signature{Name: "x", Email: "x@example.com", When: time.Unix(1700000000, 0)}
	c := &object.Commit{Author: sig, Committer: sig, Message: "x", TreeHash: root}
	o := s.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		t.Fatal(err)
	}
	ch, err := s.SetEncodedObject(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetReference(plumbing.NewHashReference("refs/heads/main", ch)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, "refs/heads/main")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// unsafeTree is a repository tree a checkout must refuse: its root
// entries, the entries of each directory among them, and the path the
// error names.
type unsafeTree struct {
	name    string
	entries []object.TreeEntry
	sub     []object.TreeEntry
	path    string
}

// unsafeTrees are the trees TestCheckoutRefusesUnsafeTreePaths and
// TestUpdateRefusesUnsafeTreePaths offer.
func unsafeTrees() []unsafeTree {
	file := func(name string) object.TreeEntry { return object.TreeEntry{Name: name, Mode: filemode.Regular} }
	dir := func(name string) object.TreeEntry { return object.TreeEntry{Name: name, Mode: filemode.Dir} }
	return []unsafeTree{
		{"dot git dir", []object.TreeEntry{dir(".git")}, []object.TreeEntry{file("config")}, ".git"},
		{"upper-case dot git", []object.TreeEntry{dir(".GIT")}, []object.TreeEntry{file("config")}, ".GIT"},
		{"NTFS short name", []object.TreeEntry{dir("git~1")}, []object.TreeEntry{file("config")}, "git~1"},
		{"NTFS trailing dot", []object.TreeEntry{dir(".git.")}, []object.TreeEntry{file("config")}, ".git."},
		{"HFS ignorable", []object.TreeEntry{dir(".g\u200cit")}, []object.TreeEntry{file("config")}, ".g\u200cit"},
		{"nested dot git", []object.TreeEntry{dir("plugins")}, []object.TreeEntry{dir(".git")}, "plugins/.git"},
		{"dot dot", []object.TreeEntry{dir("..")}, []object.TreeEntry{file("escaped")}, ".."},
		{"device name", []object.TreeEntry{file("con.md")}, nil, "con.md"},
		{"control character", []object.TreeEntry{file("a\x1bb")}, nil, "a\x1bb"},
		{"backslash", []object.TreeEntry{file(`..\escaped`)}, nil, `..\escaped`},
		{"twice", []object.TreeEntry{file("twice"), file("twice")}, nil, "twice"},
		{"gitmodules link", []object.TreeEntry{{Name: ".gitmodules", Mode: filemode.Symlink}}, nil, ".gitmodules"},
	}
}

// TestCheckoutRefusesUnsafeTreePaths: a repository whose tree names a
// path git must not write (.git and what filesystems take for it, "..",
// a device name, a name given twice, a .gitmodules link) is refused with
// ErrUnsafeTreePath naming the path, and nothing is left behind: no
// clone, no file outside it.
func TestCheckoutRefusesUnsafeTreePaths(t *testing.T) {
	cases := unsafeTrees()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			repo := hostileRepo(t, tc.entries, tc.sub)
			m, mdir := newTestManager(t, Options{})
			_, err := m.Add(context.Background(), plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "file://" + repo}, "")
			if !errors.Is(err, ErrUnsafeTreePath) {
				t.Fatalf("add: %v, want ErrUnsafeTreePath", err)
			}
			if !strings.Contains(err.Error(), strconv.Quote(tc.path)) {
				t.Errorf("error %q does not name %q", err, tc.path)
			}
			left, _ := os.ReadDir(filepath.Join(mdir, "marketplaces"))
			if len(left) != 0 {
				t.Errorf("left behind under %s: %v", mdir, left)
			}
			if _, err := os.Stat(filepath.Join(mdir, "escaped")); err == nil {
				t.Error("a file was written outside the clone")
			}
		})
	}
}

// newPackObjects counts the objects of every pack of the clone at dir that is
// not named in before, and returns the names of all its packs.
func newPackObjects(t *testing.T, dir string, before map[string]bool) (int, map[string]bool) {
	t.Helper()
	idxs, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*.idx"))
	if err != nil {
		t.Fatal(err)
	}
	n, all := 0, map[string]bool{}
	for _, p := range idxs {
		all[p] = true
		if before[p] {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		idx := idxfile.NewMemoryIndex()
		err = idxfile.NewDecoder(f).Decode(idx)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		c, err := idx.Count()
		if err != nil {
			t.Fatal(err)
		}
		n += int(c)
	}
	return n, all
}

// TestUpdateFetchesOnlyWhatChanged: an update after one changed file
// brings the new commit, its changed trees and the one blob, not the
// whole tree of the marketplace again; after two upstream commits, the
// objects of both, and the work tree equals a fresh clone's.
func TestUpdateFetchesOnlyWhatChanged(t *testing.T) {
	files := marketFiles("mk", "a", "b")
	for i := 0; i < 200; i++ {
		files["plugins/b/commands/c"+strconv.Itoa(i)+".md"] = "command " + strconv.Itoa(i) + "\n"
	}
	repo := newGitRepo(t, files)
	m, _ := newTestManager(t, Options{})
	k, err := m.Add(context.Background(), gitSource(t, repo.url()), "")
	if err != nil {
		t.Fatal(err)
	}
	total, packs := newPackObjects(t, k.InstallLocation, nil)
	if total < 200 {
		t.Fatalf("the clone holds %d objects, want the 200 files' and more", total)
	}
	repo.commit("one change", map[string]string{"plugins/a/commands/a.md": "changed\n"})
	if _, err := m.Update(context.Background(), "mk"); err != nil {
		t.Fatal(err)
	}
	// The commit, the root tree, plugins/, plugins/a/, its commands/, the blob.
	got, packs := newPackObjects(t, k.InstallLocation, packs)
	if got == 0 || got > 6 {
		t.Errorf("the update fetched %d objects, want the 6 that changed (the clone has %d)", got, total)
	}
	repo.commit("two", map[string]string{"plugins/a/commands/a.md": "again\n"})
	repo.commit("three", map[string]string{"plugins/b/commands/c7.md": "edited\n"})
	if _, err := m.Update(context.Background(), "mk"); err != nil {
		t.Fatal(err)
	}
	if got, _ := newPackObjects(t, k.InstallLocation, packs); got == 0 || got > 12 {
		t.Errorf("the update over two commits fetched %d objects, want at most 12", got)
	}
	assertSameCheckout(t, k.InstallLocation, plainClone(t, repo.url()))
}

// TestUpdateCheckoutEqualsGoGitReset: moving a clean clone to a new
// upstream commit by the changed paths alone (checkoutUpdate) leaves the
// work tree, index and HEAD that go-git's hard reset leaves, over adds,
// edits, deletes, renames, mode changes, links made, retargeted and
// replaced, a file turned into a directory and back, and a directory
// deleted whole. A clone with an edited file is left to go-git's reset.
func TestUpdateCheckoutEqualsGoGitReset(t *testing.T) {
	files := marketFiles("mk", "a", "b", "c")
	files["plugins/a/data/x.txt"] = "x\n"
	files["plugins/a/data/deep/y.txt"] = "y\n"
	files["plugins/b/becomes-dir"] = "a file for now\n"
	files["plugins/b/dir-becomes-file/z.md"] = "z\n"
	files["plugins/c/rename-me.md"] = "renamed content\n"
	files["plugins/c/run.sh"] = "#!/bin/sh\n"
	repo := newGitRepo(t, files)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("rename-me.md", filepath.Join(repo.dir, "plugins/c/link")))
	must(os.Symlink("run.sh", filepath.Join(repo.dir, "plugins/c/link-to-file")))
	repo.git("add", "-A")
	repo.git("commit", "-q", "-m", "links")

	clone := func() (string, string) {
		m, _ := newTestManager(t, Options{})
		k, err := m.Add(context.Background(), gitSource(t, repo.url()), "")
		must(err)
		return k.InstallLocation, k.Commit
	}
	fast, before := clone()
	plain, _ := clone()
	edited, _ := clone()

	// Upstream: every kind of change, in one commit.
	write := func(name, body string, perm os.FileMode) {
		t.Helper()
		p := filepath.Join(repo.dir, filepath.FromSlash(name))
		must(os.MkdirAll(filepath.Dir(p), 0o755))
		must(os.WriteFile(p, []byte(body), perm))
		must(os.Chmod(p, perm))
	}
	rm := func(name string) { t.Helper(); must(os.RemoveAll(filepath.Join(repo.dir, filepath.FromSlash(name)))) }
	write("plugins/a/commands/a.md", "edited\n", 0o644)
	write("plugins/new/.claude-plugin/x.md", "new plugin\n", 0o644)
	rm("plugins/b/becomes-dir")
	write("plugins/b/becomes-dir/inner.md", "now a directory\n", 0o644)
	rm("plugins/b/dir-becomes-file")
	write("plugins/b/dir-becomes-file", "now a file\n", 0o644)
	rm("plugins/c/rename-me.md")
	write("plugins/c/renamed.md", "renamed content\n", 0o644)
	must(os.Chmod(filepath.Join(repo.dir, "plugins/c/run.sh"), 0o755))
	rm("plugins/c/link")
	must(os.Symlink("renamed.md", filepath.Join(repo.dir, "plugins/c/link")))
	rm("plugins/c/link-to-file")
	write("plugins/c/link-to-file", "a file now\n", 0o644)
	must(os.Symlink("../a", filepath.Join(repo.dir, "plugins/c/new-link")))
	rm("plugins/a/data")
	repo.git("add", "-A")
	repo.git("commit", "-q", "-m", "change")
	after := plumbing.NewHash(repo.git("rev-parse", "HEAD"))

	// Both clones get the new objects the same way; then one moves by the
	// changed paths, the other by go-git's hard reset.
	for _, dir := range []string{fast, plain, edited} {
		c := exec.Command("git", "-C", dir, "fetch", "-q", "origin", "main")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git fetch: %v\n%s", err, out)
		}
	}
	update := func(dir string) bool {
		t.Helper()
		s, _ := openStorage(dir)
		defer s.Close()
		done, err := checkoutUpdate(s, dir, plumbing.NewHash(before), after)
		must(err)
		return done
	}
	if !update(fast) {
		t.Fatal("checkoutUpdate left a clean clone to go-git's reset")
	}
	r, err := git.PlainOpen(plain)
	must(err)
	wt, err := r.Worktree()
	must(err)
	must(wt.Reset(&git.ResetOptions{Commit: after, Mode: git.HardReset}))
	assertSameCheckout(t, fast, plain)
	for _, dir := range []string{fast, plain} {
		r, err := git.PlainOpen(dir)
		must(err)
		head, err := r.Head()
		must(err)
		if head.Hash() != after || head.Name() != "refs/heads/main" {
			t.Errorf("%s: HEAD %s at %s, want refs/heads/main at %s", dir, head.Name(), head.Hash(), after)
		}
	}

	// An edited file: nothing is touched, go-git's reset is left to do it.
	p := filepath.Join(edited, "plugins/b/commands/b.md")
	must(os.WriteFile(p, []byte("edited by hand, a longer text\n"), 0o644))
	tree := workTree(t, edited)
	if update(edited) {
		t.Fatal("checkoutUpdate moved a clone with an edited file")
	}
	if got := workTree(t, edited); len(got) != len(tree) || got["plugins/b/commands/b.md"] != tree["plugins/b/commands/b.md"] {
		t.Error("checkoutUpdate changed the work tree of a clone it left to go-git")
	}
}

// TestUpdateRefusesUnsafeTreePaths: an upstream commit whose tree a fresh
// checkout would refuse is refused by update too, with ErrUnsafeTreePath
// naming the path, and the clone keeps its files.
func TestUpdateRefusesUnsafeTreePaths(t *testing.T) {
	cases := unsafeTrees()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			repo := hostileRepo(t, nil, nil)
			m, mdir := newTestManager(t, Options{})
			k, err := m.Add(context.Background(), plugin.MarketplaceSource{Kind: plugin.MktGit, URL: "file://" + repo}, "")
			if err != nil {
				t.Fatalf("add of the safe commit: %v", err)
			}
			manifest := filepath.Join(k.InstallLocation, ".claude-plugin", "marketplace.json")
			before, err := os.ReadFile(manifest)
			if err != nil {
				t.Fatal(err)
			}
			hostile := hostileRepo(t, tc.entries, tc.sub)
			if err := os.RemoveAll(repo); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(hostile, repo); err != nil {
				t.Fatal(err)
			}
			_, err = m.Update(context.Background(), k.Name)
			if !errors.Is(err, ErrUnsafeTreePath) {
				t.Fatalf("update: %v, want ErrUnsafeTreePath", err)
			}
			if !strings.Contains(err.Error(), strconv.Quote(tc.path)) {
				t.Errorf("error %q does not name %q", err, tc.path)
			}
			if after, err := os.ReadFile(manifest); err != nil || !bytes.Equal(after, before) {
				t.Errorf("the clone's manifest after the refused update: %q, %v", after, err)
			}
			if _, err := os.Stat(filepath.Join(mdir, "escaped")); err == nil {
				t.Error("a file was written outside the clone")
			}
		})
	}
}
