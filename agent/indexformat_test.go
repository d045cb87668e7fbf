package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/plugin"
	"pgregory.net/rapid"
)

// Components whose plugin fields, sources and dirs repeat or change from
// one to the next (the fields the index writes once per run) read back
// as written.
func TestIndexCodecRoundTripRepeatedFields(t *testing.T) {
	pick := func(t *rapid.T, label string, pool ...string) string { return rapid.SampledFrom(pool).Draw(t, label) }
	rapid.Check(t, func(t *rapid.T) {
		in := map[string]indexEntry{}
		for e := range rapid.IntRange(0, 3).Draw(t, "entries") {
			var comps []Component
			for range rapid.IntRange(0, 6).Draw(t, "components") {
				c := Component{
					Kind:        plugin.ComponentKind(pick(t, "kind", "command", "skill", "hook", "")),
					Name:        pick(t, "name", "a", "b", "ops:a", ""),
					Local:       pick(t, "local", "a", "b", ""),
					Plugin:      plugin.ID{Name: pick(t, "plugin", "ops", "lint", ""), Source: pick(t, "source", "corp", "other", "")},
					Source:      pick(t, "from", SourcePlugin, SourceUser, ""),
					Path:        pick(t, "path", "/c/ops/a.md", "/c/lint/b.md", ""),
					Root:        pick(t, "root", "/c/ops", "/c/lint", ""),
					DataDir:     pick(t, "data", "/h/data/corp/ops", ""),
					Description: pick(t, "description", "Ship it", ""),
					Meta:        MetaOf(rapid.MapOfN(rapid.SampledFrom([]string{"description", "model", "x"}), rapid.String(), 0, 3).Draw(t, "meta")),
				}
				if c.Kind == plugin.KindHook {
					c.Hook = &Hook{Event: "Stop", Matchers: []plugin.HookMatcher{{Hooks: []plugin.Hook{{Type: "command", Command: c.Root + "/bin/x"}}}}}
				}
				normalize(&c)
				comps = append(comps, c)
			}
			in[pick(t, "install path", "/c/ops/1", "/c/lint/1", "/c/x/2")+string(rune('a'+e))] = indexEntry{Key: "k", Comps: comps}
		}
		out, err := decodeIndex(encodeIndex(in))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out, in) {
			t.Fatalf("decoded\n%+v\nwant\n%+v", out, in)
		}
	})
}

// The first component of an entry has no previous one to repeat: an index
// that says it does is malformed.
func TestIndexRefusesRepeatWithoutPrevious(t *testing.T) {
	c := codecComponents()[0]
	data := encodeIndex(map[string]indexEntry{"/c/ops/1": {Key: "k", Comps: []Component{c}}})
	// The same byte of the only component follows the magic, format,
	// entry count, path, key, deps count and components count.
	off := len(indexMagic) + 1 + 1 + 1 + len("/c/ops/1") + 1 + len("k") + 1 + 1
	if data[off] != 0 {
		t.Fatalf("byte %d is %d, not the first component's same byte", off, data[off])
	}
	data[off] = 1
	if _, err := decodeIndex(data); !errors.Is(err, errIndex) {
		t.Fatalf("decodeIndex = %v, want errIndex", err)
	}
}

// An index an earlier version wrote is ignored: the cache-only load parses
// the trees, gives what the full load gives, and writes the index again in
// the current format. Format 4 wrote repeated fields every time; format 5
// keyed entries on the JSON of the marketplace entry. The entries of the
// old-format file here carry the current keys and stale components, so a
// reader that trusted them would give those components.
func TestIndexOfEarlierFormatIsRebuilt(t *testing.T) {
	for _, format := range []byte{4, 5} {
		t.Run(fmt.Sprint(format), func(t *testing.T) {
			w := newWorld(t)
			w.install("ops@corp", "1.0.0", fullPlugin("ops"))
			w.install("lint@corp", "1.0.0", smallPlugin("lint"))
			w.setEnabled("ops@corp", true)
			w.setEnabled("lint@corp", true)
			full := w.load(w.runtime(w.options()), Full)
			file := layout.New(w.home).AgentIndex()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if f, n := binary.Uvarint(data[len(indexMagic):]); n != 1 || f != indexFormat || f <= uint64(format) {
				t.Fatalf("index format %d, want %d (after %d)", f, indexFormat, format)
			}
			entries, err := decodeIndex(data)
			if err != nil || len(entries) != 2 {
				t.Fatalf("index after the full load: %d entries, %v", len(entries), err)
			}
			for p, e := range entries {
				for i := range e.Comps {
					e.Comps[i].Description = "stale"
				}
				entries[p] = e
			}
			data = encodeIndex(entries)
			data[len(indexMagic)] = format
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := decodeIndex(data); !errors.Is(err, errIndex) {
				t.Fatalf("a format-%d index decodes: %v", format, err)
			}
			cached := w.load(w.runtime(w.options()), CacheOnly)
			if !reflect.DeepEqual(cached.Components(), full.Components()) || !reflect.DeepEqual(cached.Plugins(), full.Plugins()) {
				t.Fatalf("cache-only over a format-%d index\n%+v\nfull\n%+v", format, cached.Components(), full.Components())
			}
			data, err = os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			entries, err = decodeIndex(data)
			if err != nil || len(entries) != 2 {
				t.Fatalf("index after the load: %d entries, %v; want 2 in format %d", len(entries), err, indexFormat)
			}
			for _, e := range entries {
				for _, c := range e.Comps {
					if c.Description == "stale" {
						t.Fatalf("the rewritten index kept a component of the format-%d one: %+v", format, c)
					}
				}
			}
		})
	}
}
