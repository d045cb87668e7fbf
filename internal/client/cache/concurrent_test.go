package cache

import (
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"
)

func TestConcurrentMaterializeSameVersion(t *testing.T) {
	c := newCache(t, Options{})
	const n = 4
	var wg sync.WaitGroup
	vs := make([]*Version, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			vs[i], errs[i] = c.Materialize(bg, pid, "1.0.0", files(map[string]string{"a.md": "same", "b/c*": "x"}))
		}(i)
	}
	wg.Wait()
	var origins []string
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: %v", i, errs[i])
		}
		if vs[i].Digest != vs[0].Digest || vs[i].Path != vs[0].Path {
			t.Fatalf("goroutine %d got %+v, goroutine 0 got %+v", i, vs[i], vs[0])
		}
		origins = append(origins, vs[i].Origin)
	}
	sort.Strings(origins)
	if !reflect.DeepEqual(origins, []string{"cache", "cache", "cache", "fill"}) {
		t.Errorf("origins = %v, want exactly one fill renamed into place", origins)
	}
	if got := dirNames(t, filepath.Dir(vs[0].Path)); !reflect.DeepEqual(got, []string{"1.0.0"}) {
		t.Errorf("plugin dir holds %v", got)
	}
}

func TestSeedDirsFromEnv(t *testing.T) {
	t.Setenv("WHARF_SEED_DIRS", "/opt/seed-a::/mnt/seed-b:")
	if got := SeedDirsFromEnv(); !reflect.DeepEqual(got, []string{"/opt/seed-a", "/mnt/seed-b"}) {
		t.Errorf("SeedDirsFromEnv = %v", got)
	}
	if _, err := New(Options{}); err == nil {
		t.Error("New without a home succeeded")
	}
}
