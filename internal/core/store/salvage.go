package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
)

// Salvaged is what Salvage could read of a bbolt file.
type Salvaged struct {
	// Buckets holds every top-level bucket read whole, key → value.
	Buckets map[string][]KV
	// Lost names the buckets that could not be read, with why; the key ""
	// stands for the whole file (no bucket could be listed).
	Lost map[string]string
	// Problems are the inconsistencies bbolt's own check found.
	Problems []string
	// Damage is CheckFile's verdict on the file (nil when sound).
	Damage error
}

// Salvage reads every bucket it can from the bbolt file at path without
// writing to it or beside it: it copies the file (under a shared lock, so
// no transaction is half written) into a scratch file (a memory file on
// Linux, else one in the system's temporary directory), pads a truncated copy to the size its meta
// page needs, opens the copy read-only (bbolt then does not read the
// freelist) and reads each bucket on its own, so one damaged bucket costs
// that bucket only. A file that cannot be read (permission) is an error;
// a damaged one is a result with Damage set.
func Salvage(path string, timeout time.Duration) (*Salvaged, error) {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	out := &Salvaged{Buckets: map[string][]KV{}, Lost: map[string]string{}}
	cp, cleanup, err := scratchFile()
	if err != nil {
		return nil, fmt.Errorf("store: salvage %s: a scratch copy: %w", path, err)
	}
	defer cleanup()
	if err := copyLocked(path, cp, timeout); err != nil {
		return nil, err
	}
	if err := checkBoltFile(cp); err != nil {
		out.Damage = &CorruptError{Path: path, Reason: errorReason(err)}
	}
	if fi, err := os.Stat(cp); err != nil || fi.Size() == 0 {
		out.Lost[""] = "the file is empty"
		return out, nil
	}
	// Pad a truncated copy so bbolt reads zeros, not past the end of the
	// mapping; the pages that were cut off fail as damaged buckets.
	if f, err := os.Open(cp); err == nil {
		m, ok := bestMeta(f)
		f.Close()
		if ok && m.pageSize >= 512 && m.pageSize <= 1<<20 && m.hwm < 1<<30 {
			need := int64(m.hwm+1) * int64(m.pageSize)
			if fi, err := os.Stat(cp); err == nil && fi.Size() < need {
				if err := os.Truncate(cp, need); err != nil {
					return nil, fmt.Errorf("store: salvage %s: %w", path, err)
				}
			}
		}
	}
	db, err := openGuarded(cp, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil {
		out.Lost[""] = errorReason(err)
		return out, nil
	}
	defer db.Close()
	var names []string
	if err := guardedView(db, func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, string(name))
			return nil
		})
	}); err != nil {
		out.Lost[""] = errorReason(err)
	}
	for _, name := range names {
		var kvs []KV
		err := guardedView(db, func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte(name))
			if b == nil {
				return errors.New("bucket vanished")
			}
			return b.ForEach(func(k, v []byte) error {
				if v == nil {
					return nil // a nested bucket: wharf writes none
				}
				kvs = append(kvs, KV{Key: string(k), Value: append([]byte(nil), v...)})
				return nil
			})
		})
		if err != nil {
			out.Lost[name] = errorReason(err)
			continue
		}
		out.Buckets[name] = kvs
	}
	if out.Lost[""] == "" {
		delete(out.Lost, "")
	}
	// bbolt's check runs in a goroutine of its own, where a panic on a
	// damaged page cannot be recovered: it runs only on a file whose
	// structure checkBoltFile found sound and whose buckets all read.
	if out.Damage == nil && len(out.Lost) == 0 {
		guardedView(db, func(tx *bolt.Tx) error {
			for err := range tx.Check() {
				out.Problems = append(out.Problems, err.Error())
			}
			return nil
		})
	}
	return out, nil
}

// tempScratch is an empty file in the system's temporary directory.
func tempScratch() (string, func(), error) {
	dir, err := os.MkdirTemp("", "wharf-salvage-")
	if err != nil {
		return "", nil, err
	}
	p := filepath.Join(dir, "copy.db")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	f.Close()
	return p, func() { os.RemoveAll(dir) }, nil
}

func errorReason(err error) string {
	var ce *CorruptError
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return err.Error()
}

// guardedView runs fn in a read transaction, turning a panic of bbolt on a
// damaged page into an error.
func guardedView(db *bolt.DB, fn func(*bolt.Tx) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("reading it failed: %v", p)
		}
	}()
	return db.View(fn)
}

// copyLocked copies src to dst holding a shared lock of src.
func copyLocked(src, dst string, timeout time.Duration) error {
	in, err := os.Open(src)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return openError(src, err)
		}
		return fmt.Errorf("store: read %s: %w", src, err)
	}
	defer in.Close()
	unlock, err := flockWait(in, false, src, timeout)
	if err != nil {
		return err
	}
	defer unlock()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("store: read %s: %w", src, err)
	}
	return out.Close()
}

func flockWait(f *os.File, exclusive bool, path string, timeout time.Duration) (func(), error) {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := tryLockFile(f, exclusive)
		if err != nil {
			return nil, fmt.Errorf("store: lock %s: %w", path, err)
		}
		if ok {
			return func() { unlockFile(f) }, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("store: %s: %w (waited %s); wait for the other command to finish, or stop it", path, ErrLocked, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ReplaceFile puts the complete bbolt file fresh in place of path. The file
// at path, if any, is first kept as aside (a hard link, so that a crash at
// any moment leaves path holding either the old file or the new one, and
// the old one is never lost); both are made durable by fsyncing the
// directory. It holds the exclusive lock of the old file meanwhile, so no
// transaction is running on it.
func ReplaceFile(path, fresh, aside string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if f, err := os.Open(fresh); err != nil {
		return err
	} else {
		err := f.Sync()
		f.Close()
		if err != nil {
			return err
		}
	}
	old, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return openError(path, err)
	default:
		defer old.Close()
		unlock, err := flockWait(old, true, path, timeout)
		if err != nil {
			return err
		}
		defer unlock()
		if err := os.Link(path, aside); err != nil {
			return fmt.Errorf("store: keep %s as %s: %w", path, aside, err)
		}
	}
	if err := os.Rename(fresh, path); err != nil {
		return fmt.Errorf("store: put the rebuilt state in place of %s: %w", path, err)
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}

// LostLines are the buckets of a Salvaged.Lost map as a report prints
// them, sorted: "name: why", the whole file as "every bucket".
func LostLines(lost map[string]string) []string {
	names := make([]string, 0, len(lost))
	for b := range lost {
		names = append(names, b)
	}
	sort.Strings(names)
	lines := make([]string, len(names))
	for i, b := range names {
		name := b
		if name == "" {
			name = "every bucket"
		}
		lines[i] = name + ": " + lost[b]
	}
	return lines
}
