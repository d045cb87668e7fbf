package agent

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"unsafe"

	"github.com/wharfhq/wharf/internal/client/diskrec"
	"github.com/wharfhq/wharf/plugin"
)

// The component index is read at every startup and holds every component of
// every installed plugin (2,000 for 200 plugins), so it has its own compact
// encoding rather than gob: gob's per-value reflection cost about as much as
// the rest of the load together. The layout:
//
//	indexMagic, uvarint indexFormat, uvarint entries, then per entry:
//	  str installPath, str key, uvarint deps (str name, marketplace, version),
//	  uvarint components, then per component:
//	    byte same: bit i set when field i of (kind, plugin name, plugin
//	        source, source, root, dataDir) is that of the entry's previous
//	        component, and so not written again
//	    str each of those fields not the same, then name, local, path,
//	        description, sum
//	    dict meta
//	    byte parts (1 hook, 2 MCP server, 4 LSP server), then each present:
//	    hook: str event, uvarint matchers (str matcher, uvarint hooks
//	          (str type, command, prompt, varint timeout, raw extra))
//	    MCP:  str type, command, list args, dict env, str cwd, url,
//	          dict headers, raw extra
//	    LSP:  str command, list args, dict env, str transport,
//	          dict extensionToLanguage, str initializationOptions,
//	          str settings, raw extra
//
// str is a uvarint length and the bytes; list a uvarint count and strs;
// dict and raw a uvarint count and sorted key/value strs. An empty list,
// dict or raw map decodes as nil, as normalize leaves it. codecFields in the
// tests fails when one of these types gains a field the codec does not know.
const indexMagic = "wharf-agent-index\x00"

var errIndex = errors.New("malformed component index")

type indexWriter struct{ b []byte }

func (w *indexWriter) uvarint(n int) { w.b = binary.AppendUvarint(w.b, uint64(n)) }

func (w *indexWriter) str(ss ...string) {
	for _, s := range ss {
		w.uvarint(len(s))
		w.b = append(w.b, s...)
	}
}

func (w *indexWriter) list(l []string) {
	w.uvarint(len(l))
	w.str(l...)
}

func (w *indexWriter) dict(m map[string]string) {
	w.uvarint(len(m))
	for _, k := range sortedKeys(m) {
		w.str(k, m[k])
	}
}

// meta writes m as dict writes a map of the same pairs.
func (w *indexWriter) meta(m Meta) {
	w.uvarint(m.Len())
	for k, v := range m.All() {
		w.str(k, v)
	}
}

