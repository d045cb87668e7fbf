package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Bolt is the embedded bbolt backend.
type Bolt struct {
	db    *bolt.DB
	path  string
	watch *watchHub
	// commitMu keeps publishing in commit order: bbolt releases its writer
	// lock before Update returns.
	commitMu sync.Mutex
}

// OpenBolt opens (creating if needed) the bbolt file at path. If another
// process holds it, OpenBolt waits up to opts.LockTimeout and then fails with
// an error wrapping ErrLocked that names the file.
//
// An existing file is checked before bbolt maps it (see checkBoltFile): an
// empty, truncated or otherwise damaged file is a *CorruptError (wrapping
// ErrCorrupt), never silently a new empty store, never a crash. A file that
// cannot be read for lack of permission is an error wrapping
// fs.ErrPermission that says so.
func OpenBolt(path string, opts Options) (*Bolt, error) {
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, openError(path, fmt.Errorf("create directory %s: %w", filepath.Dir(path), err))
	}
	if err := checkBoltFile(path); err != nil {
		if errors.Is(err, ErrCorrupt) {
			// Look again under the file's lock: a file another process is
			// creating or committing to may look damaged mid-write.
			err = checkBoltFileLocked(path, timeout)
		}
		if err != nil {
			return nil, openError(path, err)
		}
	}
	db, err := openGuarded(path, &bolt.Options{Timeout: timeout, ReadOnly: opts.ReadOnly})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("store: %s: %w (waited %s); wait for the other command to finish, or stop it", path, ErrLocked, timeout)
		}
		return nil, openError(path, err)
	}
	b := &Bolt{db: db, path: path}
	b.watch = newWatchHub(&b.commitMu)
	return b, nil
}

// openError names path and what kind of failure err is. Only a damaged
// file is a *CorruptError; a permission problem says so (moving the file
// aside would not fix it).
func openError(path string, err error) error {
	switch {
	case errors.Is(err, ErrCorrupt), errors.Is(err, ErrLocked):
		return err
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("store: %s: permission denied (%w); this is a permission problem, not damage: check the owner and mode of the file and its directory", path, err)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrVersionMismatch), errors.Is(err, bolterrors.ErrChecksum):
		return &CorruptError{Path: path, Reason: err.Error()}
	}
	return fmt.Errorf("store: open %s: %w", path, err)
}

// openGuarded is bolt.Open turning a panic (bbolt panics on some damaged
// pages it reads while opening) into a *CorruptError, and closing the file
// bbolt had opened, so that its lock is released.
func openGuarded(path string, o *bolt.Options) (db *bolt.DB, err error) {
	var f *os.File
	o.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		ff, err := os.OpenFile(name, flag, perm)
		f = ff
		return ff, err
	}
	defer func() {
		if p := recover(); p != nil {
			if f != nil {
				f.Close()
			}
			db, err = nil, &CorruptError{Path: path, Reason: fmt.Sprintf("reading it failed: %v", p)}
		}
	}()
	return bolt.Open(path, 0o600, o)
}

// guard turns a panic of bbolt while reading damaged pages in a
// transaction into a *CorruptError.
func (b *Bolt) guard(err *error) {
	if p := recover(); p != nil {
		*err = &CorruptError{Path: b.path, Reason: fmt.Sprintf("reading it failed: %v", p)}
	}
}

// Path returns the file's path.
func (b *Bolt) Path() string { return b.path }

// Close releases the file and its lock, and closes the watch channels.
func (b *Bolt) Close() error {
	b.watch.close()
	return b.db.Close()
}

// View implements Store.
func (b *Bolt) View(fn func(Reader) error) (err error) {
	defer b.guard(&err)
	return b.db.View(func(tx *bolt.Tx) error { return fn(boltTx{tx: tx}) })
}

