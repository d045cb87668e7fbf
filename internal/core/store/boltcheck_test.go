package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// filledBolt writes a real bbolt file with enough keys to span many pages
// and with freed pages (so its freelist lists some), and returns its path.
func filledBolt(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	b, err := OpenBolt(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 3; round++ {
		err := b.Update(func(tx Tx) error {
			for i := 0; i < 400; i++ {
				if err := tx.Put("installed", fmt.Sprintf("p%04d@corp", i), []byte(strings.Repeat(fmt.Sprint(round), 200))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func metaOf(t *testing.T, path string) boltMeta {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m0, ok0 := readMeta(f, 0)
	m1, ok1 := readMeta(f, int64(m0.pageSize))
	if !ok0 || !ok1 {
		t.Fatalf("test file has no valid meta pages")
	}
	if m1.txid > m0.txid {
		return m1
	}
	return m0
}

func wantCorrupt(t *testing.T, path, reason string) {
	t.Helper()
	before, _ := os.ReadFile(path)
	b, err := OpenBolt(path, Options{LockTimeout: time.Second})
	if err == nil {
		b.Close()
		t.Fatalf("OpenBolt of a damaged file succeeded")
	}
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("OpenBolt error %v (%T) is not a *CorruptError wrapping ErrCorrupt", err, err)
	}
	if ce.Path != path || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), reason) {
		t.Fatalf("error %q does not name %s and %q", err, path, reason)
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Fatalf("opening the damaged file changed it (%d bytes before, %d after)", len(before), len(after))
	}
}

// An empty state file was a new, empty store: every install and pin
// forgotten without a word. It is refused and left as it is.
func TestOpenBoltRefusesEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wantCorrupt(t, path, "empty (0 bytes)")
}

// A file cut in half keeps valid meta pages; bbolt mapped it and faulted on
// the first page past the end (a crash of the process).
func TestOpenBoltRefusesTruncatedFile(t *testing.T) {
	path := filledBolt(t)
	fi, _ := os.Stat(path)
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	wantCorrupt(t, path, "truncated")
}

func TestOpenBoltRefusesGarbageMeta(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database\n", 2000)), 0o600); err != nil {
		t.Fatal(err)
	}
	wantCorrupt(t, path, "no valid meta page")
}

// Garbage over the freelist page made bbolt panic in Open: every command
// died with a stack trace.
func TestOpenBoltRefusesGarbageFreelist(t *testing.T) {
	cases := map[string]func(page []byte, hwm uint64){
		"random bytes": func(page []byte, _ uint64) {
			for i := range page {
				page[i] = byte(i*131 + 7)
			}
		},
		"ids past the end": func(page []byte, hwm uint64) {
			binary.NativeEndian.PutUint16(page[10:], 3)
			for i := 0; i < 3; i++ {
				binary.NativeEndian.PutUint64(page[16+8*i:], hwm+uint64(i)*1000)
			}
		},
		"id twice": func(page []byte, hwm uint64) {
			binary.NativeEndian.PutUint16(page[10:], 2)
			binary.NativeEndian.PutUint64(page[16:], hwm-1)
			binary.NativeEndian.PutUint64(page[24:], hwm-1)
		},
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			path := filledBolt(t)
			m := metaOf(t, path)
			if m.freelist == boltNoFreelist {
				t.Fatal("test file has no freelist page")
			}
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			page := make([]byte, m.pageSize)
			off := int64(m.freelist) * int64(m.pageSize)
			if _, err := f.ReadAt(page, off); err != nil {
				t.Fatal(err)
			}
			spoil(page, m.hwm)
			if _, err := f.WriteAt(page, off); err != nil {
				t.Fatal(err)
			}
			f.Close()
			wantCorrupt(t, path, "freelist")
		})
	}
}

// Files written by bbolt through many transactions, with pages freed and
// reused, pass the check and open.
func TestOpenBoltAcceptsHealthyFiles(t *testing.T) {
	path := filledBolt(t)
	for i := 0; i < 5; i++ {
		b, err := OpenBolt(path, Options{})
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		err = b.Update(func(tx Tx) error {
			for k := i; k < 400; k += 3 {
				if err := tx.Delete("installed", fmt.Sprintf("p%04d@corp", k)); err != nil {
					return err
				}
			}
			return tx.Put("other", fmt.Sprint(i), []byte(strings.Repeat("x", 5000)))
		})
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		if err := CheckFile(path, time.Second); err != nil {
			t.Fatalf("CheckFile after round %d: %v", i, err)
		}
	}
}

// A permission problem is not damage: the error says so and never
// suggests moving the file aside.
func TestOpenBoltPermissionErrorIsNotCorruption(t *testing.T) {
	check := func(err error, path string) {
		t.Helper()
		if err == nil {
			t.Fatal("no error")
		}
		if errors.Is(err, ErrCorrupt) || !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("error %v: want a permission error, not corruption", err)
		}
		if !strings.Contains(err.Error(), "permission") || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "aside") {
			t.Fatalf("error %q should name %s, say permission, and not suggest moving it aside", err, path)
		}
	}
	path := filledBolt(t)
	// The mapping, with the error the kernel returns.
	check(openError(path, &fs.PathError{Op: "open", Path: path, Err: syscall.EACCES}), path)
	if os.Geteuid() == 0 {
		t.Skip("running as root: file modes do not refuse root; the mapping above was checked")
	}
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	_, err := OpenBolt(path, Options{LockTimeout: time.Second})
	check(err, path)
}

// FuzzCheckBoltFile feeds arbitrary files to the check that runs before
// bbolt maps a file: it never panics, and it accepts a file or refuses it
// with a *CorruptError.
func FuzzCheckBoltFile(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.db")
	b, err := OpenBolt(path, Options{})
	if err != nil {
		f.Fatal(err)
	}
	b.Update(func(tx Tx) error { return tx.Put("installed", "a@b", []byte("x")) })
	b.Close()
	good, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(good[:4096])
	f.Add([]byte{})
	f.Add([]byte("not a database"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		err := checkBoltFile(p)
		var ce *CorruptError
		if err != nil && !errors.As(err, &ce) {
			t.Fatalf("checkBoltFile = %v (%T), want nil or a *CorruptError", err, err)
		}
	})
}

// A damaged data page that the open-time check does not read makes bbolt
// panic in the transaction that reads it; the transaction returns a
// *CorruptError instead of killing the process.
func TestBoltTransactionOnDamagedPageIsAnError(t *testing.T) {
	path := filledBolt(t)
	m := metaOf(t, path)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Spoil every page but the metas, the root and the freelist: the
	// installed bucket's pages among them.
	junk := make([]byte, m.pageSize)
	for i := range junk {
		junk[i] = 0xA5
	}
	for p := uint64(2); p < m.hwm; p++ {
		if p == m.root || p == m.freelist {
			continue
		}
		if _, err := f.WriteAt(junk, int64(p)*int64(m.pageSize)); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	b, err := OpenBolt(path, Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatalf("open: %v (the damage is past what Open reads)", err)
	}
	defer b.Close()
	err = b.View(func(r Reader) error {
		_, err := r.List("installed", "")
		return err
	})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Path != path {
		t.Fatalf("View over damaged pages = %v, want a *CorruptError naming %s", err, path)
	}
}