func (w *indexWriter) raw(m map[string]json.RawMessage) {
	w.uvarint(len(m))
	for _, k := range sortedKeys(m) {
		w.str(k, string(m[k]))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func encodeIndex(entries map[string]indexEntry) []byte {
	w := &indexWriter{b: make([]byte, 0, 64<<10)}
	w.b = append(w.b, indexMagic...)
	w.uvarint(indexFormat)
	w.uvarint(len(entries))
	for _, p := range sortedKeys(entries) {
		e := entries[p]
		w.str(p, e.Key)
		w.uvarint(len(e.Deps))
		for _, d := range e.Deps {
			w.str(d.Name, d.Marketplace, d.Version)
		}
		w.uvarint(len(e.Comps))
		for i := range e.Comps {
			var prev *Component
			if i > 0 {
				prev = &e.Comps[i-1]
			}
			w.component(&e.Comps[i], prev)
		}
		w.uvarint(len(e.Failed))
		w.str(e.Failed...)
	}
	return w.b
}

// repeated are the fields of a component that its plugin's other
// components mostly share, in the order of the same byte's bits: written
// once per run of equal values, they are about a third of the index.
func repeated(c *Component) [6]string {
	return [6]string{string(c.Kind), c.Plugin.Name, c.Plugin.Source, c.Source, c.Root, c.DataDir}
}

// component writes c, the fields it shares with prev (the entry's previous
// component, nil for the first) as bits of the same byte.
func (w *indexWriter) component(c, prev *Component) {
	f := repeated(c)
	var same byte
	if prev != nil {
		pf := repeated(prev)
		for i := range f {
			if f[i] == pf[i] {
				same |= 1 << i
			}
		}
	}
	w.b = append(w.b, same)
	for i := range f {
		if same&(1<<i) == 0 {
			w.str(f[i])
		}
	}
	w.str(c.Name, c.Local, c.Path, c.Description, c.sum)
	w.meta(c.Meta)
	var parts byte
	if c.Hook != nil {
		parts |= 1
	}
	if c.MCP != nil {
		parts |= 2
	}
	if c.LSP != nil {
		parts |= 4
	}
	w.b = append(w.b, parts)
	if h := c.Hook; h != nil {
		w.str(string(h.Event))
		w.uvarint(len(h.Matchers))
		for _, m := range h.Matchers {
			w.str(m.Matcher)
			w.uvarint(len(m.Hooks))
			for _, k := range m.Hooks {
				w.str(k.Type, k.Command, k.Prompt)
				w.b = binary.AppendVarint(w.b, int64(k.Timeout))
				w.raw(k.Extra)
			}
		}
	}
	if s := c.MCP; s != nil {
		w.str(s.Type, s.Command)
		w.list(s.Args)
		w.dict(s.Env)
		w.str(s.Cwd, s.URL)
		w.dict(s.Headers)
		w.raw(s.Extra)
	}
	if s := c.LSP; s != nil {
		w.str(s.Command)
		w.list(s.Args)
		w.dict(s.Env)
		w.str(s.Transport)
		w.dict(s.ExtensionToLanguage)
		w.str(string(s.InitializationOptions), string(s.Settings))
		w.raw(s.Extra)
	}
}

// indexReader reads the index's composite values over a diskrec.Reader.
// Every string it returns is a slice of the input, which the caller never
// modifies, so decoding allocates the containers (components, maps,
// configurations) and no string data; the pairs of every component's Meta
// share a few large slices (slab).
type indexReader struct {
	*diskrec.Reader
	slab []string
}

// meta reads a dict as a Meta. The writer sorts the keys; a dict whose
// keys are not sorted and distinct is malformed.
func (r *indexReader) meta() Meta {
	n := r.Count()
	if n == 0 {
		return Meta{}
	}
	if cap(r.slab)-len(r.slab) < 2*n {
		r.slab = make([]string, 0, max(2*n, 1024))
	}
	start := len(r.slab)
	for range n {
		r.slab = append(r.slab, r.Str(), r.Str())
	}
	kv := r.slab[start:len(r.slab):len(r.slab)]
	for i := 2; i < len(kv); i += 2 {
		if kv[i-2] >= kv[i] {
			r.Fail("front-matter keys out of order")
			return Meta{}
		}
	}
	return Meta{kv: kv}
}

func (r *indexReader) list() []string {
	n := r.Count()
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.Str()
	}
	return out
}

func (r *indexReader) dict() map[string]string {
	n := r.Count()
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := r.Str()
		m[k] = r.Str()
	}
	return m
}

func (r *indexReader) raw() map[string]json.RawMessage {
	n := r.Count()
	if n == 0 {
		return nil
	}
	m := make(map[string]json.RawMessage, n)
	for range n {
		k := r.Str()
		m[k] = json.RawMessage(r.Str())
	}
	return m
}

