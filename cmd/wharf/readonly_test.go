//go:build unix

// The read-only home is proven with Unix file modes (and, as root, by
// running as nobody); Windows has neither.

package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// TestReadCommandsOnReadOnlyHome runs the reading commands on a home the
// process cannot write (a baked image, a sandboxed agent): each succeeds
// without a warning, and no file or directory of the home changes. As
// root, where file modes do not stop writes, the commands run as the
// nobody user, so the modes hold.
func TestReadCommandsOnReadOnlyHome(t *testing.T) {
	bin := wharfBinary(t)
	root := t.TempDir()
	demo := filepath.Join(root, "demo")
	if err := os.CopyFS(demo, os.DirFS(filepath.Join("..", "..", "testdata", "demo-marketplace"))); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	work := filepath.Join(root, "work")
	userHome := filepath.Join(root, "user")
	for _, d := range []string{work, userHome} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "WHARF_HOME="+home, "HOME="+userHome, "WHARF_MANAGED_DIR="+filepath.Join(root, "managed"),
		"WHARF_POLICY_URL=", "WHARF_JSON=")
	run := func(asNobody bool, args ...string) (string, string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Dir = env, work
		if asNobody {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	for _, args := range [][]string{{"marketplace", "add", demo}, {"install", "app-deploy@demo"}} {
		if out, errs, err := run(false, args...); err != nil {
			t.Fatalf("%v: %v\n%s%s", args, err, out, errs)
		}
	}
	// No marketplace lock file either: reading must not need to create it.
	if err := os.Remove(filepath.Join(home, "marketplaces", ".lock")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}

	asNobody := os.Geteuid() == 0
	chmodTree(t, home, func(m fs.FileMode) fs.FileMode { return m&^0o222 | 0o444 | (m&0o100)*0o11 })
	t.Cleanup(func() { chmodTree(t, home, func(m fs.FileMode) fs.FileMode { return m | 0o200 }) })
	if asNobody {
		// nobody must reach the home and run the binary.
		for _, d := range []string{root, filepath.Dir(root), filepath.Dir(bin)} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := snapshot(t, home)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list"}, "app-deploy@demo"},
		{[]string{"search", "deploy"}, "app-deploy@demo"},
		{[]string{"show", "app-deploy@demo"}, "depends on"},
		{[]string{"agent", "components"}, "app-deploy:deploy"},
		{[]string{"agent", "status"}, "secrets-vault@demo"},
		{[]string{"marketplace", "list"}, "demo"},
		{[]string{"outdated", "--offline"}, "everything is up to date"},
	} {
		out, errs, err := run(asNobody, tc.args...)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("wharf %v on a read-only home: %v\n%s%s", tc.args, err, out, errs)
			continue
		}
		if strings.Contains(errs, "warning") {
			t.Errorf("wharf %v warns on a read-only home:\n%s", tc.args, errs)
		}
	}
	if after := snapshot(t, home); after != before {
		t.Errorf("the home changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// A writing command fails, clearly, and changes nothing either.
	if _, errs, err := run(asNobody, "install", "lint-kit@demo"); err == nil || !strings.Contains(errs, "wharf:") {
		t.Errorf("install on a read-only home: err %v\n%s", err, errs)
	}
	if after := snapshot(t, home); after != before {
		t.Errorf("a refused install changed the home:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func chmodTree(t *testing.T, dir string, mode func(fs.FileMode) fs.FileMode) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		return os.Chmod(p, mode(fi.Mode().Perm()))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot lists every entry of dir with its mode, size and modification time.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("%s %v %d %d", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
