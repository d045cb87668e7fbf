package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// TestRelativeAtEqualsByPath fetches relative sources through directory
// descriptors (copyRelativeAt), by path (copyRelative), and with the
// marketplace resolved beforehand (Request.Marketplace), and requires the
// same result, the same tree and the same error from each, on trees that
// take the fast path and on those it leaves to the plain one.
func TestRelativeAtEqualsByPath(t *testing.T) {
	mkt := filepath.Join(t.TempDir(), "mkt")
	secret := filepath.Join(t.TempDir(), "secret.txt")
	writeFile(t, secret, "secret", 0o644)
	writeFile(t, filepath.Join(mkt, ".claude-plugin/marketplace.json"), `{}`, 0o644)
	good := filepath.Join(mkt, "plugins/good")
	writeFile(t, filepath.Join(good, "commands/b.md"), "b", 0o644)
	writeFile(t, filepath.Join(good, "commands/a.md"), "a", 0o644)
	writeFile(t, filepath.Join(good, "commands/Z.md"), "Z", 0o644)
	writeFile(t, filepath.Join(good, "bin/run"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(good, ".git/config"), "nested repo metadata", 0o644)
	writeFile(t, filepath.Join(good, "sub/.git/config"), "kept below the top", 0o644)
	writeFile(t, filepath.Join(good, "deep/a/b/c/d/e.md"), strings.Repeat("e", 70000), 0o600)
	writeFile(t, filepath.Join(good, "ünï/ß.md"), "utf-8", 0o644)
	if err := os.MkdirAll(filepath.Join(good, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(good, "deeper")
	for i := range maxDepthAt + 3 {
		deep = filepath.Join(deep, fmt.Sprintf("d%d", i))
		writeFile(t, filepath.Join(deep, "f.md"), fmt.Sprint(i), 0o644)
	}
	os.Symlink("../f.md", filepath.Join(deep, "up.md"))
	os.Symlink("commands/a.md", filepath.Join(good, "alias.md"))
	os.Symlink("commands", filepath.Join(good, "cmds"))
	writeFile(t, filepath.Join(mkt, "plugins/gitfile/.git"), "gitdir: elsewhere", 0o644)
	writeFile(t, filepath.Join(mkt, "plugins/gitfile/x.md"), "x", 0o644)
	writeFile(t, filepath.Join(mkt, "plugins/leaky/ok.md"), "ok", 0o644)
	os.Symlink(secret, filepath.Join(mkt, "plugins/leaky/secret"))
	writeFile(t, filepath.Join(mkt, "plugins/sibling/x.md"), "x", 0o644)
	os.MkdirAll(filepath.Join(mkt, "plugins/peek"), 0o755)
	os.Symlink("../sibling/x.md", filepath.Join(mkt, "plugins/peek/x.md"))
	os.Symlink(filepath.Dir(secret), filepath.Join(mkt, "plugins/outside"))
	os.Symlink("good", filepath.Join(mkt, "plugins/inside"))
	os.Symlink("plugins", filepath.Join(mkt, "linked"))
	writeFile(t, filepath.Join(mkt, "plugins/file.md"), "not a dir", 0o644)
	writeFile(t, filepath.Join(mkt, "plugins/pipe/ok.md"), "ok", 0o644)
	fifo := mkfifo(filepath.Join(mkt, "plugins/pipe/fifo")) == nil
	link := filepath.Join(t.TempDir(), "mkt-link")
	if err := os.Symlink(mkt, link); err != nil {
		t.Fatal(err)
	}

	type out struct {
		res  *Result
		err  string
		tree []string
	}
	fetch := func(t *testing.T, f *Fetcher, at, resolved bool, dir, path string) out {
		t.Helper()
		old := relativeAt
		relativeAt = at
		defer func() { relativeAt = old }()
		_, dest := sandbox(t)
		req := Request{Plugin: "p@m", Source: plugin.Source{Kind: plugin.SourceRelative, Path: path}, MarketplaceDir: dir, Dest: dest,
			Durable: true, ReadOnly: true}
		if resolved {
			m, err := ResolveMarketplace(dir)
			if err != nil {
				t.Fatal(err)
			}
			req.Marketplace = m
		}
		res, err := f.Fetch(context.Background(), req)
		o := out{res: res, tree: snapshot(t, dest)}
		if err != nil {
			o.err = strings.ReplaceAll(err.Error(), dest, "DEST")
		}
		return o
	}
	paths := []string{"./plugins/good", "./", "plugins/gitfile", "./plugins/leaky", "./plugins/peek", "./plugins/outside",
		"./plugins/inside", "./linked/good", "./plugins/none", "./plugins/file.md", "./plugins/good/commands/a.md", "./plugins/pipe"}
	limits := []Limits{{}, {MaxEntries: 5}, {MaxBytes: 1000}}
	for _, dir := range []string{mkt, link} {
		for _, p := range paths {
			for _, l := range limits {
				name := fmt.Sprintf("%s %s %d %d", filepath.Base(dir), p, l.MaxEntries, l.MaxBytes)
				t.Run(name, func(t *testing.T) {
					f := &Fetcher{Limits: l}
					want := fetch(t, f, false, false, dir, p)
					for _, v := range []struct{ at, resolved bool }{{true, false}, {true, true}, {false, true}} {
						got := fetch(t, f, v.at, v.resolved, dir, p)
						if got.err != want.err {
							t.Errorf("at=%v resolved=%v: error %q; by path %q", v.at, v.resolved, got.err, want.err)
						}
						if !reflect.DeepEqual(got.res, want.res) {
							t.Errorf("at=%v resolved=%v: result %+v; by path %+v", v.at, v.resolved, got.res, want.res)
						}
						if !reflect.DeepEqual(got.tree, want.tree) {
							t.Errorf("at=%v resolved=%v: tree\n%s\nby path\n%s", v.at, v.resolved, strings.Join(got.tree, "\n"), strings.Join(want.tree, "\n"))
						}
					}
				})
			}
		}
	}
	// The cases above must reach both ways, and the errors each is for.
	for _, c := range []struct {
		rel  string
		done bool
	}{{"plugins/good", runtime.GOOS != "windows"}, {"plugins/sibling", runtime.GOOS != "windows"}, {"plugins/outside", false}, {"linked/good", false},
		{"plugins/inside", false}, {"plugins/none", false}, {"plugins/file.md", false}} {
		_, dest := sandbox(t)
		tr, err := newTree(dest, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		_, done, err := (&Fetcher{}).copyRelativeAt(&Request{Plugin: "p@m"}, mkt, c.rel, tr)
		tr.close()
		if done != c.done || err != nil {
			t.Errorf("copyRelativeAt(%q) = done %v, %v; want done %v", c.rel, done, err, c.done)
		}
	}
	f := &Fetcher{}
	if o := fetch(t, f, true, false, mkt, "./plugins/good"); o.err != "" || len(o.tree) < 10 {
		t.Errorf("good: %s, %d entries", o.err, len(o.tree))
	}
	if o := fetch(t, f, true, false, mkt, "./plugins/leaky"); !strings.Contains(o.err, "secret") {
		t.Errorf("leaky: %q", o.err)
	}
	if fifo && runtime.GOOS != "windows" {
		if o := fetch(t, f, true, false, mkt, "./plugins/pipe"); !strings.Contains(o.err, "not a file, directory or symlink") {
			t.Errorf("pipe: %q", o.err)
		}
	}
}

// snapshot lists every entry under dir: path, mode, and the content or link
// target.
func snapshot(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v", filepath.ToSlash(r), fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			line += " -> " + l
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += " " + string(b)
		}
		out = append(out, line)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}
