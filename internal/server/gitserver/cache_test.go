package gitserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/memory"
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

// packObjects lists the objects a pack holds, by hash (so by content).
func packObjects(t *testing.T, pack []byte) string {
	t.Helper()
	st := memory.NewStorage()
	if err := packfile.UpdateObjectStorage(st, bytes.NewReader(pack)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for h, o := range st.Objects {
		out = append(out, h.String()+" "+o.Type().String())
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestCachedPackEqualsFreshBuild: a clone answered from the pack cache gets
// the objects a server with an empty cache builds for the same request
// (go-git orders a pack's objects differently from build to build), for
// a shallow clone (a pack of one commit) and a full one (with deltas).
func TestCachedPackEqualsFreshBuild(t *testing.T) {
	needGit(t)
	src := newSrcRepo(t)
	src.commit(manyFiles(60, "v1"))
	src.commit(manyFiles(60, "v2"))
	tip := src.commit(map[string]string{"x.txt": "x\n"})
	for _, args := range [][]string{{"--depth", "1"}, {}} {
		clone := func(url string) {
			t.Helper()
			dir := filepath.Join(t.TempDir(), "c")
			if out, err := gitRun(t, "", append(append([]string{"clone", "-q"}, args...), url+"/repo.git", dir)...); err != nil {
				t.Fatalf("clone %v: %s", args, out)
			}
			if got := mustGit(t, dir, "rev-parse", "HEAD^{tree}"); got != src.tree(tip).String() {
				t.Fatalf("clone %v: tree %s, want %s", args, got, src.tree(tip))
			}
		}
		cached := &Server{}
		url := src.serve(cached)
		clone(url)
		clone(url) // answered from the cache
		fresh := &Server{}
		clone(src.serve(fresh))
		cached.cache.mu.Lock()
		fresh.cache.mu.Lock()
		if cached.cache.builds != 1 || fresh.cache.builds != 1 {
			t.Fatalf("clone %v: %d and %d builds, want 1 each", args, cached.cache.builds, fresh.cache.builds)
		}
		if len(cached.cache.entries) != 1 || len(fresh.cache.entries) != 1 {
			t.Fatalf("clone %v: %d and %d cached packs, want 1 each", args, len(cached.cache.entries), len(fresh.cache.entries))
		}
		for key, c := range cached.cache.entries {
			f, ok := fresh.cache.entries[key]
			switch {
			case !ok:
				t.Errorf("clone %v: the fresh server keyed its pack otherwise", args)
			case packObjects(t, c.res.pack) != packObjects(t, f.res.pack):
				t.Errorf("clone %v: cached pack holds other objects than a fresh build", args)
			case fmt.Sprint(c.res.shallow, c.res.unshallow, c.res.objects) != fmt.Sprint(f.res.shallow, f.res.unshallow, f.res.objects):
				t.Errorf("clone %v: shallow update or object count differ", args)
			}
		}
		fresh.cache.mu.Unlock()
		cached.cache.mu.Unlock()
	}
}
