package agent

import (
	"iter"
	"sort"
	"strings"
)

// Meta holds the top-level scalar values of a Markdown component's front
// matter as strings ("description", "argument-hint", "model", ...). It is
// a value: the zero Meta is empty, and nothing changes a Meta once made.
//
// It keeps the pairs sorted by key in one slice rather than in a map: a
// session start reads the Meta of every component of every installed
// plugin from the component index (2,000 at 200 plugins), and a map each
// was most of that read. A front matter has a handful of keys, so a
// lookup is a short binary search.
type Meta struct {
	kv []string // key, value, key, value, ...; keys distinct and sorted
}

// MetaOf returns the Meta holding m's pairs.
func MetaOf(m map[string]string) Meta {
	if len(m) == 0 {
		return Meta{}
	}
	kv := make([]string, 0, 2*len(m))
	for _, k := range sortedKeys(m) {
		kv = append(kv, k, m[k])
	}
	return Meta{kv: kv}
}

// metaOfPairs returns the Meta of kv (key, value, ...; keys distinct),
// which it sorts by key and then owns.
func metaOfPairs(kv []string) Meta {
	if len(kv) < 2 {
		return Meta{}
	}
	sort.Sort(pairs(kv))
	return Meta{kv: kv}
}

type pairs []string

func (p pairs) Len() int           { return len(p) / 2 }
func (p pairs) Less(i, j int) bool { return p[2*i] < p[2*j] }
func (p pairs) Swap(i, j int) {
	p[2*i], p[2*j] = p[2*j], p[2*i]
	p[2*i+1], p[2*j+1] = p[2*j+1], p[2*i+1]
}

// Len is the number of keys.
func (m Meta) Len() int { return len(m.kv) / 2 }

// Get returns the value of key and whether m has it.
func (m Meta) Get(key string) (string, bool) {
	lo, hi := 0, len(m.kv)/2
	for lo < hi {
		i := int(uint(lo+hi) >> 1)
		switch c := strings.Compare(m.kv[2*i], key); {
		case c == 0:
			return m.kv[2*i+1], true
		case c < 0:
			lo = i + 1
		default:
			hi = i
		}
	}
	return "", false
}

// All yields the pairs in key order.
func (m Meta) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for i := 0; i+1 < len(m.kv); i += 2 {
			if !yield(m.kv[i], m.kv[i+1]) {
				return
			}
		}
	}
}

// Map returns the pairs as a new map (nil when m is empty).
func (m Meta) Map() map[string]string {
	if len(m.kv) == 0 {
		return nil
	}
	out := make(map[string]string, len(m.kv)/2)
	for k, v := range m.All() {
		out[k] = v
	}
	return out
}
