package source

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
)

// gitTreeEntry is one entry of a raw git tree object.
type gitTreeEntry struct {
	mode, name string
	hash       plumbing.Hash
}

// rawGitTree encodes entries as a git tree object's content, in the given
// order (a hostile server need not sort them): "<mode> <name>\0<20-byte id>".
func rawGitTree(entries ...gitTreeEntry) []byte {
	var b bytes.Buffer
	for _, e := range entries {
		b.WriteString(e.mode + " " + e.name + "\x00")
		b.Write(e.hash[:])
	}
	return b.Bytes()
}

func storeObject(t testing.TB, repo *git.Repository, typ plumbing.ObjectType, data []byte) plumbing.Hash {
	t.Helper()
	o := repo.Storer.NewEncodedObject()
	o.SetType(typ)
	w, err := o.Writer()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	w.Close()
	h, err := repo.Storer.SetEncodedObject(o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// gitObjects stores, in a fresh in-memory repository, the objects the
// fuzzed trees may name: a blob, a link target that escapes, a sub-tree
// holding the blob, and a sub-tree holding a .git directory.
func gitObjects(t testing.TB) (repo *git.Repository, blob, escape, sub, gitSub plumbing.Hash) {
	repo, err := git.Init(memory.NewStorage(), nil)
	if err != nil {
		t.Fatal(err)
	}
	blob = storeObject(t, repo, plumbing.BlobObject, []byte("#!/bin/sh\necho hi\n"))
	escape = storeObject(t, repo, plumbing.BlobObject, []byte("../../outside"))
	sub = storeObject(t, repo, plumbing.TreeObject, rawGitTree(gitTreeEntry{"100644", "a.md", blob}))
	gitSub = storeObject(t, repo, plumbing.TreeObject, rawGitTree(gitTreeEntry{"40000", ".git", sub}, gitTreeEntry{"100755", "run.sh", blob}))
	return repo, blob, escape, sub, gitSub
}

// FuzzGitTree feeds arbitrary content, as a git tree object fetched from a
// remote server, to the code that writes a fetched tree into a plugin
// directory: never a panic, nothing written outside the destination,
// no .git entry written at any depth, and links that pass verifyLinks.
func FuzzGitTree(f *testing.F) {
	_, blob, escape, sub, gitSub := gitObjects(f)
	var missing plumbing.Hash
	copy(missing[:], bytes.Repeat([]byte{0xab}, 20))
	for _, seed := range [][]gitTreeEntry{
		{{"100644", "README.md", blob}, {"100755", "run.sh", blob}, {"40000", "docs", sub}},
		{{"120000", "link", escape}},
		{{"120000", "link", blob}},
		{{"40000", ".git", sub}, {"40000", ".GIT", sub}, {"40000", "nested", gitSub}},
		{{"100644", "..", blob}},
		{{"100644", ".", blob}},
		{{"100644", "a/b", blob}},
		{{"100644", "", blob}},
		{{"100644", "dup", blob}, {"100644", "dup", blob}},
		{{"40000", "dup", sub}, {"100644", "dup", blob}},
		{{"100644", "x", missing}},
		{{"40000", "d", blob}},
		{{"160000", "submodule", missing}},
		{{"100664", "old-mode", blob}},
		{{"777", "odd-mode", blob}},
		{{"100644", "nul\x00name", blob}},
		{{"100644", "C:\\x", blob}},
	} {
		f.Add(rawGitTree(seed...))
	}
	f.Add([]byte("100644 truncated\x00\x01\x02"))
	f.Add([]byte("not a tree"))
	f.Fuzz(func(t *testing.T, data []byte) {
		repo, _, _, _, _ := gitObjects(t)
		h := storeObject(t, repo, plumbing.TreeObject, data)
		tr, err := repo.TreeObject(h)
		if err != nil {
			return // not a tree: go-git refuses it
		}
		parent := t.TempDir()
		dest := filepath.Join(parent, "dest")
		if err := os.Mkdir(dest, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := newTree(dest, Limits{MaxEntries: 100, MaxBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer out.close()
		if err := (&Fetcher{}).writeGitTree(repo, tr, "", out); err == nil {
			if err := out.verifyLinks(); err != nil && !strings.Contains(err.Error(), "link") {
				t.Fatalf("verifyLinks: %v", err)
			}
		}
		if ents, _ := os.ReadDir(parent); len(ents) != 1 {
			t.Fatalf("the tree wrote outside the destination: %v", ents)
		}
		_ = filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.EqualFold(d.Name(), ".git") {
				t.Fatalf("wrote %s", p)
			}
			return nil
		})
	})
}

// The seeds reach the writer: a well-formed tree is written as fetched,
// .git directories left out at every depth, and an escaping link refused.
func TestGitTreeSeeds(t *testing.T) {
	repo, blob, escape, sub, gitSub := gitObjects(t)
	write := func(entries ...gitTreeEntry) (string, error) {
		tr, err := repo.TreeObject(storeObject(t, repo, plumbing.TreeObject, rawGitTree(entries...)))
		if err != nil {
			t.Fatal(err)
		}
		dest := t.TempDir()
		out, err := newTree(dest, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		defer out.close()
		return dest, (&Fetcher{}).writeGitTree(repo, tr, "", out)
	}
	dest, err := write(gitTreeEntry{"100755", "run.sh", blob}, gitTreeEntry{"40000", "docs", sub}, gitTreeEntry{"40000", ".git", sub}, gitTreeEntry{"40000", "nested", gitSub})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	_ = filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
		if rel, _ := filepath.Rel(dest, p); rel != "." {
			got = append(got, filepath.ToSlash(rel))
		}
		return nil
	})
	if strings.Join(got, ",") != "docs,docs/a.md,nested,nested/run.sh,run.sh" {
		t.Fatalf("wrote %q", got)
	}
	if fi, err := os.Stat(filepath.Join(dest, "run.sh")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Fatalf("run.sh: %v %v", fi, err)
	}
	if _, err := write(gitTreeEntry{"120000", "link", escape}); err == nil || !strings.Contains(err.Error(), "outside the plugin") {
		t.Fatalf("escaping link: %v", err)
	}
	if _, err := write(gitTreeEntry{"100644", "..", blob}); err == nil {
		t.Fatal("an entry named .. was written")
	}
}
