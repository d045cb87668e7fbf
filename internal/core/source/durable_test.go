package source

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// treeState is what a reader sees of a written tree: per path, its kind,
// exec bit and content (a link's target).
func treeState(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			out[rel] = "dir"
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link " + target
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = "file exec=" + map[bool]string{true: "yes", false: "no"}[fi.Mode()&0o100 != 0] + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A fetch asked to be durable and read-only writes the same tree as a
// plain one (same paths, kinds, exec bits, bytes, links), read-only
// throughout, and reports the size and hash of every file it wrote, however
// it makes the tree durable.
func TestFetchDurableReadOnlyEqualsPlain(t *testing.T) {
	mkt := t.TempDir()
	writeFile(t, filepath.Join(mkt, ".claude-plugin/marketplace.json"), `{}`, 0o644)
	writeFile(t, filepath.Join(mkt, "plugins/p/.claude-plugin/plugin.json"), `{"name":"p"}`, 0o644)
	writeFile(t, filepath.Join(mkt, "plugins/p/commands/a.md"), "a", 0o644)
	writeFile(t, filepath.Join(mkt, "plugins/p/skills/s/deep/SKILL.md"), "skill", 0o644)
	writeFile(t, filepath.Join(mkt, "plugins/p/bin/run"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(mkt, "plugins/p/empty.md"), "", 0o644)
	os.Mkdir(filepath.Join(mkt, "plugins/p/hollow"), 0o755)
	os.Symlink("commands/a.md", filepath.Join(mkt, "plugins/p/alias.md"))
	// More directories than a fetch keeps descriptors of (maxHeldDirs), so
	// that some are opened again to be written into, sealed and fsynced.
	for i := range maxHeldDirs + 40 {
		writeFile(t, filepath.Join(mkt, fmt.Sprintf("plugins/p/many/d%03d/sub/f.md", i)), fmt.Sprint(i), 0o644)
	}
	zipped := makeZip(t,
		zipEntry{name: ".claude-plugin/", mode: fs.ModeDir | 0o755},
		zipEntry{name: ".claude-plugin/plugin.json", body: `{"name":"z"}`},
		zipEntry{name: "a/b/c/d.md", body: "deep"},
		zipEntry{name: "bin/tool", body: "#!/bin/sh\n", mode: 0o755},
	)
	srv := serve(t, map[string][]byte{"/z.zip": zipped})
	for name, src := range map[string]plugin.Source{
		"relative": {Kind: plugin.SourceRelative, Path: "./plugins/p"},
		"archive":  {Kind: plugin.SourceArchive, URL: srv.URL + "/z.zip", SHA256: hexSHA256(zipped)},
	} {
		for mode, sync := range map[string]SyncMode{"auto": SyncAuto, "each-file": SyncEachFile, "file-system": SyncFileSystem} {
			t.Run(name+"/"+mode, func(t *testing.T) { checkDurableReadOnly(t, &Fetcher{Sync: sync}, src, mkt) })
		}
	}
}

func checkDurableReadOnly(t *testing.T, f *Fetcher, src plugin.Source, mkt string) {
	t.Helper()
	_, plainDest := sandbox(t)
	plain, err := f.Fetch(context.Background(), Request{Plugin: "p@m", Source: src, MarketplaceDir: mkt, Dest: plainDest})
	if err != nil {
		t.Fatal(err)
	}
	_, dest := sandbox(t)
	t.Cleanup(func() {
		filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error { os.Chmod(p, 0o755); return nil })
	})
	fast, err := f.Fetch(context.Background(), Request{Plugin: "p@m", Source: src, MarketplaceDir: mkt, Dest: dest, Durable: true, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	want, got := treeState(t, plainDest), treeState(t, dest)
	if len(got) != len(want) {
		t.Errorf("%d paths, want %d: %v vs %v", len(got), len(want), got, want)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %q, want %q", p, got[p], w)
		}
	}
	if fast.Entries != plain.Entries || fast.Bytes != plain.Bytes || len(fast.Written) != len(plain.Written) {
		t.Errorf("counts %d/%d entries, %d/%d bytes, %d/%d files", fast.Entries, plain.Entries, fast.Bytes, plain.Bytes, len(fast.Written), len(plain.Written))
	}
	files := 0
	filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := d.Info()
		rel, _ := filepath.Rel(dest, p)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
		case fi.Mode().Perm()&0o222 != 0:
			t.Errorf("%s is writable (%v)", rel, fi.Mode())
		case fi.Mode().IsRegular():
			files++
			b, _ := os.ReadFile(p)
			w, ok := fast.Written[filepath.ToSlash(rel)]
			if !ok || w.Size != int64(len(b)) || w.SHA256 != sha256.Sum256(b) {
				t.Errorf("%s: written %+v, the file has %d bytes", rel, w, len(b))
			}
		}
		return nil
	})
	if files != len(fast.Written) {
		t.Errorf("%d files, %d reported written", files, len(fast.Written))
	}
}
