package resolver

import (
	"fmt"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// The intern table must behave like a map from ID to first-insertion index
// across growth and across the switch from linear to mapped marketplaces.
func TestIDTableMatchesMap(t *testing.T) {
	tab := newIDTable(1)
	want := map[plugin.ID]int32{}
	for i := 0; i < 5000; i++ {
		id := plugin.ID{Name: fmt.Sprintf("p%d", i%1700), Source: fmt.Sprintf("m%d", i%40)}
		idx, added := tab.intern(id)
		w, seen := want[id]
		if added == seen || (seen && idx != w) {
			t.Fatalf("intern(%s) = %d, %v; map says %d, %v", id, idx, added, w, seen)
		}
		if !seen {
			want[id] = idx
		}
	}
	if tab.len() != len(want) {
		t.Fatalf("len = %d, want %d", tab.len(), len(want))
	}
	for id, w := range want {
		if got, ok := tab.find(id); !ok || got != w {
			t.Fatalf("find(%s) = %d, %v, want %d", id, got, ok, w)
		}
	}
	for _, id := range []plugin.ID{{Name: "p1", Source: "nowhere"}, {Name: "zz", Source: "m1"}} {
		if _, ok := tab.find(id); ok {
			t.Errorf("find(%s) found an ID never interned", id)
		}
	}
}