// Update implements Store. Watchers hear of the changes after the commit.
func (b *Bolt) Update(fn func(Tx) error) (err error) {
	b.commitMu.Lock()
	defer b.commitMu.Unlock()
	defer b.guard(&err)
	changes := &changeSet{}
	err = b.db.Update(func(tx *bolt.Tx) error { return fn(boltTx{tx: tx, changes: changes}) })
	if err == nil {
		b.watch.publish(changes.events())
	}
	return err
}

// Watch implements Watcher for the commits made through this handle (bbolt
// is single-process: no other process can write the file while it is open).
func (b *Bolt) Watch(ctx context.Context, bucket string) (<-chan Event, error) {
	return b.watch.subscribe(ctx, bucket)
}

type boltTx struct {
	tx      *bolt.Tx
	changes *changeSet // nil in View
}

func (t boltTx) Get(bucket, key string) ([]byte, error) {
	bk := t.tx.Bucket([]byte(bucket))
	if bk == nil {
		return nil, ErrNotFound
	}
	v := bk.Get([]byte(key))
	if v == nil {
		return nil, ErrNotFound
	}
	return bytes.Clone(v), nil
}

func (t boltTx) List(bucket, prefix string) ([]KV, error) {
	var out []KV
	err := t.each(bucket, prefix, func(k string, v []byte) error {
		out = append(out, KV{Key: k, Value: bytes.Clone(v)})
		return nil
	})
	return out, err
}

// each is List without the copies of the values: bolt's bytes stay valid
// for the transaction, and Each's callers use them only during fn.
func (t boltTx) each(bucket, prefix string, fn func(key string, value []byte) error) error {
	bk := t.tx.Bucket([]byte(bucket))
	if bk == nil {
		return nil
	}
	c := bk.Cursor()
	p := []byte(prefix)
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		if err := fn(string(k), v); err != nil {
			return err
		}
	}
	return nil
}

func (t boltTx) ListAfter(bucket, after string, limit int) ([]KV, error) {
	bk := t.tx.Bucket([]byte(bucket))
	if bk == nil {
		return nil, nil
	}
	var out []KV
	c := bk.Cursor()
	k, v := c.Seek([]byte(after))
	if k != nil && string(k) == after {
		k, v = c.Next()
	}
	for ; k != nil && (limit <= 0 || len(out) < limit); k, v = c.Next() {
		out = append(out, KV{Key: string(k), Value: bytes.Clone(v)})
	}
	return out, nil
}

func (t boltTx) Put(bucket, key string, value []byte) error {
	if key == "" {
		return fmt.Errorf("store: put into %s: empty key", bucket)
	}
	bk, err := t.tx.CreateBucketIfNotExists([]byte(bucket))
	if err != nil {
		return fmt.Errorf("store: bucket %s: %w", bucket, err)
	}
	if err := bk.Put([]byte(key), value); err != nil {
		return err
	}
	t.changes.record(Event{Bucket: bucket, Key: key, Value: bytes.Clone(value)})
	return nil
}

func (t boltTx) Delete(bucket, key string) error {
	bk := t.tx.Bucket([]byte(bucket))
	if bk == nil {
		return nil
	}
	existed := bk.Get([]byte(key)) != nil
	if err := bk.Delete([]byte(key)); err != nil {
		return err
	}
	if existed {
		t.changes.record(Event{Bucket: bucket, Key: key, Deleted: true})
		// A bucket left empty that holds no sequence goes too: buckets
		// named by data (one per plugin in the fleet inventory) must not
		// pile up empty in the file. Reads of a missing bucket answer as
		// of an empty one.
		if k, _ := bk.Cursor().First(); k == nil && bk.Sequence() == 0 {
			if err := t.tx.DeleteBucket([]byte(bucket)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t boltTx) NextSequence(bucket string) (uint64, error) {
	bk, err := t.tx.CreateBucketIfNotExists([]byte(bucket))
	if err != nil {
		return 0, fmt.Errorf("store: bucket %s: %w", bucket, err)
	}
	return bk.NextSequence()
}
