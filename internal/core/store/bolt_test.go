package store

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func openTemp(t *testing.T) (*Bolt, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nested", "state.db")
	b, err := OpenBolt(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, path
}

func TestBoltPutGetListDelete(t *testing.T) {
	b, _ := openTemp(t)
	err := b.Update(func(tx Tx) error {
		for _, k := range []string{"b/2", "a/1", "b/1", "c"} {
			if err := tx.Put("things", k, []byte("v-"+k)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = b.View(func(r Reader) error {
		v, err := r.Get("things", "a/1")
		if err != nil || string(v) != "v-a/1" {
			t.Errorf("Get a/1 = %q, %v", v, err)
		}
		kvs, err := r.List("things", "b/")
		if err != nil {
			return err
		}
		var keys []string
		for _, kv := range kvs {
			keys = append(keys, kv.Key+"="+string(kv.Value))
		}
		if got := strings.Join(keys, ","); got != "b/1=v-b/1,b/2=v-b/2" {
			t.Errorf("List b/ = %s", got)
		}
		if _, err := r.Get("things", "missing"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get missing key: %v, want ErrNotFound", err)
		}
		if _, err := r.Get("no-bucket", "x"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get missing bucket: %v, want ErrNotFound", err)
		}
		if kvs, err := r.List("no-bucket", ""); err != nil || len(kvs) != 0 {
			t.Errorf("List missing bucket = %v, %v", kvs, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Update(func(tx Tx) error {
		if err := tx.Delete("things", "c"); err != nil {
			return err
		}
		return tx.Delete("things", "never-there")
	}); err != nil {
		t.Fatal(err)
	}
	_ = b.View(func(r Reader) error {
		if _, err := r.Get("things", "c"); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleted key still readable: %v", err)
		}
		return nil
	})
}

func TestBoltGetReturnsCallersCopy(t *testing.T) {
	b, _ := openTemp(t)
	_ = b.Update(func(tx Tx) error { return tx.Put("k", "x", []byte("abc")) })
	var v []byte
	_ = b.View(func(r Reader) error { v, _ = r.Get("k", "x"); return nil })
	v[0] = 'Z' // must not touch the mmap (would fault) nor the stored value
	_ = b.View(func(r Reader) error {
		got, _ := r.Get("k", "x")
		if string(got) != "abc" {
			t.Errorf("stored value changed to %q", got)
		}
		return nil
	})
}

func TestBoltUpdateErrorRollsBack(t *testing.T) {
	b, _ := openTemp(t)
	boom := errors.New("boom")
	err := b.Update(func(tx Tx) error {
		if err := tx.Put("k", "half", []byte("1")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update error = %v, want boom", err)
	}
	_ = b.View(func(r Reader) error {
		if _, err := r.Get("k", "half"); !errors.Is(err, ErrNotFound) {
			t.Errorf("write of a failed transaction is visible: %v", err)
		}
		return nil
	})
}

func TestBoltEmptyKeyRefused(t *testing.T) {
	b, _ := openTemp(t)
	err := b.Update(func(tx Tx) error { return tx.Put("k", "", []byte("v")) })
	if err == nil || !strings.Contains(err.Error(), "empty key") {
		t.Fatalf("Put with empty key: %v", err)
	}
}

func TestBoltNextSequenceGrowsAcrossReopen(t *testing.T) {
	b, path := openTemp(t)
	var seqs []uint64
	for i := 0; i < 3; i++ {
		_ = b.Update(func(tx Tx) error {
			n, err := tx.NextSequence("audit")
			seqs = append(seqs, n)
			return err
		})
	}
	if seqs[0] != 1 || seqs[1] != 2 || seqs[2] != 3 {
		t.Fatalf("sequence = %v, want 1 2 3", seqs)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2, err := OpenBolt(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	_ = b2.Update(func(tx Tx) error {
		n, err := tx.NextSequence("audit")
		if n != 4 {
			t.Errorf("after reopen sequence = %d, want 4", n)
		}
		return err
	})
}

func TestBoltReadOnlyRefusesUpdate(t *testing.T) {
	b, path := openTemp(t)
	_ = b.Update(func(tx Tx) error { return tx.Put("k", "x", []byte("1")) })
	b.Close()
	ro, err := OpenBolt(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Update(func(tx Tx) error { return tx.Put("k", "y", []byte("2")) }); err == nil {
		t.Fatal("Update on a read-only store succeeded")
	}
	_ = ro.View(func(r Reader) error {
		if v, err := r.Get("k", "x"); err != nil || string(v) != "1" {
			t.Errorf("read-only Get = %q, %v", v, err)
		}
		return nil
	})
}

func TestBoltCorruptFileNamesPathAndNextStep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a bolt file ", 512)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenBolt(path, Options{LockTimeout: time.Second})
	if err == nil {
		t.Fatal("opened a corrupt file")
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "wharf doctor --repair") || !errors.Is(err, ErrCorrupt) {
		t.Errorf("error %q should name %s and the next step", err, path)
	}
}

// TestBoltLockedByAnotherProcess runs a second process (this test binary,
// re-executed) that holds the file; opening it here must fail with ErrLocked
// naming the file, and succeed once the holder exits.
func TestBoltLockedByAnotherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestBoltLockHolder$")
	cmd.Env = append(os.Environ(), "WHARF_TEST_HOLD_STORE="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "holding" {
		t.Fatalf("holder did not start: %q, %v", line, err)
	}

	_, err = OpenBolt(path, Options{LockTimeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("open while held: %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("ErrLocked message %q does not name the file", err)
	}

	stdin.Close() // the holder closes the store and exits
	if err := cmd.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	b, err := OpenBolt(path, Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("open after the holder exited: %v", err)
	}
	b.Close()
}

// TestBoltLockHolder is the subprocess of TestBoltLockedByAnotherProcess.
func TestBoltLockHolder(t *testing.T) {
	path := os.Getenv("WHARF_TEST_HOLD_STORE")
	if path == "" {
		t.Skip("only runs as a subprocess")
	}
	b, err := OpenBolt(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("holding")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// A bucket emptied by Delete leaves the file, unless it holds a sequence;
// the file does not grow with buckets that come and go.
func TestBoltEmptiedBucketIsDropped(t *testing.T) {
	b, path := openTemp(t)
	buckets := func() []string {
		var names []string
		b.db.View(func(tx *bolt.Tx) error {
			return tx.ForEach(func(name []byte, _ *bolt.Bucket) error { names = append(names, string(name)); return nil })
		})
		return names
	}
	if err := b.Update(func(tx Tx) error {
		if err := tx.Put("gone", "k", []byte("v")); err != nil {
			return err
		}
		if _, err := tx.NextSequence("log"); err != nil {
			return err
		}
		return tx.Put("log", "k", []byte("v"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.Update(func(tx Tx) error {
		if err := tx.Delete("gone", "k"); err != nil {
			return err
		}
		return tx.Delete("log", "k")
	}); err != nil {
		t.Fatal(err)
	}
	if got := buckets(); len(got) != 1 || got[0] != "log" {
		t.Fatalf("buckets after emptying: %v; want only the one with a sequence", got)
	}
	b.View(func(r Reader) error {
		if kvs, err := r.List("gone", ""); err != nil || len(kvs) != 0 {
			t.Fatalf("List of a dropped bucket: %v %v", kvs, err)
		}
		return nil
	})
	// Many buckets made and emptied: the file stays small.
	for round := range 20 {
		if err := b.Update(func(tx Tx) error {
			for i := range 2000 {
				if err := tx.Put(fmt.Sprintf("p/%d-%d", round, i), "m", []byte("x")); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := b.Update(func(tx Tx) error {
			for i := range 2000 {
				if err := tx.Delete(fmt.Sprintf("p/%d-%d", round, i), "m"); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(buckets()); n != 1 {
		t.Fatalf("%d buckets left after 40000 were made and emptied", n)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 4<<20 {
		t.Fatalf("the file is %d bytes after buckets came and went", fi.Size())
	}
}
