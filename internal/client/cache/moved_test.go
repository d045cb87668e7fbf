package cache

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/store"
)

// The registry stores install paths relative to the home, so a home moved
// elsewhere finds its versions; a record of an earlier version, which
// stored the absolute path, is read as the moved home's directory of the
// same version. A record whose path is anywhere else is reported, not
// followed quietly.
func TestRegistryFollowsAMovedHome(t *testing.T) {
	parent := t.TempDir()
	oldHome, newHome := filepath.Join(parent, "old"), filepath.Join(parent, "new")
	st := openStore(t, parent)
	c := newCache(t, Options{Home: oldHome, Store: st})
	rec := installedRecord(t, c)
	if err := c.Put(bg, rec); err != nil {
		t.Fatal(err)
	}
	if raw := rawRecord(t, c, pid); strings.Contains(string(raw), oldHome) || !strings.Contains(string(raw), "cache/corp/deploy/1.0.0") {
		t.Fatalf("the stored record names the home's absolute path: %q", raw)
	}
	legacy, err := c.Get(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(oldHome, newHome); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeTree(newHome) })
	moved, err := New(Options{Home: newHome, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(newHome, "cache", "corp", "deploy", "1.0.0")
	check := func(what string) {
		t.Helper()
		got, err := moved.Get(pid)
		if err != nil {
			t.Fatal(err)
		}
		list, err := moved.List()
		if err != nil || len(list) != 1 || list[0].InstallPath != want || got.InstallPath != want {
			t.Fatalf("%s: Get %s, List %+v %v; want %s", what, got.InstallPath, list, err, want)
		}
		if err := got.Pin().CheckFast(got.InstallPath); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := moved.CheckStoredRecord(store.KV{Key: pid.String(), Value: rawRecord(t, moved, pid)}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	check("relative record")

	// The absolute form earlier versions stored, naming the old home.
	b, err := encodeRecord(legacy)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), oldHome) {
		t.Fatalf("legacy record lacks the old home")
	}
	putRaw(t, moved, pid, b)
	check("absolute record of the old home")

	// A path that is no version directory of this home is damage.
	elsewhere := legacy
	elsewhere.InstallPath = filepath.Join(parent, "elsewhere", "deploy")
	if b, err = encodeRecord(elsewhere); err != nil {
		t.Fatal(err)
	}
	putRaw(t, moved, pid, b)
	err = moved.CheckStoredRecord(store.KV{Key: pid.String(), Value: b})
	if !errors.Is(err, ErrRecordCorrupt) || !strings.Contains(err.Error(), "is not this home's version directory "+want) {
		t.Fatalf("a record pointing outside the home: %v", err)
	}
}
