package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"
)

// CorruptError is a bbolt file that cannot be used as a store: empty,
// truncated, with no valid meta page, or with pages that do not hold what
// its meta page says. It wraps ErrCorrupt. The file is left as it is:
// nothing in this package replaces or repairs it.
type CorruptError struct {
	Path   string
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("store: %s is damaged: %s; to keep it aside and rebuild the state from the plugin cache, run: wharf doctor --repair", e.Path, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// The parts of bbolt's on-disk format that checkBoltFile reads (bbolt
// v1.x, internal/common): a 16-byte page header (id, flags, count,
// overflow), then, on pages 0 and 1, the meta.
const (
	boltPageHeader   = 16
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	boltMetaSize     = 64 // magic..txid (56 bytes) + checksum
	boltBranchPage   = 0x01
	boltLeafPage     = 0x02
	boltFreelistPage = 0x10
	boltNoFreelist   = ^uint64(0)
)

type boltMeta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	hwm      uint64 // pgid: the high water mark, in pages
	txid     uint64
}

// readMeta decodes and validates the meta at off; ok is false when the
// magic, version or checksum is wrong (a torn or overwritten page).
func readMeta(r io.ReaderAt, off int64) (boltMeta, bool) {
	b := make([]byte, boltPageHeader+boltMetaSize)
	if _, err := r.ReadAt(b, off); err != nil {
		return boltMeta{}, false
	}
	m := b[boltPageHeader:]
	le := binary.NativeEndian
	if le.Uint32(m[0:]) != boltMagic || le.Uint32(m[4:]) != boltVersion {
		return boltMeta{}, false
	}
	h := fnv.New64a()
	h.Write(m[:56])
	if h.Sum64() != le.Uint64(m[56:]) {
		return boltMeta{}, false
	}
	return boltMeta{pageSize: le.Uint32(m[8:]), root: le.Uint64(m[16:]), freelist: le.Uint64(m[32:]),
		hwm: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}, true
}

// bestMeta returns the meta bbolt would use: the valid one of pages 0 and
// 1 with the higher transaction id (page 1 is found with page 0's page
// size, else the OS page size, as bbolt does).
func bestMeta(r io.ReaderAt) (boltMeta, bool) {
	m0, ok0 := readMeta(r, 0)
	def := int64(os.Getpagesize())
	if ok0 {
		def = int64(m0.pageSize)
	}
	m1, ok1 := readMeta(r, def)
	switch {
	case ok0 && ok1 && m1.txid > m0.txid:
		return m1, true
	case ok0:
		return m0, true
	}
	return m1, ok1
}

// checkBoltFile reads the meta pages, the root page and the freelist of an
// existing bbolt file, the parts bbolt reads at Open, and says what is
// wrong with them before bbolt maps the file: bbolt treats an empty file as
// a new database (silently forgetting everything), faults on pages past the
// end of a truncated file (a crash, not an error), and panics on a freelist
// page that is not one. A missing file is fine (Open creates it).
func checkBoltFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &CorruptError{Path: path, Reason: "it is not a regular file (" + fi.Mode().Type().String() + ")"}
	}
	size := fi.Size()
	if size == 0 {
		return &CorruptError{Path: path, Reason: "it is empty (0 bytes); the state it held is gone"}
	}
	m, ok := bestMeta(f)
	if !ok {
		return &CorruptError{Path: path, Reason: fmt.Sprintf("no valid meta page (%d bytes; not a bbolt file, or its first pages are overwritten)", size)}
	}
	ps := int64(m.pageSize)
	if ps < 512 || ps > 1<<20 || ps&(ps-1) != 0 {
		return &CorruptError{Path: path, Reason: fmt.Sprintf("page size %d in its meta page", ps)}
	}
	if m.hwm < 4 || m.hwm > uint64(1<<62)/uint64(ps) {
		return &CorruptError{Path: path, Reason: fmt.Sprintf("its meta page says it has %d pages", m.hwm)}
	}
	if need := int64(m.hwm) * ps; size < need {
		return &CorruptError{Path: path, Reason: fmt.Sprintf("truncated: %d bytes, its meta page needs %d (%d pages of %d)", size, need, m.hwm, ps)}
	}
	if m.root < 2 || m.root >= m.hwm {
		return &CorruptError{Path: path, Reason: fmt.Sprintf("root page %d outside pages 2..%d", m.root, m.hwm-1)}
	}
	hdr := make([]byte, boltPageHeader)
	if _, err := f.ReadAt(hdr, int64(m.root)*ps); err != nil {
		return &CorruptError{Path: path, Reason: fmt.Sprintf("root page %d: %v", m.root, err)}
	}
	if fl := binary.NativeEndian.Uint16(hdr[8:]); fl != boltLeafPage && fl != boltBranchPage {
		return &CorruptError{Path: path, Reason: fmt.Sprintf("root page %d has page type %#x, not a bucket page", m.root, fl)}
	}
	if m.freelist == boltNoFreelist {
		return nil
	}
	return checkFreelist(f, path, m, size)
}

