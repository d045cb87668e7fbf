//go:build linux

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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

// contentSnapshot lists every entry of dir with its mode, size,
// modification time and, for files, a hash of the content: a write that
// restores the mtime still shows.
func contentSnapshot(t *testing.T, dir string) string {
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
		sum := ""
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			sum = hex.EncodeToString(h[:8])
		}
		lines = append(lines, fmt.Sprintf("%s %v %d %d %s", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), sum))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestDoctorWritesNothing: `wharf doctor` without --repair only reads. On
// a sound and on a damaged state.db it changes no file, directory or mtime
// of the home, and it works where nothing can be written: a home mounted
// read-only in a mount namespace (where even root cannot write), and a
// home whose modes forbid writing, run as nobody.
func TestDoctorWritesNothing(t *testing.T) {
	bin := wharfBinary(t)
	root := t.TempDir()
	demo := filepath.Join(root, "demo")
	if err := os.CopyFS(demo, os.DirFS(filepath.Join("..", "..", "testdata", "demo-marketplace"))); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	userHome := filepath.Join(root, "user")
	if err := os.MkdirAll(userHome, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "WHARF_HOME="+home, "HOME="+userHome, "WHARF_MANAGED_DIR="+filepath.Join(root, "managed"),
		"WHARF_POLICY_URL=", "WHARF_JSON=")
	run := func(cmd *exec.Cmd) (string, int) {
		cmd.Env, cmd.Dir = env, root
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), code
	}
	for _, args := range [][]string{{"marketplace", "add", demo}, {"install", "app-deploy@demo"}} {
		if out, code := run(exec.Command(bin, args...)); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, out)
		}
	}
	unshareOK := exec.Command("unshare", "-rm", "true").Run() == nil
	if !unshareOK {
		t.Log("unshare -rm is not available here: the read-only mount case is skipped (the checks by content and as nobody still run)")
	}
	// doctor in a mount namespace where the home is a read-only bind mount.
	roDoctor := func() *exec.Cmd {
		return exec.Command("unshare", "-rm", "sh", "-c",
			`mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$1" doctor`, home, bin)
	}
	// doctor on a copy of the home on a file system with no space left.
	fullDoctor := func() *exec.Cmd {
		full := filepath.Join(t.TempDir(), "full")
		if err := os.Mkdir(full, 0o755); err != nil {
			t.Fatal(err)
		}
		return exec.Command("unshare", "-rm", "sh", "-c",
			`mount -t tmpfs -o size=8m tmpfs "$1" && cp -a "$0/." "$1/" && { dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null; true; } && WHARF_HOME="$1" exec "$2" doctor`,
			home, full, bin)
	}
	asNobody := func() *exec.Cmd {
		cmd := exec.Command(bin, "doctor")
		if os.Geteuid() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		return cmd
	}

	for _, state := range []string{"sound", "damaged"} {
		if state == "damaged" {
			// cut state.db in half: doctor reports the damage, exit 1
			db := filepath.Join(home, "state.db")
			fi, err := os.Stat(db)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(db, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}
		wantCode, want := 0, ": ok, 4 installed plugin record(s)"
		if state == "damaged" {
			wantCode, want = 1, "damaged"
		}
		before := contentSnapshot(t, home)
		out, code := run(exec.Command(bin, "doctor"))
		if code != wantCode || !strings.Contains(out, want) {
			t.Fatalf("%s: wharf doctor: exit %d, want %d and %q:\n%s", state, code, wantCode, want, out)
		}
		if after := contentSnapshot(t, home); after != before {
			t.Errorf("%s: wharf doctor changed the home:\nbefore:\n%s\nafter:\n%s", state, before, after)
		}
		if unshareOK {
			out, code := run(roDoctor())
			if code != wantCode || !strings.Contains(out, want) {
				t.Errorf("%s: wharf doctor on a read-only mount: exit %d, want %d and %q:\n%s", state, code, wantCode, want, out)
			}
			out, code = run(fullDoctor())
			if code != wantCode || !strings.Contains(out, want) {
				t.Errorf("%s: wharf doctor on a full disk: exit %d, want %d and %q:\n%s", state, code, wantCode, want, out)
			}
		}
		chmodTree(t, home, func(m fs.FileMode) fs.FileMode { return m&^0o222 | 0o444 | (m&0o100)*0o11 })
		if os.Geteuid() == 0 {
			for _, d := range []string{root, filepath.Dir(root), filepath.Dir(bin)} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
		out, code = run(asNobody())
		chmodTree(t, home, func(m fs.FileMode) fs.FileMode { return m | 0o200 })
		if code != wantCode || !strings.Contains(out, want) {
			t.Errorf("%s: wharf doctor on a home it may not write: exit %d, want %d and %q:\n%s", state, code, wantCode, want, out)
		}
	}
}
