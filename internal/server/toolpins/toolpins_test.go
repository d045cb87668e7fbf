package toolpins_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/toolpins"
	"github.com/wharfhq/wharf/internal/testutil/storeharness"
)

var (
	h1 = "mcp1:" + strings.Repeat("1", 64)
	h2 = "mcp1:" + strings.Repeat("2", 64)
)

// The tool pins' contract, on every backend.
func TestToolPins(t *testing.T) {
	storeharness.Run(t, "toolpins", func(t *testing.T, b *storeharness.Backend) {
		t.Run("PinReadReplace", func(t *testing.T) { testPins(t, b.Open(t)) })
		t.Run("Drift", func(t *testing.T) { testDrift(t, b.Open(t)) })
		t.Run("SeenByAnotherReplica", func(t *testing.T) {
			st := b.Open(t)
			put(t, st, toolpins.Record{Plugin: "db@corp", Server: "pg", Hash: h1, By: "tok_a", Approved: time.Now().UTC()})
			var got []toolpins.Record
			if err := b.Again(t, st).View(func(r store.Reader) (err error) { got, err = toolpins.All(r); return err }); err != nil || len(got) != 1 {
				t.Fatalf("another replica reads %+v, %v", got, err)
			}
		})
		t.Run("CorruptRecordIsNamed", func(t *testing.T) { testCorrupt(t, b.Open(t)) })
	})
}

func put(t *testing.T, st store.Store, rec toolpins.Record) {
	t.Helper()
	if err := st.Update(func(tx store.Tx) error { return toolpins.Put(tx, rec) }); err != nil {
		t.Fatal(err)
	}
}

func all(t *testing.T, st store.Store) []toolpins.Record {
	t.Helper()
	var got []toolpins.Record
	if err := st.View(func(r store.Reader) (err error) { got, err = toolpins.All(r); return err }); err != nil {
		t.Fatal(err)
	}
	return got
}

func testPins(t *testing.T, st store.Store) {
	if got := all(t, st); len(got) != 0 {
		t.Fatalf("empty store: %+v", got)
	}
	if v := toolpins.Version("sha256:base", nil); v != "sha256:base" {
		t.Fatalf("no pin changed the version: %s", v)
	}
	put(t, st, toolpins.Record{Plugin: "z@corp", Server: "s", Hash: h1, By: "tok_a"})
	put(t, st, toolpins.Record{Plugin: "a@corp", Server: "s", Hash: h1, By: "tok_a"})
	v1 := toolpins.Version("sha256:base", all(t, st))
	put(t, st, toolpins.Record{Plugin: "a@corp", Server: "s", Hash: h2, By: "tok_b", Note: "reviewed"})
	got := all(t, st)
	if len(got) != 2 || got[0].Plugin != "a@corp" || got[0].Hash != h2 || got[0].Note != "reviewed" {
		t.Fatalf("pins = %+v", got)
	}
	if v2 := toolpins.Version("sha256:base", got); v2 == v1 || v1 == "sha256:base" {
		t.Fatalf("versions %s %s: a pin change must change the policy version", v1, v2)
	}
	var rec toolpins.Record
	var ok bool
	if err := st.View(func(r store.Reader) (err error) { rec, ok, err = toolpins.Get(r, "z@corp", "s"); return err }); err != nil || !ok || rec.Hash != h1 {
		t.Fatalf("Get = %+v %v %v", rec, ok, err)
	}
	err := st.Update(func(tx store.Tx) error {
		return toolpins.Put(tx, toolpins.Record{Plugin: "a@corp", Server: "s", Hash: "sha256:x"})
	})
	if err == nil || !strings.Contains(err.Error(), "sha256:x") {
		t.Fatalf("an invalid hash was stored: %v", err)
	}
	if pins := toolpins.Pins(got); len(pins) != 2 || pins[0].Hash != h2 {
		t.Fatalf("Pins = %+v", pins)
	}
}

