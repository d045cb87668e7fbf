package cache

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

func TestMaterializeReadOnly(t *testing.T) {
	c := newCache(t, Options{})
	v, err := c.Materialize(bg, pid, "1.0.0", files(map[string]string{
		".claude-plugin/plugin.json": `{"name":"deploy"}`,
		"bin/run*":                   "#!/bin/sh\n",
		"commands/ship.md":           "ship",
		"link":                       "->commands/ship.md",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(c.Home(), "cache", "corp", "deploy", "1.0.0")
	if v.Path != want || v.Origin != "fill" {
		t.Fatalf("path %s origin %s, want %s fill", v.Path, v.Origin, want)
	}
	tr, err := trust.Digest(v.Path)
	if err != nil || tr.Digest != v.Digest {
		t.Fatalf("digest of the version dir = %v %v, Materialize said %s", tr, err, v.Digest)
	}
	modes := map[string]os.FileMode{
		".":                          0o555 | os.ModeDir,
		"bin":                        0o555 | os.ModeDir,
		"bin/run":                    0o555,
		"commands/ship.md":           0o444,
		".claude-plugin/plugin.json": 0o444,
	}
	for name, mode := range modes {
		fi, err := os.Lstat(filepath.Join(v.Path, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != mode {
			t.Errorf("%s mode = %v, want %v", name, fi.Mode(), mode)
		}
	}
	if got := dirNames(t, filepath.Dir(v.Path)); len(got) != 1 || got[0] != "1.0.0" {
		t.Errorf("plugin dir holds %v, want only 1.0.0 (no temp dirs)", got)
	}
	if err := trust.CheckFingerprint(v.Path, v.FP); err != nil {
		t.Errorf("fingerprint recorded by Materialize does not match the final dir: %v", err)
	}
	// A materialized version is removable by GC even though it is read-only.
	if err := removeTree(v.Path); err != nil {
		t.Fatal(err)
	}
}

func TestHostileNamesAndVersions(t *testing.T) {
	c := newCache(t, Options{})
	called := false
	fill := func(ctx context.Context, dir string) error { called = true; return nil }
	versions := []string{"", "..", "../x", "../../etc", "a/b", "1.0/../..", "1.0\x00", ".hidden", "-rf", "v\n1", "\xff\xfe",
		strings.Repeat("9", 200), `1\2`, "~root", " 1.0"}
	for _, v := range versions {
		_, err := c.Materialize(bg, pid, v, fill)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("version %q: err = %v, want ErrInvalid", v, err)
		}
	}
	ids := []plugin.ID{{Name: "..", Source: "corp"}, {Name: "a/b", Source: "corp"}, {Name: "deploy", Source: "../x"}, {Name: "", Source: "corp"}, {Name: ".x", Source: "c"}}
	for _, id := range ids {
		_, err := c.Materialize(bg, id, "1.0.0", fill)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("id %#v: err = %v, want ErrInvalid", id, err)
		}
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Layer != plugin.LayerMaterialization {
			t.Errorf("id %#v: err %T is not a materialization *plugin.Error", id, err)
		}
	}
	if called {
		t.Error("fill ran for a hostile name or version")
	}
	if got := dirNames(t, c.Home()); len(got) != 1 || got[0] != "state.db" {
		t.Errorf("home holds %v after hostile requests; want only state.db", got)
	}
}

func TestFailingFillLeavesNothing(t *testing.T) {
	c := newCache(t, Options{})
	boom := errors.New("network down")
	_, err := c.Materialize(bg, pid, "1.0.0", func(ctx context.Context, dir string) error {
		if err := files(map[string]string{"a.md": "partial", "sub/b*": "x"})(ctx, dir); err != nil {
			return err
		}
		os.Chmod(filepath.Join(dir, "sub"), 0o555) // a read-only partial tree is removed too
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the fill's error", err)
	}
	if got := dirNames(t, filepath.Join(c.Root(), "corp", "deploy")); len(got) != 0 {
		t.Errorf("plugin dir holds %v after a failed fill", got)
	}
	if recs, err := c.List(); err != nil || len(recs) != 0 {
		t.Errorf("registry = %v, %v after a failed fill", recs, err)
	}
}

func TestDigestMismatchRefused(t *testing.T) {
	c := newCache(t, Options{})
	other := t.TempDir()
	files(map[string]string{"a.md": "published"})(bg, other)
	published, err := trust.Digest(other)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Ensure(bg, Request{ID: pid, Version: "1.0.0", Digest: published.Digest, Fill: files(map[string]string{"a.md": "tampered"})})
	if plugin.LayerOf(err) != plugin.LayerTrust {
		t.Fatalf("err = %v, want a trust-layer error", err)
	}
	var me *trust.MismatchError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want *trust.MismatchError", err)
	}
	if got := dirNames(t, filepath.Join(c.Root(), "corp", "deploy")); len(got) != 0 {
		t.Errorf("plugin dir holds %v after a digest mismatch", got)
	}
}

func TestReuseAndConflict(t *testing.T) {
	c := newCache(t, Options{})
	content := map[string]string{"a.md": "v1"}
	v1, err := c.Materialize(bg, pid, "1.0.0", files(content))
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Materialize(bg, pid, "1.0.0", files(content))
	if err != nil {
		t.Fatal(err)
	}
	if again.Origin != "cache" || again.Path != v1.Path || again.Digest != v1.Digest {
		t.Errorf("same content: %+v, want reuse of %s", again, v1.Path)
	}
	_, err = c.Materialize(bg, pid, "1.0.0", files(map[string]string{"a.md": "republished"}))
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("different content under the same version: err = %v, want ErrConflict", err)
	}
	if b, _ := os.ReadFile(filepath.Join(v1.Path, "a.md")); string(b) != "v1" {
		t.Errorf("existing version was changed in place: %q", b)
	}
	if got := dirNames(t, filepath.Dir(v1.Path)); len(got) != 1 {
		t.Errorf("plugin dir holds %v, want only 1.0.0", got)
	}
	// With the digest known, an existing version dir is used without a fill.
	v, err := c.Ensure(bg, Request{ID: pid, Version: "1.0.0", Digest: v1.Digest, Fill: func(context.Context, string) error {
		t.Error("fill ran although the version was cached with the expected digest")
		return nil
	}})
	if err != nil || v.Origin != "cache" {
		t.Fatalf("Ensure = %+v, %v", v, err)
	}
}

func TestCrashDuringFill(t *testing.T) {
	home := t.TempDir()
	cmd := helper(t, "fill-and-hang", home)
	kill(t, cmd)
	pdir := filepath.Join(home, "cache", "corp", "deploy")
	left := dirNames(t, pdir)
	if len(left) != 1 || !strings.HasPrefix(left[0], ".tmp-1.0.0-") {
		t.Fatalf("after the crash the plugin dir holds %v, want one .tmp-1.0.0-* dir", left)
	}
	c := newCache(t, Options{Home: home})
	if recs, err := c.List(); err != nil || len(recs) != 0 {
		t.Fatalf("registry after the crash = %v, %v; want empty", recs, err)
	}
	v, err := c.Materialize(bg, pid, "1.0.0", files(map[string]string{"a.md": "whole"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Put(bg, RecordFor(v, "user")); err != nil {
		t.Fatal(err)
	}
	if got := dirNames(t, pdir); len(got) != 1 || got[0] != "1.0.0" {
		t.Errorf("plugin dir holds %v, want only 1.0.0 (the dead process's temp dir removed)", got)
	}
	if b, _ := os.ReadFile(filepath.Join(v.Path, "a.md")); string(b) != "whole" {
		t.Errorf("a.md = %q", b)
	}
}

func TestWithLockExcludesOtherProcess(t *testing.T) {
	home := t.TempDir()
	cmd := helper(t, "lock-and-hold", home)
	c := newCache(t, Options{Home: home})
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel()
	ran := false
	err := c.WithLock(ctx, func(context.Context) error { ran = true; return nil })
	if !errors.Is(err, ErrLocked) || ran {
		t.Fatalf("WithLock while another process holds it: ran=%v err=%v, want ErrLocked", ran, err)
	}
	kill(t, cmd)
	if err := c.WithLock(bg, func(ctx context.Context) error {
		// Re-entrant through the marked context: Put inside does not deadlock.
		return c.WithLock(ctx, func(context.Context) error { ran = true; return nil })
	}); err != nil || !ran {
		t.Fatalf("WithLock after the holder died: ran=%v err=%v", ran, err)
	}
}
