package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// The component index is a file under WHARF_HOME that anything may have
// damaged: reading it must never panic, and a damaged
// file must read as empty rather than half-trusted.

func FuzzReadIndex(f *testing.F) {
	good := encodeIndex(map[string]indexEntry{"/c/p/1": {Key: "k", Comps: codecComponents(), Deps: []plugin.Dependency{{Name: "b"}}}})
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte("not an index"))
	f.Add(good[:len(good)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		file := filepath.Join(t.TempDir(), "components.idx")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		x := &componentIndex{file: file}
		x.load()
		for p, e := range x.entries {
			if got, ok := x.get(p, e.Key); !ok || len(got.Comps) != len(e.Comps) {
				t.Fatal("get disagrees with load")
			}
		}
		// What decodes encodes back to the same entries.
		if entries, err := decodeIndex(data); err == nil {
			again, err := decodeIndex(encodeIndex(entries))
			if err != nil || !reflect.DeepEqual(again, entries) {
				t.Fatalf("re-encoded index decodes to %v, %v", again, err)
			}
		}
	})
}
