package policy

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/plugin"
)

// An engine memoizes its decisions in memory, per policy version, under the
// key memoKey builds (an engine opened WithCache keeps that cache instead).
// WithMemoFile keeps them between processes in the file at path too: the
// decisions memoized for the policy version in force are read from it on
// the first decision, and SaveMemo writes the ones added since. A decision
// is a function of the request, the policy version (a hash of every input
// the evaluation reads) and the code that evaluates it, so an entry is used
// only under the version and by the build (CodeStamp) it was made under; a
// file of another version or build, or one that cannot be read, is
// ignored. A decision answered from the memo compiles nothing.
func WithMemoFile(path string) Option { return func(e *Engine) { e.memo = &memo{path: path} } }

// MemoFile is the memo file's path (see WithMemoFile), "" without one.
func (e *Engine) MemoFile() string {
	if e == nil || e.memo == nil {
		return ""
	}
	return e.memo.path
}

// LoadMemo reads the memo file now (it is otherwise read on the first
// decision), so a caller can overlap the read with its own startup work.
// It does nothing without a memo file.
func (e *Engine) LoadMemo() {
	mm := e.memo
	if mm == nil {
		return
	}
	mm.mu.Lock()
	mm.forVersion(e.Version())
	mm.mu.Unlock()
}

// MemoHits is the number of decisions the memo (in memory, and read from
// the memo file, see WithMemoFile) answered in this process without an
// evaluation: what a caller measuring
// its cold start, or a test, checks that the memo carried.
func (e *Engine) MemoHits() int64 {
	mm := e.memo
	if mm == nil {
		return 0
	}
	return mm.hits.Load()
}

// memoHeader starts every memo file; a file without it is not a memo.
// memoKind is the part every format of the memo file starts with: a file
// of an earlier format is a memo too, replaced on save.
const (
	memoHeader = "wharf policy decision memo 2\n"
	memoKind   = "wharf policy decision memo "
)

// Bounds: the file read at first use, and the decisions kept per version.
const (
	memoMaxBytes   = 8 << 20
	memoMaxEntries = 4096
)

// TypeMemoWrite is the error type of a memo file that cannot be written.
const TypeMemoWrite = "policy-memo-write"

// memoDoc is a memo as read: the decisions of one policy version by memo
// key (see memoKey).
type memoDoc struct {
	Version   string
	Build     string // CodeStamp of the build that made it
	Decisions map[string]Decision
}

// memoFileDoc is the first part of a memo file's body, after the header:
// one line of JSON. A memo holds a few distinct decisions for many requests
// (most are plainly allowed), so each distinct decision is written once, and
// the rest of the file names, for every key, the index of its decision:
//
//	uvarint count, then per key: uvarint length, the key's bytes, uvarint index
//
// Keys are binary (memoKey separates fields with NUL bytes); as JSON object
// keys each NUL took six bytes and decoding them was most of a warm session
// start's reading of the memo.
type memoFileDoc struct {
	Version   string     `json:"version"`
	Build     string     `json:"build"`
	Decisions []Decision `json:"decisions"`
}

type memo struct {
	path   string
	saveMu sync.Mutex // one SaveMemo at a time, so an older snapshot never overwrites a newer one

	mu      sync.RWMutex
	read    bool    // the file has been read
	file    memoDoc // what it held, when it was a memo
	version string  // the version m belongs to
	m       map[string]Decision
	dirty   bool
	hits    atomic.Int64 // decisions answered from the memo
}

// forVersion makes m the memo of version v. Called with mu held.
func (mm *memo) forVersion(v string) {
	if !mm.read {
		mm.read = true
		if mm.path != "" {
			mm.file, _ = readMemo(mm.path)
		}
	}
	if mm.m != nil && mm.version == v {
		return
	}
	mm.version, mm.m, mm.dirty = v, map[string]Decision{}, false
	if mm.file.Version == v {
		// readMemo kept only decisions of the file's version, at most
		// memoMaxEntries of them: the memo starts from its map.
		mm.m, mm.file.Decisions = mm.file.Decisions, nil
	}
}

