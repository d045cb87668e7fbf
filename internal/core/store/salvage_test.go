package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Salvage reads every bucket of a file whose freelist is garbage (the
// read-only copy never reads it), reports the damage, and leaves the file
// as it was; an empty file salvages nothing and says so.
func TestSalvage(t *testing.T) {
	path := filledBolt(t)
	m := metaOf(t, path)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, m.pageSize)
	for i := range junk {
		junk[i] = byte(i)
	}
	if _, err := f.WriteAt(junk, int64(m.freelist)*int64(m.pageSize)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before, _ := os.ReadFile(path)
	sv, err := Salvage(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(sv.Damage, ErrCorrupt) || len(sv.Lost) != 0 || len(sv.Buckets["installed"]) != 400 {
		t.Fatalf("Salvage: damage %v, lost %v, %d installed keys; want the damage and all 400 keys", sv.Damage, sv.Lost, len(sv.Buckets["installed"]))
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("Salvage changed the file")
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".salvage-*")); len(left) != 0 {
		t.Fatalf("Salvage left %v", left)
	}

	empty := filepath.Join(t.TempDir(), "state.db")
	os.WriteFile(empty, nil, 0o600)
	sv, err = Salvage(empty, time.Second)
	if err != nil || sv.Lost[""] == "" || !errors.Is(sv.Damage, ErrCorrupt) {
		t.Fatalf("Salvage of an empty file = %+v, %v", sv, err)
	}
}

// ReplaceFile keeps the old file under the aside name and puts the new one
// in its place.
func TestReplaceFileKeepsTheOldOne(t *testing.T) {
	dir := t.TempDir()
	path, fresh, aside := filepath.Join(dir, "state.db"), filepath.Join(dir, "new.db"), filepath.Join(dir, "state.db.damaged-x")
	os.WriteFile(path, []byte("old"), 0o600)
	os.WriteFile(fresh, []byte("new"), 0o600)
	if err := ReplaceFile(path, fresh, aside, time.Second); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("state.db holds %q", b)
	}
	if b, _ := os.ReadFile(aside); string(b) != "old" {
		t.Errorf("aside holds %q", b)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the new file is still under its temporary name: %v", err)
	}
}
