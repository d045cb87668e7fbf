package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"os"
	"path/filepath"
	"sync"

	"github.com/wharfhq/wharf/atomicfile"
	"github.com/wharfhq/wharf/plugin"
	"github.com/wharfhq/wharf/policy"
	"github.com/wharfhq/wharf/settings"
)

// Policy is what the loader asks before it loads a plugin, a surface of
// components, a hook or a session plugin dir. *policy.Engine implements it.
// Implementations must be safe for concurrent use, and Decide must be a pure
// function of the request and Version: the loader memoizes decisions by
// version.
type Policy interface {
	Decide(ctx context.Context, req policy.Request) (policy.Decision, error)
	Version() string
}

// Decisions are memoized between processes in layout.Paths.AgentDecisions.

// maxMemo bounds the memo file read at startup.
const maxMemo = 8 << 20

// decider memoizes policy decisions for one policy version. A decision is
// a pure function of the request and the policy version (which hashes every
// input document and module), so a memo entry is valid exactly as long as
// the version is the same; a new version starts an empty memo.
type decider struct {
	p    Policy
	file string // "" keeps the memo in memory only

	mu      sync.Mutex
	version string
	m       map[string]policy.Decision
	dirty   bool
	loaded  bool
}

type memoDoc struct {
	Version   string                     `json:"version"`
	Build     string                     `json:"build"` // policy.CodeStamp of the build that made it
	Decisions map[string]policy.Decision `json:"decisions"`
}

// begin prepares the memo for the engine's current version.
func (d *decider) begin() {
	if d.p == nil {
		return
	}
	v := d.p.Version()
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.loaded && d.file != "" {
		d.loaded = true
		if doc, ok := readMemo(d.file); ok && doc.Version == v {
			d.version, d.m = v, doc.Decisions
			return
		}
	}
	if d.version != v || d.m == nil {
		d.version, d.m, d.dirty = v, map[string]policy.Decision{}, d.file != ""
	}
}

func readMemo(file string) (memoDoc, bool) {
	f, err := os.Open(file)
	if err != nil {
		return memoDoc{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() > maxMemo {
		return memoDoc{}, false
	}
	var doc memoDoc
	if err := gob.NewDecoder(bufio.NewReader(f)).Decode(&doc); err != nil || doc.Decisions == nil || doc.Build != policy.CodeStamp() {
		return memoDoc{}, false
	}
	return doc, true
}

// save writes the memo when it gained decisions. A failure only costs the
// next process the evaluations again, so it is returned as a warning.
func (d *decider) save() error {
	d.mu.Lock()
	if !d.dirty || d.file == "" {
		d.mu.Unlock()
		return nil
	}
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(memoDoc{Version: d.version, Build: policy.CodeStamp(), Decisions: d.m})
	d.dirty = false
	d.mu.Unlock()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(d.file), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(d.file, buf.Bytes(), 0o644)
}

// appendMemoKey appends the memo key of r to dst: every field of a request
// the loader makes, NUL-separated.
func appendMemoKey(dst []byte, r policy.Request) []byte {
	dst = append(dst, r.Action...)
	dst = append(dst, 0)
	dst = append(append(append(dst, r.Plugin.Name...), '@'), r.Plugin.Source...)
	for _, s := range []string{string(r.Surface), r.From, r.Path, r.Marketplace.Name} {
		dst = append(dst, 0)
		dst = append(dst, s...)
	}
	dst = append(dst, 0)
	if s := r.Marketplace.Source; s != nil {
		dst = append(dst, s.Key()...)
		if s.Source == settings.KindDirectory || s.Source == settings.KindFile {
			// Policy matches a local source by its resolved path: a link
			// repointed since the decision was memoized is a new request.
			dst = append(dst, 0)
			dst = append(dst, plugin.ResolvePath(s.Path)...)
		}
	}
	return dst
}

// decide returns the decision for req, from the memo when possible. An
// evaluation error is never memoized and fails closed. A memo hit, the
// common case at startup, allocates nothing.
func (d *decider) decide(ctx context.Context, req policy.Request) (policy.Decision, error) {
	if d.p == nil {
		return policy.Decision{Allowed: true}, nil
	}
	var buf [256]byte
	k := appendMemoKey(buf[:0], req)
	d.mu.Lock()
	dec, ok := d.m[string(k)]
	d.mu.Unlock()
	if ok {
		return dec, nil
	}
	dec, err := d.p.Decide(ctx, req)
	if err != nil {
		return dec, err
	}
	d.mu.Lock()
	if d.m != nil && (dec.PolicyVersion == "" || dec.PolicyVersion == d.version) {
		d.m[string(k)] = dec
		d.dirty = d.file != ""
	}
	d.mu.Unlock()
	return dec, nil
}

// check is decide in error form: nil when allowed.
func (d *decider) check(ctx context.Context, req policy.Request) error {
	dec, err := d.decide(ctx, req)
	if err != nil {
		return err
	}
	return dec.Err(req)
}
