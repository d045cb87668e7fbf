package agent

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/plugin"
)

// The index file (layout.Paths.AgentIndex) keeps, per installed version
// dir, the components a load parsed from it, so that the cache-only loader
// of the next session does not read and parse every manifest and Markdown
// file again. It lives under WHARF_HOME and is only an accelerator: the
// full loader never reads it. Earlier versions kept it gob-encoded
// (layout.Paths.AgentLegacyIndex); saving the index removes that file.

// indexFormat changes whenever what an entry holds changes, its key
// included; an index of another format is ignored, so every entry misses
// once and is written again. 6: the key appends the marketplace entry's
// fields (appendEntry) instead of its JSON.
const indexFormat = 6

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
	file   string
	legacy string // where earlier versions kept the index; removed on save

	mu      sync.Mutex
	loaded  bool
	entries map[string]indexEntry // install path → entry
	dirty   bool
}

type indexEntry struct {
	Key   string
	Comps []Component
	Deps  []plugin.Dependency
	// Failed describes the components the plugin declares that cannot be
	// used (plugin.FailedComponent.String).
	Failed []string
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
	data, err := readBounded(x.file, maxIndex)
	if err != nil {
		return
	}
	if entries, err := decodeIndex(data); err == nil {
		x.entries = entries
	}
}

// readBounded reads a whole file that may be at most limit bytes.
func readBounded(file string, limit int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than %d", file, fi.Size(), limit)
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	return b, nil
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
	data := encodeIndex(x.entries)
	x.dirty = false
	x.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(x.file), 0o755); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(x.file, data, 0o644); err != nil {
		return err
	}
	if x.legacy == "" {
		return nil
	}
	if err := os.Remove(x.legacy); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// indexKey hashes everything an index entry of r depends on. The fields are
// appended to one buffer and hashed at once: it runs for every plugin of
// every load, and hashing each small field separately cost more than the
// hash.
func indexKey(r cache.Record, entry *plugin.Entry, x expander) string {
	var stack [4096]byte
	var h hash.Hash
	b := keyStrs(stack[:0], r.ID.Name, r.ID.Source, r.Version, r.InstallPath, r.Digest, x.root, x.data, x.project)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(x.uc)))
	for _, k := range slices.Sorted(maps.Keys(x.uc)) {
		b = keyStrs(b, k, x.uc[k])
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(x.held)))
	for _, k := range x.held {
		b = keyStrs(b, k)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(r.Fingerprint.Entries)))
	for _, e := range r.Fingerprint.Entries {
		b = keyStrs(b, e.Path, e.Kind, e.Hash)
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Size))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Mtime))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Ctime))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Mode))
		if len(b) > keySpill {
			if h == nil {
				h = sha256.New()
			}
			h.Write(b)
			b = b[:0]
		}
	}
	b = appendEntry(b, entry)
	var sum [sha256.Size]byte
	if h == nil {
		sum = sha256.Sum256(b)
	} else {
		h.Write(b)
		h.Sum(sum[:0])
	}
	return hex.EncodeToString(sum[:])
}

// keySpill is how full indexKey lets its stack buffer get before it hashes
// what it holds and starts again. A plugin of a few hundred files has a
// fingerprint of tens of kilobytes; growing one buffer to hold it cost a
// session start fresh memory, which is a page fault per 4 KiB. The sum is
// the same either way.
var keySpill = 3 << 10

// normalize puts c in the form an index round trip preserves: empty maps and
// slices become nil, so a component read from the index equals one parsed
// from the tree.
// It also seals c (computes its content sum).
func normalize(c *Component) {
	defer c.seal()
	if c.Meta.Len() == 0 {
		c.Meta = Meta{}
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
