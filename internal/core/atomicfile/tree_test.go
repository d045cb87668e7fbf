package atomicfile

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// makeTree fills root with nested files, an empty directory, an
// executable and a symlink.
func makeTree(t *testing.T, root string) {
	t.Helper()
	for p, body := range map[string]string{"a.md": "a", "sub/b.md": "b", "sub/deep/c.md": "c", "bin/run.sh": "#!/bin/sh\n"} {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "bin", "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.md", filepath.Join(root, "link")); err != nil {
		t.Logf("no symlink here: %v", err)
	}
}

// listTree describes a tree: each entry's path, type and, for files, content.
func listTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out = append(out, rel+" -> "+target)
		case d.IsDir():
			out = append(out, rel+"/")
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, rel+" = "+string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// recordSyncs is an fsync that records each synced path and, when at is
// not nil, runs it first.
func recordSyncs(at func(name string)) (Option, *[]string) {
	var mu sync.Mutex
	var got []string
	return WithSync(func(f *os.File) error {
		if at != nil {
			at(f.Name())
		}
		mu.Lock()
		got = append(got, f.Name())
		mu.Unlock()
		return f.Sync()
	}), &got
}

func TestCommitDirSyncsEveryFileAndDirectoryThenRenames(t *testing.T) {
	parent := t.TempDir()
	tmp := filepath.Join(parent, ".stage")
	final := filepath.Join(parent, "tree")
	makeTree(t, tmp)
	want := listTree(t, tmp)

	// Every regular file and directory of tmp must be synced.
	var mustSync []string
	filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if d.IsDir() || d.Type().IsRegular() {
			mustSync = append(mustSync, p)
		}
		return nil
	})
	parentSyncedAfterRename := false
	record, synced := recordSyncs(func(name string) {
		if name == parent {
			_, err := os.Lstat(final)
			parentSyncedAfterRename = err == nil
		}
	})
	if err := CommitDir(tmp, final, record); err != nil {
		t.Fatal(err)
	}
	for _, p := range mustSync {
		if !slices.Contains(*synced, p) {
			t.Errorf("%s was not synced before the rename (synced: %v)", p, *synced)
		}
	}
	// A directory is synced after everything it holds.
	for i, p := range *synced {
		for _, q := range (*synced)[i+1:] {
			if strings.HasPrefix(q, p+string(filepath.Separator)) {
				t.Errorf("%s synced before %s, which it holds", p, q)
			}
		}
	}
	if !parentSyncedAfterRename {
		t.Errorf("the parent directory %s was not synced after the rename (synced: %v)", parent, *synced)
	}
	if got := listTree(t, final); !slices.Equal(got, want) {
		t.Errorf("committed tree %v, want %v", got, want)
	}
	if _, err := os.Lstat(tmp); err == nil {
		t.Errorf("%s still exists after the commit", tmp)
	}
}

func TestCommitDirOntoNonEmptyDirFailsAndKeepsIt(t *testing.T) {
	parent := t.TempDir()
	tmp, final := filepath.Join(parent, ".stage"), filepath.Join(parent, "tree")
	makeTree(t, tmp)
	if err := os.MkdirAll(filepath.Join(final, "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CommitDir(tmp, final); err == nil {
		t.Fatal("CommitDir replaced a non-empty directory")
	}
	if got := listTree(t, final); !slices.Equal(got, []string{"./", "old/"}) {
		t.Errorf("existing directory changed: %v", got)
	}
}

func TestSealTreeMakesTreeReadOnly(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root)
	record, synced := recordSyncs(nil)
	if err := SealTree(root, record); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	for p, want := range map[string]fs.FileMode{"a.md": 0o444, "sub/b.md": 0o444, "bin/run.sh": 0o555, "sub": 0o555 | fs.ModeDir, "empty": 0o555 | fs.ModeDir, ".": 0o555 | fs.ModeDir} {
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v, %v; want %v", p, fi.Mode(), err, want)
		}
	}
	if !slices.Contains(*synced, filepath.Join(root, "sub", "deep", "c.md")) || !slices.Contains(*synced, root) {
		t.Errorf("SealTree did not sync the tree: %v", *synced)
	}
}

// crashEnv makes the test binary a child that commits a tree and dies at
// the given fsync, as a crash would.
const crashEnv = "WHARF_ATOMICFILE_CRASH_AT"

func TestCommitDirCrashChild(t *testing.T) {
	at := os.Getenv(crashEnv)
	if at == "" {
		t.Skip("run by TestCommitDirCrashLeavesOldOrNewTree")
	}
	n, _ := strconv.Atoi(at)
	parent := os.Getenv(crashEnv + "_DIR")
	calls := 0
	record, _ := recordSyncs(func(string) {
		calls++
		if calls == n {
			p, _ := os.FindProcess(os.Getpid())
			p.Kill()
			select {}
		}
	})
	if err := CommitDir(filepath.Join(parent, ".stage"), filepath.Join(parent, "tree"), record); err != nil {
		t.Fatal(err)
	}
}

// A process killed at any point of CommitDir leaves either no tree (the
// state before) or the whole tree, never part of one.
func TestCommitDirCrashLeavesOldOrNewTree(t *testing.T) {
	probe := t.TempDir()
	makeTree(t, filepath.Join(probe, ".stage"))
	want := listTree(t, filepath.Join(probe, ".stage"))
	record, syncs := recordSyncs(nil)
	if err := CommitDir(filepath.Join(probe, ".stage"), filepath.Join(probe, "tree"), record); err != nil {
		t.Fatal(err)
	}
	total := len(*syncs)
	sawOld, sawNew := false, false
	for k := 1; k <= total; k++ {
		parent := t.TempDir()
		makeTree(t, filepath.Join(parent, ".stage"))
		cmd := exec.Command(os.Args[0], "-test.run=^TestCommitDirCrashChild$")
		cmd.Env = append(os.Environ(), crashEnv+"="+strconv.Itoa(k), crashEnv+"_DIR="+parent)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("child not killed at sync %d of %d:\n%s", k, total, out)
		}
		final := filepath.Join(parent, "tree")
		if _, err := os.Lstat(final); err != nil {
			sawOld = true
			continue
		}
		sawNew = true
		if got := listTree(t, final); !slices.Equal(got, want) {
			t.Errorf("killed at sync %d of %d: partial tree %v, want %v", k, total, got, want)
		}
	}
	if !sawOld || !sawNew {
		t.Errorf("the kills did not cover both sides of the rename (old seen %v, new seen %v)", sawOld, sawNew)
	}
}
