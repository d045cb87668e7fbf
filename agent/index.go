package agent

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"

	"github.com/wharfhq/wharf/atomicfile"
	"github.com/wharfhq/wharf/cache"
	"github.com/wharfhq/wharf/plugin"
)

// indexFile keeps, per installed version dir, the components a load parsed
// from it, so that the cache-only loader of the next session does not read
// and parse every manifest and Markdown file again. It lives under
// WHARF_HOME and is only an accelerator: the full loader never reads it.
const indexFile = "agent/components.gob"

// indexFormat changes whenever what an entry holds changes; an index of
// another format is ignored.
const indexFormat = 2

// maxIndex bounds the index file read at startup.
const maxIndex = 64 << 20

// componentIndex is the parsed components of installed version dirs.
//
// An entry is used only when its key matches: the key hashes the version
// dir, its trust digest, its recorded stat fingerprint, the marketplace
// entry, and the data and project dirs substituted into it. Version dirs are
// never changed in place, and an entry is written only after the tree passed
// the trust check against that same fingerprint; so when the cache-only
// loader's fingerprint check passes again, the entry describes the tree on
// disk as far as the fingerprint can tell — exactly the guarantee the
// cache-only path gives without the index.
type componentIndex struct {
	file string

	mu      sync.Mutex
	loaded  bool
	entries map[string]indexEntry // install path → entry
	dirty   bool
}

type indexEntry struct {
	Key   string
	Comps []Component
	Sums  []string // Comps[i].sum, which gob does not see
	Deps  []plugin.Dependency
}

type indexDoc struct {
	Format  int
	Entries map[string]indexEntry
}

func (x *componentIndex) load() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.loaded {
		return
	}
	x.loaded = true
	x.entries = map[string]indexEntry{}
	if x.file == "" {
		return
	}
	f, err := os.Open(x.file)
	if err != nil {
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() > maxIndex {
		return
	}
	var doc indexDoc
	if err := gob.NewDecoder(bufio.NewReader(f)).Decode(&doc); err != nil || doc.Format != indexFormat || doc.Entries == nil {
		return
	}
	for p, e := range doc.Entries {
		if len(e.Sums) != len(e.Comps) {
			delete(doc.Entries, p)
			continue
		}
		for i := range e.Comps {
			e.Comps[i].sum = e.Sums[i]
		}
	}
	x.entries = doc.Entries
}

func (x *componentIndex) get(path, key string) (indexEntry, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.entries[path]
	if !ok || e.Key != key {
		return indexEntry{}, false
	}
	return e, true
}

func (x *componentIndex) put(path string, e indexEntry) {
	e.Sums = make([]string, len(e.Comps))
	for i, c := range e.Comps {
		e.Sums[i] = c.sum
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.entries[path] = e
	x.dirty = true
}

// save drops entries of version dirs that are no longer installed and
// writes the index when it changed.
func (x *componentIndex) save(recs []cache.Record) error {
	x.mu.Lock()
	keep := make(map[string]bool, len(recs))
	for _, r := range recs {
		keep[r.InstallPath] = true
	}
	for p := range x.entries {
		if !keep[p] {
			delete(x.entries, p)
			x.dirty = true
		}
	}
	if !x.dirty || x.file == "" {
		x.mu.Unlock()
		return nil
	}
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(indexDoc{Format: indexFormat, Entries: x.entries})
	x.dirty = false
	x.mu.Unlock()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(x.file), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(x.file, buf.Bytes(), 0o644)
}

// indexKey hashes everything an index entry of r depends on.
func indexKey(r cache.Record, entry *plugin.Entry, x expander) string {
	h := sha256.New()
	var n [8]byte
	str := func(s string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	num := func(v int64) {
		binary.LittleEndian.PutUint64(n[:], uint64(v))
		h.Write(n[:])
	}
	str(r.ID.String())
	str(r.Version)
	str(r.InstallPath)
	str(r.Digest)
	str(x.root)
	str(x.data)
	str(x.project)
	num(int64(len(r.Fingerprint.Entries)))
	for _, e := range r.Fingerprint.Entries {
		str(e.Path)
		str(e.Kind)
		str(e.Hash)
		num(e.Size)
		num(e.Mtime)
		num(int64(e.Mode))
	}
	if entry != nil {
		b, _ := json.Marshal(entry)
		str(string(b))
	} else {
		str("")
	}
	return hex.EncodeToString(h.Sum(nil))
}

// normalize puts c in the form an index round trip preserves: empty maps and
// slices become nil, so a component read from the index equals one parsed
// from the tree.
// It also seals c (computes its content sum).
func normalize(c *Component) {
	defer c.seal()
	if len(c.Meta) == 0 {
		c.Meta = nil
	}
	if c.Hook != nil {
		if len(c.Hook.Matchers) == 0 {
			c.Hook.Matchers = nil
		}
		for i := range c.Hook.Matchers {
			m := &c.Hook.Matchers[i]
			if len(m.Hooks) == 0 {
				m.Hooks = nil
			}
			for j := range m.Hooks {
				if len(m.Hooks[j].Extra) == 0 {
					m.Hooks[j].Extra = nil
				}
			}
		}
	}
	if s := c.MCP; s != nil {
		s.Args = nilIfEmpty(s.Args)
		s.Env = nilMapIfEmpty(s.Env)
		s.Headers = nilMapIfEmpty(s.Headers)
		if len(s.Extra) == 0 {
			s.Extra = nil
		}
	}
	if s := c.LSP; s != nil {
		s.Args = nilIfEmpty(s.Args)
		s.Env = nilMapIfEmpty(s.Env)
		s.ExtensionToLanguage = nilMapIfEmpty(s.ExtensionToLanguage)
		if len(s.InitializationOptions) == 0 {
			s.InitializationOptions = nil
		}
		if len(s.Settings) == 0 {
			s.Settings = nil
		}
		if len(s.Extra) == 0 {
			s.Extra = nil
		}
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func nilMapIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