// get looks key up without allocating (the key is the caller's buffer).
func (mm *memo) get(v string, key []byte) (Decision, bool) {
	// The common case, the memo of v already in place, takes the lock
	// shared: workers deciding in parallel do not wait for each other.
	mm.mu.RLock()
	if mm.read && mm.m != nil && mm.version == v {
		d, ok := mm.m[string(key)]
		mm.mu.RUnlock()
		return mm.hit(d, ok)
	}
	mm.mu.RUnlock()
	mm.mu.Lock()
	defer mm.mu.Unlock()
	mm.forVersion(v)
	d, ok := mm.m[string(key)]
	return mm.hit(d, ok)
}

func (mm *memo) hit(d Decision, ok bool) (Decision, bool) {
	if !ok {
		return Decision{}, false
	}
	mm.hits.Add(1)
	return d.clone(), true
}

func (mm *memo) put(v string, key []byte, d Decision) {
	if d.PolicyVersion != v {
		return
	}
	mm.mu.Lock()
	defer mm.mu.Unlock()
	mm.forVersion(v)
	if _, ok := mm.m[string(key)]; ok || len(mm.m) >= memoMaxEntries {
		return
	}
	mm.m[string(key)] = d.clone()
	mm.dirty = true
}

// readMemo reads a memo file; ok is false when there is none or it is not
// a readable memo (missing, too large, another kind of file, corrupt).
func readMemo(path string) (memoDoc, bool) {
	f, err := os.Open(path)
	if err != nil {
		return memoDoc{}, false
	}
	defer f.Close()
	// One read into a buffer of the file's size: a session start reads
	// the memo of every decision of every plugin, and growing a buffer
	// through bufio and io.ReadAll allocated twice the file.
	fi, err := f.Stat()
	if err != nil || fi.Size() > memoMaxBytes || fi.Size() < int64(len(memoHeader)) {
		return memoDoc{}, false
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil || string(data[:len(memoHeader)]) != memoHeader {
		return memoDoc{}, false
	}
	// A file that is longer than it was when stat answered is being
	// written: not a memo to read.
	if n, _ := f.Read(make([]byte, 1)); n != 0 {
		return memoDoc{}, false
	}
	return decodeMemoIn(data[len(memoHeader):], true)
}

// decodeMemo reads a memo file's body (see memoFileDoc).
func decodeMemo(body []byte) (memoDoc, bool) { return decodeMemoIn(body, false) }

// decodeMemoIn is decodeMemo; when owned, body is the caller's own buffer,
// never modified afterwards, and the keys are slices of it rather than of
// a copy.
func decodeMemoIn(body []byte, owned bool) (memoDoc, bool) {
	nl := bytes.IndexByte(body, '\n')
	if nl < 0 {
		return memoDoc{}, false
	}
	var fd memoFileDoc
	if err := json.Unmarshal(body[:nl], &fd); err != nil || fd.Version == "" || fd.Build != CodeStamp() {
		return memoDoc{}, false
	}
	usable := make([]bool, len(fd.Decisions))
	for i, d := range fd.Decisions {
		// Only what Decide returns under this version.
		usable[i] = d.Allowed == (len(d.Reasons) == 0) && d.Reasons != nil && d.Warnings != nil && d.PolicyVersion == fd.Version
	}
	// The keys are slices of one string: one copy of the key bytes, or
	// none when the body is owned.
	var keys string
	if rest := body[nl+1:]; owned && len(rest) > 0 {
		keys = unsafe.String(&rest[0], len(rest))
	} else {
		keys = string(rest)
	}
	n, off, ok := memoUvarint(keys, 0)
	if !ok {
		return memoDoc{}, false
	}
	doc := memoDoc{Version: fd.Version, Build: fd.Build, Decisions: make(map[string]Decision, min(n, memoMaxEntries, uint64(len(keys))))}
	for range n {
		var l, i uint64
		if l, off, ok = memoUvarint(keys, off); !ok || l > uint64(len(keys)-off) {
			return memoDoc{}, false
		}
		k := keys[off : off+int(l)]
		if i, off, ok = memoUvarint(keys, off+int(l)); !ok {
			return memoDoc{}, false
		}
		if i >= uint64(len(fd.Decisions)) || !usable[i] || len(doc.Decisions) >= memoMaxEntries {
			continue
		}
		doc.Decisions[k] = fd.Decisions[i]
	}
	if off != len(keys) {
		return memoDoc{}, false
	}
	return doc, true
}

// memoUvarint reads the unsigned varint at s[off:] as encoding/binary
// writes it, and the offset after it.
func memoUvarint(s string, off int) (uint64, int, bool) {
	var x uint64
	var shift uint
	for i := 0; off+i < len(s) && i < binary.MaxVarintLen64; i++ {
		c := s[off+i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, off, false
			}
			return x | uint64(c)<<shift, off + i + 1, true
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	return 0, off, false
}

// encodeMemo is the body of doc's memo file, its keys in sorted order.
func encodeMemo(doc memoDoc) ([]byte, error) {
	fd := memoFileDoc{Version: doc.Version, Build: doc.Build, Decisions: []Decision{}}
	index := map[string]int{}
	keys := make([]string, 0, len(doc.Decisions))
	for k := range doc.Decisions {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var tail []byte
	tail = binary.AppendUvarint(tail, uint64(len(keys)))
	for _, k := range keys {
		d := doc.Decisions[k]
		b, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		i, ok := index[string(b)]
		if !ok {
			i = len(fd.Decisions)
			index[string(b)] = i
			fd.Decisions = append(fd.Decisions, d)
		}
		tail = binary.AppendUvarint(tail, uint64(len(k)))
		tail = append(tail, k...)
		tail = binary.AppendUvarint(tail, uint64(i))
	}
	head, err := json.Marshal(fd)
	if err != nil {
		return nil, err
	}
	// json.Marshal writes no newline: the line ends where the keys start.
	return append(append(head, '\n'), tail...), nil
}

// SaveMemo writes the memo file (see WithMemoFile) when decisions were
// added since it was read, replacing it crash-safely. It does nothing
// without a memo file. A file that exists and is not a memo is left alone
// and reported: the path was probably meant for something else.
func (e *Engine) SaveMemo() error {
	mm := e.memo
	if mm == nil || mm.path == "" {
		return nil
	}
	mm.saveMu.Lock()
	defer mm.saveMu.Unlock()
	mm.mu.Lock()
	if !mm.dirty {
		mm.mu.Unlock()
		return nil
	}
	doc := memoDoc{Version: mm.version, Build: CodeStamp(), Decisions: make(map[string]Decision, len(mm.m))}
	for k, d := range mm.m {
		doc.Decisions[k] = d
	}
	mm.mu.Unlock()
	if err := checkReplaceable(mm.path); err != nil {
		return err
	}
	body, err := encodeMemo(doc)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(mm.path, append([]byte(memoHeader), body...), 0o644); err != nil {
		return plugin.Errorf(plugin.LayerPolicy, TypeMemoWrite, mm.path, "check that the directory is writable, or remove the memo option", "saving policy decisions: %v", err)
	}
	mm.mu.Lock()
	if mm.version == doc.Version && len(mm.m) == len(doc.Decisions) {
		mm.dirty = false
	}
	mm.file = doc
	mm.mu.Unlock()
	return nil
}

// checkReplaceable refuses to overwrite a non-empty file that does not
// start like a memo.
func checkReplaceable(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return plugin.Errorf(plugin.LayerPolicy, TypeMemoWrite, path, "check the file's permissions", "saving policy decisions: %v", err)
	}
	defer f.Close()
	head := make([]byte, len(memoKind))
	n, _ := io.ReadFull(f, head)
	if n == 0 || bytes.Equal(head[:n], []byte(memoKind)[:n]) {
		return nil
	}
	return plugin.Errorf(plugin.LayerPolicy, TypeMemoWrite, path, "point the memo at a file of its own, or remove this one",
		"%s is not a policy decision memo; not overwriting it", fmt.Sprint(path))
}