// checkFreelist checks that the freelist page is one, that it fits in the
// file, and that every page it lists exists and is listed once.
func checkFreelist(f *os.File, path string, m boltMeta, size int64) error {
	ps := int64(m.pageSize)
	bad := func(format string, args ...any) error {
		return &CorruptError{Path: path, Reason: fmt.Sprintf("freelist (page %d): ", m.freelist) + fmt.Sprintf(format, args...)}
	}
	if m.freelist < 2 || m.freelist >= m.hwm {
		return bad("outside pages 2..%d", m.hwm-1)
	}
	off := int64(m.freelist) * ps
	hdr := make([]byte, boltPageHeader+8)
	if _, err := f.ReadAt(hdr, off); err != nil {
		return bad("%v", err)
	}
	le := binary.NativeEndian
	if fl := le.Uint16(hdr[8:]); fl != boltFreelistPage {
		return bad("page type %#x, not a freelist", fl)
	}
	overflow := int64(le.Uint32(hdr[12:]))
	span := (overflow + 1) * ps
	if uint64(m.freelist)+uint64(overflow) >= m.hwm || off+span > size {
		return bad("%d overflow pages run past the end of the data", overflow)
	}
	count, start := int64(le.Uint16(hdr[10:])), int64(boltPageHeader)
	if count == 0xFFFF {
		count, start = int64(le.Uint64(hdr[boltPageHeader:])), boltPageHeader+8
	}
	if count < 0 || start+count*8 > span {
		return bad("%d entries do not fit in %d bytes", count, span)
	}
	raw := make([]byte, count*8)
	if _, err := f.ReadAt(raw, off+start); err != nil {
		return bad("%v", err)
	}
	ids := make([]uint64, count)
	for i := range ids {
		ids[i] = le.Uint64(raw[i*8:])
		if ids[i] < 2 || ids[i] >= m.hwm {
			return bad("lists page %d, outside pages 2..%d", ids[i], m.hwm-1)
		}
	}
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return bad("lists page %d twice", ids[i])
		}
	}
	return nil
}

// checkBoltFileLocked is checkBoltFile under a shared lock of the file, so
// that what it reads is not a transaction another process is writing (a
// file being created is empty until its creator writes the first pages). It
// waits up to timeout for writers.
func checkBoltFileLocked(path string, timeout time.Duration) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := tryLockFile(f, false)
		if err != nil {
			return err
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("store: %s: %w (waited %s); wait for the other command to finish, or stop it", path, ErrLocked, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer unlockFile(f)
	return checkBoltFile(path)
}

// CheckFile reports what is wrong with the bbolt file at path without
// opening it as a database: nil when its structure is sound (or it does not
// exist), a *CorruptError when it is damaged, another error (a permission
// error, ErrLocked) when it cannot be read.
func CheckFile(path string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return checkBoltFileLocked(path, timeout)
}
