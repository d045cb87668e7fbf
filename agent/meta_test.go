package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/wharfhq/wharf/internal/client/diskrec"
	"pgregory.net/rapid"
)

// A Meta answers as the map of its pairs did (Components kept their front
// matter in a map[string]string): the same pairs, lookups and content sum,
// and the index writes it as it wrote the map, byte for byte, and reads it
// back equal.
func TestMetaEqualsMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.MapOf(rapid.StringMatching(`[a-z-]{0,6}`), rapid.String()).Draw(t, "meta")
		meta := MetaOf(m)
		if got := meta.Map(); !reflect.DeepEqual(got, nilIfEmptyMap(m)) {
			t.Fatalf("Map() = %v, want %v", got, m)
		}
		if meta.Len() != len(m) {
			t.Fatalf("Len() = %d, want %d", meta.Len(), len(m))
		}
		var keys []string
		for k, v := range meta.All() {
			keys = append(keys, k)
			if m[k] != v {
				t.Fatalf("All yields %q=%q, map has %q", k, v, m[k])
			}
		}
		if !slices.Equal(keys, sortedKeys(m)) {
			t.Fatalf("All yields keys %q, want %q sorted", keys, sortedKeys(m))
		}
		probe := rapid.StringMatching(`[a-z-]{0,6}`).Draw(t, "probe")
		for _, k := range append(keys, probe) {
			v, ok := meta.Get(k)
			wv, wok := m[k]
			if v != wv || ok != wok {
				t.Fatalf("Get(%q) = %q, %v; map gives %q, %v", k, v, ok, wv, wok)
			}
		}

		// metaOfPairs, as readMarkdown builds a Meta, in any order.
		var kv []string
		for _, k := range rapid.Permutation(slices.Collect(maps.Keys(m))).Draw(t, "order") {
			kv = append(kv, k, m[k])
		}
		if got := metaOfPairs(kv); !reflect.DeepEqual(got, meta) {
			t.Fatalf("metaOfPairs = %v, want %v", got, meta)
		}

		// The content sum hashes the pairs as it hashed the map.
		a, b := sumHasher{h: sha256.New()}, sumHasher{h: sha256.New()}
		a.meta(meta)
		b.dict(m)
		if hex.EncodeToString(a.h.Sum(nil)) != hex.EncodeToString(b.h.Sum(nil)) {
			t.Fatal("the content sum of a Meta differs from that of its map")
		}

		// The index bytes are the map's, and read back as the Meta.
		var wm, wd indexWriter
		wm.meta(meta)
		wd.dict(m)
		if string(wm.b) != string(wd.b) {
			t.Fatalf("index bytes of the Meta %q, of the map %q", wm.b, wd.b)
		}
		r := indexReader{Reader: diskrec.NewReader(string(wm.b), 0, func(what string, off int) error { return errIndex })}
		got := r.meta()
		if r.Err() != nil || r.Left() != 0 || !reflect.DeepEqual(got, meta) {
			t.Fatalf("read back %v (err %v, %d bytes left), want %v", got, r.Err(), r.Left(), meta)
		}
	})
}

func nilIfEmptyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// A dict whose keys are not in order is not read as a Meta.
func TestMetaReadRefusesUnsortedKeys(t *testing.T) {
	for name, kv := range map[string][]string{
		"unsorted":  {"b", "1", "a", "2"},
		"duplicate": {"a", "1", "a", "2"},
	} {
		t.Run(name, func(t *testing.T) {
			var w indexWriter
			w.uvarint(len(kv) / 2)
			w.str(kv...)
			r := indexReader{Reader: diskrec.NewReader(string(w.b), 0, func(what string, off int) error { return errIndex })}
			if got := r.meta(); r.Err() == nil || got.Len() != 0 {
				t.Fatalf("read %v, err %v; want an error", got, r.Err())
			}
		})
	}
}
