package load

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/plugin"
)

// TypeCapabilities is the *plugin.Error type (layer policy) of a plugin
// whose capability set cannot be computed (a tree too large to read, a
// manifest that no longer parses): policy cannot decide what it does not
// see, so the plugin is refused.
const TypeCapabilities = "capabilities-unreadable"

// Contents computes what policy reads of an installed plugin's tree (its
// capability set and findings, package capability) and keeps it by
// content digest: a tree whose trust check passed has the content its pin
// names, so its set is computed once, at install or at the first load,
// and read back at every later load. The key is the digest, the plugin's
// marketplace entry (which may define components), the name of the
// version directory (a plugin without a manifest name is named by it) and
// capability.Version, so a change of any of them computes the set again.
//
// With a directory (layout.Paths.Capabilities) the sets are kept in one
// file per key, written temp -> fsync -> rename; without one, in memory
// for the life of the Contents. A file that does not decode is computed
// again and replaced. The files are as trusted as the registry beside
// them: whoever can write the home can change either.
//
// Contents is safe for concurrent use.
type Contents struct {
	dir string
	mu  sync.Mutex
	mem map[string]*policy.Content
	// computed counts the sets computed from a tree (not read back).
	computed atomic.Int64
}

// NewContents returns a Contents that keeps its sets under dir ("" keeps
// them in memory only).
func NewContents(dir string) *Contents {
	return &Contents{dir: dir, mem: map[string]*policy.Content{}}
}

// Computed is how many sets were computed from a tree rather than read
// back.
func (c *Contents) Computed() int64 { return c.computed.Load() }

// contentsFile is the form of one file: the key it was written for, so a
// file renamed onto another key is not believed.
type contentsFile struct {
	Key     string          `json:"key"`
	Content *policy.Content `json:"content"`
}

// Of returns the content of r's tree, read with entry (its marketplace
// entry, or nil). Call it only for a tree whose trust check passed: the
// digest it is kept under is the record's pin.
func (c *Contents) Of(r cache.Record, entry *plugin.Entry) (*policy.Content, error) {
	if c == nil {
		return computeContent(r.InstallPath, entry)
	}
	if r.Digest == "" {
		c.computed.Add(1)
		return computeContent(r.InstallPath, entry)
	}
	key := contentKey(r, entry)
	c.mu.Lock()
	got, ok := c.mem[key]
	c.mu.Unlock()
	if ok {
		return got, nil
	}
	if got = c.read(key); got == nil {
		var err error
		c.computed.Add(1)
		if got, err = computeContent(r.InstallPath, entry); err != nil {
			return nil, err
		}
		c.write(key, got)
	}
	c.mu.Lock()
	c.mem[key] = got
	c.mu.Unlock()
	return got, nil
}

// Put records content as the content of r's tree: the installer computes
// it from the tree it just verified, so the next load reads it back.
func (c *Contents) Put(r cache.Record, entry *plugin.Entry, content *policy.Content) {
	if c == nil || r.Digest == "" || content == nil {
		return
	}
	key := contentKey(r, entry)
	c.mu.Lock()
	c.mem[key] = content
	c.mu.Unlock()
	c.write(key, content)
}

func computeContent(root string, entry *plugin.Entry) (*policy.Content, error) {
	rep, err := capability.Read(root, entry)
	if err != nil {
		return nil, err
	}
	return policy.ContentOf(rep), nil
}

// ReadsContent reports whether decisions of p can depend on a request's
// Content (*policy.Engine says so with ReadsContent: a capability key or
// admin Rego rules); a policy that does not say is assumed to, nil does
// not.
func ReadsContent(p Policy) bool {
	if p == nil {
		return false
	}
	if rc, ok := p.(interface{ ReadsContent() bool }); ok {
		return rc.ReadsContent()
	}
	return true
}

// ContentError is the error of a plugin whose content cannot be read for
// policy.
func ContentError(id plugin.ID, version string, err error) error {
	return &plugin.Error{Layer: plugin.LayerPolicy, Type: TypeCapabilities, Object: id.String() + " " + version,
		Err:  fmt.Errorf("the capability set policy decides on cannot be computed: %w", err),
		Hint: "run: wharf show " + id.String() + " (the plugin is refused until its tree can be read)"}
}

// contentKey is the one function that builds the key of a kept set: every
// input capability.Read depends on besides the tree, which the digest
// stands for.
func contentKey(r cache.Record, entry *plugin.Entry) string {
	h := sha256.New()
	h.Write([]byte("wharf capabilities v" + strconv.Itoa(capability.Version)))
	for _, s := range []string{r.Digest, filepath.Base(r.InstallPath)} {
		h.Write([]byte{0})
		h.Write([]byte(s))
	}
	h.Write([]byte{0})
	if entry != nil {
		b, err := json.Marshal(entry)
		if err != nil {
			b = []byte(fmt.Sprintf("unencodable entry %p", entry)) // never shared
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c *Contents) path(key string) string { return filepath.Join(c.dir, key+".json") }

// read returns the kept content of key, nil when there is none usable.
func (c *Contents) read(key string) *policy.Content {
	if c.dir == "" {
		return nil
	}
	b, err := os.ReadFile(c.path(key))
	if err != nil {
		return nil
	}
	var f contentsFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if dec.Decode(&f) != nil || f.Key != key || f.Content == nil {
		return nil
	}
	// Through ContentOf: its identity (the memo key) is computed from
	// what was read, never stored.
	return policy.ContentOf(&capability.Report{Capabilities: f.Content.Capabilities, Findings: f.Content.Findings})
}

// write keeps content under key; a failure only costs a later load the
// computation again.
func (c *Contents) write(key string, content *policy.Content) {
	if c.dir == "" {
		return
	}
	b, err := json.Marshal(contentsFile{Key: key, Content: content})
	if err != nil {
		return
	}
	if os.MkdirAll(c.dir, 0o755) != nil {
		return
	}
	_ = atomicfile.WriteFile(c.path(key), b, 0o644)
}

// Retain removes the kept sets that no record of recs can ask for again:
// every file under the directory whose key is neither contentKey(r,
// entry(r.ID)) nor contentKey(r, nil) for a record r (a runtime that has
// no marketplace entry for a plugin reads it with nil). It runs at garbage
// collection, so the directory does not grow with every version and entry
// a home ever had. The sets are a speed layer: removing one only costs a
// later load its computation. Files that are not sets (no 64-hex-digit
// name) are left alone. It returns the files removed.
func (c *Contents) Retain(recs []cache.Record, entry func(plugin.ID) *plugin.Entry) ([]string, error) {
	if c == nil || c.dir == "" {
		return nil, nil
	}
	live := map[string]bool{}
	for _, r := range recs {
		if r.Digest == "" {
			continue
		}
		live[contentKey(r, nil)] = true
		if e := entry(r.ID); e != nil {
			live[contentKey(r, e)] = true
		}
	}
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var removed []string
	for _, d := range ents {
		key, ok := strings.CutSuffix(d.Name(), ".json")
		if !ok || !isKey(key) || live[key] || !d.Type().IsRegular() {
			continue
		}
		if err := os.Remove(c.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, err
		}
		c.mu.Lock()
		delete(c.mem, key)
		c.mu.Unlock()
		removed = append(removed, c.path(key))
	}
	return removed, nil
}

// isKey reports whether s has the form contentKey gives: 64 lowercase hex
// digits.
func isKey(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}