func observe(t *testing.T, st store.Store, machine string, at time.Time, servers ...inventory.MCPServer) {
	t.Helper()
	if err := st.Update(func(tx store.Tx) error { return toolpins.Observe(tx, machine, servers, at) }); err != nil {
		t.Fatal(err)
	}
}

func drifts(t *testing.T, st store.Store) []toolpins.Drift {
	t.Helper()
	var got []toolpins.Drift
	if err := st.View(func(r store.Reader) (err error) { got, err = toolpins.Drifts(r); return err }); err != nil {
		t.Fatal(err)
	}
	return got
}

// Reported definitions no pin approves are drift, counted by machine; an
// approval or a newer report without them clears it.
func testDrift(t *testing.T, st store.Store) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	observe(t, st, "m-1", t0, inventory.MCPServer{Plugin: "db@corp", Server: "pg", ToolsHash: h1})
	observe(t, st, "m-2", t0.Add(time.Hour), inventory.MCPServer{Plugin: "db@corp", Server: "pg", ToolsHash: h1})
	got := drifts(t, st)
	if len(got) != 1 || got[0].Pinned != "" || got[0].Machines != 2 || !got[0].LastSeen.Equal(t0.Add(time.Hour)) {
		t.Fatalf("unpinned: %+v", got)
	}
	put(t, st, toolpins.Record{Plugin: "db@corp", Server: "pg", Hash: h1})
	if got := drifts(t, st); len(got) != 0 {
		t.Fatalf("approved definitions still drift: %+v", got)
	}
	observe(t, st, "m-2", t0.Add(2*time.Hour), inventory.MCPServer{Plugin: "db@corp", Server: "pg", ToolsHash: h2, Pinned: h1, Drift: true})
	got = drifts(t, st)
	if len(got) != 1 || got[0].Observed != h2 || got[0].Pinned != h1 || got[0].Machines != 1 {
		t.Fatalf("changed definitions: %+v", got)
	}
	var seen bool
	if err := st.View(func(r store.Reader) (err error) { seen, err = toolpins.Reported(r, "db@corp", "pg", h2); return err }); err != nil || !seen {
		t.Fatalf("Reported(h2) = %v %v", seen, err)
	}
	observe(t, st, "m-2", t0.Add(3*time.Hour)) // a report without servers
	if got := drifts(t, st); len(got) != 0 {
		t.Fatalf("after m-2 reported no server: %+v", got)
	}
	if err := st.View(func(r store.Reader) (err error) { seen, err = toolpins.Reported(r, "db@corp", "pg", h2); return err }); err != nil || seen {
		t.Fatalf("Reported(h2) after it left = %v %v", seen, err)
	}
}

func testCorrupt(t *testing.T, st store.Store) {
	if err := st.Update(func(tx store.Tx) error { return tx.Put(toolpins.Bucket, "db@corp pg", []byte("{")) }); err != nil {
		t.Fatal(err)
	}
	var ce *toolpins.CorruptError
	err := st.View(func(r store.Reader) error { _, err := toolpins.All(r); return err })
	if !errors.As(err, &ce) || ce.Key != "db@corp pg" || !strings.Contains(err.Error(), toolpins.Bucket) {
		t.Fatalf("corrupt pin: %v", err)
	}
	if err := st.Update(func(tx store.Tx) error { return tx.Put(toolpins.ObservedBucket, "m-1", []byte("[")) }); err != nil {
		t.Fatal(err)
	}
	if err := st.Update(func(tx store.Tx) error { return tx.Delete(toolpins.Bucket, "db@corp pg") }); err != nil {
		t.Fatal(err)
	}
	err = st.View(func(r store.Reader) error { _, err := toolpins.Drifts(r); return err })
	if !errors.As(err, &ce) || ce.Bucket != toolpins.ObservedBucket {
		t.Fatalf("corrupt observation: %v", err)
	}
}
