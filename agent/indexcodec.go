package agent

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"unsafe"

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
//	    str kind, name, local, plugin name, plugin source, source, path,
//	        root, dataDir, description, sum
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
			w.component(&e.Comps[i])
		}
	}
	return w.b
}

func (w *indexWriter) component(c *Component) {
	w.str(string(c.Kind), c.Name, c.Local, c.Plugin.Name, c.Plugin.Source, c.Source, c.Path, c.Root, c.DataDir, c.Description, c.sum)
	w.dict(c.Meta)
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

// indexReader decodes an index. Every string it returns is a slice of s,
// which the caller never modifies, so decoding allocates the containers
// (components, maps, configurations) and no string data.
type indexReader struct {
	s   string
	off int
	err error
}

func (r *indexReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at byte %d", errIndex, what, r.off)
	}
	r.off = len(r.s)
}

func (r *indexReader) uvarint() int {
	var x uint64
	var shift uint
	for i := 0; r.off+i < len(r.s) && i < binary.MaxVarintLen64; i++ {
		c := r.s[r.off+i]
		if c < 0x80 {
			x |= uint64(c) << shift
			r.off += i + 1
			// A count or a length is never more than the bytes left.
			if x > uint64(len(r.s)) {
				r.fail("count beyond the end")
				return 0
			}
			return int(x)
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	r.fail("truncated varint")
	return 0
}

func (r *indexReader) varint() int64 {
	x, n := binary.Varint([]byte(r.s[r.off:min(len(r.s), r.off+binary.MaxVarintLen64)]))
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.off += n
	return x
}

func (r *indexReader) byte() byte {
	if r.off >= len(r.s) {
		r.fail("truncated")
		return 0
	}
	c := r.s[r.off]
	r.off++
	return c
}

func (r *indexReader) str() string {
	n := r.uvarint()
	if r.off+n > len(r.s) {
		r.fail("string beyond the end")
		return ""
	}
	v := r.s[r.off : r.off+n]
	r.off += n
	return v
}

func (r *indexReader) list() []string {
	n := r.uvarint()
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.str()
	}
	return out
}

func (r *indexReader) dict() map[string]string {
	n := r.uvarint()
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := r.str()
		m[k] = r.str()
	}
	return m
}

func (r *indexReader) raw() map[string]json.RawMessage {
	n := r.uvarint()
	if n == 0 {
		return nil
	}
	m := make(map[string]json.RawMessage, n)
	for range n {
		k := r.str()
		m[k] = json.RawMessage(r.str())
	}
	return m
}

// decodeIndex reads an index written by encodeIndex. data must not be
// modified afterwards: the decoded strings share its memory.
func decodeIndex(data []byte) (map[string]indexEntry, error) {
	if len(data) < len(indexMagic) || string(data[:len(indexMagic)]) != indexMagic {
		return nil, fmt.Errorf("%w: not an index file", errIndex)
	}
	r := &indexReader{s: unsafe.String(unsafe.SliceData(data), len(data)), off: len(indexMagic)}
	if f := r.uvarint(); f != indexFormat || r.err != nil {
		return nil, fmt.Errorf("%w: format %d, want %d", errIndex, f, indexFormat)
	}
	n := r.uvarint()
	entries := make(map[string]indexEntry, n)
	for range n {
		p, key := r.str(), r.str()
		e := indexEntry{Key: key}
		if nd := r.uvarint(); nd > 0 {
			e.Deps = make([]plugin.Dependency, nd)
			for i := range e.Deps {
				e.Deps[i] = plugin.Dependency{Name: r.str(), Marketplace: r.str(), Version: r.str()}
			}
		}
		if nc := r.uvarint(); nc > 0 {
			e.Comps = make([]Component, nc)
			for i := range e.Comps {
				r.component(&e.Comps[i])
			}
		}
		if r.err != nil {
			return nil, r.err
		}
		entries[p] = e
	}
	if r.err == nil && r.off != len(r.s) {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return nil, r.err
	}
	return entries, nil
}

func (r *indexReader) component(c *Component) {
	c.Kind = plugin.ComponentKind(r.str())
	c.Name, c.Local = r.str(), r.str()
	c.Plugin = plugin.ID{Name: r.str(), Source: r.str()}
	c.Source, c.Path, c.Root, c.DataDir, c.Description, c.sum = r.str(), r.str(), r.str(), r.str(), r.str(), r.str()
	c.Meta = r.dict()
	parts := r.byte()
	if parts&^7 != 0 {
		r.fail("unknown component parts")
		return
	}
	if parts&1 != 0 {
		h := &Hook{Event: plugin.HookEvent(r.str())}
		if n := r.uvarint(); n > 0 {
			h.Matchers = make([]plugin.HookMatcher, n)
			for i := range h.Matchers {
				m := &h.Matchers[i]
				m.Matcher = r.str()
				if k := r.uvarint(); k > 0 {
					m.Hooks = make([]plugin.Hook, k)
					for j := range m.Hooks {
						hk := &m.Hooks[j]
						hk.Type, hk.Command, hk.Prompt = r.str(), r.str(), r.str()
						hk.Timeout = int(r.varint())
						hk.Extra = r.raw()
					}
				}
			}
		}
		c.Hook = h
	}
	if parts&2 != 0 {
		s := &plugin.MCPServer{Type: r.str(), Command: r.str()}
		s.Args, s.Env = r.list(), r.dict()
		s.Cwd, s.URL = r.str(), r.str()
		s.Headers, s.Extra = r.dict(), r.raw()
		c.MCP = s
	}
	if parts&4 != 0 {
		s := &plugin.LSPServer{Command: r.str()}
		s.Args, s.Env = r.list(), r.dict()
		s.Transport = r.str()
		s.ExtensionToLanguage = r.dict()
		if v := r.str(); v != "" {
			s.InitializationOptions = json.RawMessage(v)
		}
		if v := r.str(); v != "" {
			s.Settings = json.RawMessage(v)
		}
		s.Extra = r.raw()
		c.LSP = s
	}
}
