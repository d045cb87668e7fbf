package cache

import (
	"errors"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// TestPutAllIsAllOrNothing: a closure whose last record is invalid leaves the
// registry without any of its records.
func TestPutAllIsAllOrNothing(t *testing.T) {
	c := newCache(t, Options{})
	a := plugin.MustParseID("tools@corp")
	b := plugin.MustParseID("deploy@corp")
	va, err := c.Materialize(bg, a, "1.0.0", files(map[string]string{"a": "a"}))
	if err != nil {
		t.Fatal(err)
	}
	vb, err := c.Materialize(bg, b, "2.0.0", files(map[string]string{"b": "b"}))
	if err != nil {
		t.Fatal(err)
	}
	bad := RecordFor(vb, "galaxy")
	err = c.PutAll(bg, []Record{RecordFor(va, "user"), bad})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("PutAll with an invalid scope = %v, want ErrInvalid", err)
	}
	if recs, _ := c.List(); len(recs) != 0 {
		t.Fatalf("registry holds %d records after a refused PutAll, want 0", len(recs))
	}
	if err := c.PutAll(bg, []Record{RecordFor(va, "user"), RecordFor(vb, "user")}); err != nil {
		t.Fatal(err)
	}
	if recs, _ := c.List(); len(recs) != 2 {
		t.Fatalf("registry holds %d records, want 2", len(recs))
	}
}