// decodeIndex reads an index written by encodeIndex. data must not be
// modified afterwards: the decoded strings share its memory.
func decodeIndex(data []byte) (map[string]indexEntry, error) {
	if len(data) < len(indexMagic) || string(data[:len(indexMagic)]) != indexMagic {
		return nil, fmt.Errorf("%w: not an index file", errIndex)
	}
	r := indexReader{Reader: diskrec.NewReader(unsafe.String(unsafe.SliceData(data), len(data)), len(indexMagic), func(what string, off int) error {
		return fmt.Errorf("%w: %s at byte %d", errIndex, what, off)
	})}
	if f := r.Uvarint(); f != indexFormat || r.Err() != nil {
		return nil, fmt.Errorf("%w: format %d, want %d", errIndex, f, indexFormat)
	}
	n := r.Count()
	entries := make(map[string]indexEntry, n)
	for range n {
		p, key := r.Str(), r.Str()
		e := indexEntry{Key: key}
		if nd := r.Count(); nd > 0 {
			e.Deps = make([]plugin.Dependency, nd)
			for i := range e.Deps {
				e.Deps[i] = plugin.Dependency{Name: r.Str(), Marketplace: r.Str(), Version: r.Str()}
			}
		}
		if nc := r.Count(); nc > 0 {
			e.Comps = make([]Component, nc)
			for i := range e.Comps {
				var prev *Component
				if i > 0 {
					prev = &e.Comps[i-1]
				}
				r.component(&e.Comps[i], prev)
			}
		}
		if nf := r.Count(); nf > 0 {
			e.Failed = make([]string, nf)
			for i := range e.Failed {
				e.Failed[i] = r.Str()
			}
		}
		if r.Err() != nil {
			return nil, r.Err()
		}
		entries[p] = e
	}
	if r.Err() == nil && r.Left() != 0 {
		r.Fail("trailing bytes")
	}
	if r.Err() != nil {
		return nil, r.Err()
	}
	return entries, nil
}

func (r *indexReader) component(c, prev *Component) {
	same := r.Byte()
	if same&^(1<<6-1) != 0 || same != 0 && prev == nil {
		r.Fail("unknown repeated fields")
		return
	}
	var pf, f [6]string
	if prev != nil {
		pf = repeated(prev)
	}
	for i := range f {
		if same&(1<<i) != 0 {
			f[i] = pf[i]
		} else {
			f[i] = r.Str()
		}
	}
	c.Kind, c.Plugin.Name, c.Plugin.Source, c.Source, c.Root, c.DataDir = plugin.ComponentKind(f[0]), f[1], f[2], f[3], f[4], f[5]
	c.Name, c.Local, c.Path, c.Description, c.sum = r.Str(), r.Str(), r.Str(), r.Str(), r.Str()
	c.Meta = r.meta()
	parts := r.Byte()
	if parts&^7 != 0 {
		r.Fail("unknown component parts")
		return
	}
	if parts&1 != 0 {
		h := &Hook{Event: plugin.HookEvent(r.Str())}
		if n := r.Count(); n > 0 {
			h.Matchers = make([]plugin.HookMatcher, n)
			for i := range h.Matchers {
				m := &h.Matchers[i]
				m.Matcher = r.Str()
				if k := r.Count(); k > 0 {
					m.Hooks = make([]plugin.Hook, k)
					for j := range m.Hooks {
						hk := &m.Hooks[j]
						hk.Type, hk.Command, hk.Prompt = r.Str(), r.Str(), r.Str()
						hk.Timeout = int(r.Varint())
						hk.Extra = r.raw()
					}
				}
			}
		}
		c.Hook = h
	}
	if parts&2 != 0 {
		s := &plugin.MCPServer{Type: r.Str(), Command: r.Str()}
		s.Args, s.Env = r.list(), r.dict()
		s.Cwd, s.URL = r.Str(), r.Str()
		s.Headers, s.Extra = r.dict(), r.raw()
		c.MCP = s
	}
	if parts&4 != 0 {
		s := &plugin.LSPServer{Command: r.Str()}
		s.Args, s.Env = r.list(), r.dict()
		s.Transport = r.Str()
		s.ExtensionToLanguage = r.dict()
		if v := r.Str(); v != "" {
			s.InitializationOptions = json.RawMessage(v)
		}
		if v := r.Str(); v != "" {
			s.Settings = json.RawMessage(v)
		}
		s.Extra = r.raw()
		c.LSP = s
	}
}
