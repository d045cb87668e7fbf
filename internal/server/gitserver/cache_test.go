package gitserver

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

func TestPackCacheEvictsAndSkipsLargePacks(t *testing.T) {
	c := newPackCache(100)
	ctx := context.Background()
	built := 0
	mk := func(n int) func() (*packResult, error) {
		return func() (*packResult, error) {
			built++
			return &packResult{pack: make([]byte, n)}, nil
		}
	}
	for i := 0; i < 6; i++ {
		if _, err := c.get(ctx, fmt.Sprint(i), mk(20)); err != nil {
			t.Fatal(err)
		}
	}
	if c.size > 100 {
		t.Fatalf("cache holds %d bytes, over its 100", c.size)
	}
	c.get(ctx, "5", mk(20))
	if built != 6 {
		t.Fatalf("recent entry rebuilt: %d builds, want 6", built)
	}
	c.get(ctx, "0", mk(20))
	if built != 7 {
		t.Fatalf("oldest entry not evicted: %d builds, want 7", built)
	}
	c.get(ctx, "big", mk(26))
	c.get(ctx, "big", mk(26))
	if built != 9 {
		t.Fatalf("a pack over a quarter of the cache was kept: %d builds, want 9", built)
	}
	boom := errors.New("boom")
	if _, err := c.get(ctx, "err", func() (*packResult, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("build error not returned: %v", err)
	}
	if _, err := c.get(ctx, "err", mk(1)); err != nil {
		t.Fatalf("a failed build was cached: %v", err)
	}
}

// TestConcurrentClonesShareOnePackBuild: a team cloning the same commit at
// once gets correct clones from a single pack build.
func TestConcurrentClonesShareOnePackBuild(t *testing.T) {
	needGit(t)
	src := newSrcRepo(t)
	src.commit(manyFiles(100, "v1"))
	tip := src.commit(map[string]string{"x.txt": "x\n"})
	srv := &Server{}
	url := src.serve(srv)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]string, n)
	dirs := make([]string, n)
	for i := 0; i < n; i++ {
		dirs[i] = filepath.Join(t.TempDir(), "c")
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if out, err := gitRun(t, "", "clone", "-q", "--depth", "1", url+"/repo.git", dirs[i]); err != nil {
				errs[i] = out
			}
		}(i)
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		if errs[i] != "" {
			t.Fatalf("clone %d failed: %s", i, errs[i])
		}
		if got := mustGit(t, dirs[i], "rev-parse", "HEAD^{tree}"); got != src.tree(tip).String() {
			t.Fatalf("clone %d tree %s, want %s", i, got, src.tree(tip))
		}
	}
	srv.cache.mu.Lock()
	builds := srv.cache.builds
	srv.cache.mu.Unlock()
	if builds != 1 {
		t.Fatalf("%d concurrent identical clones built %d packs, want 1", n, builds)
	}
}
