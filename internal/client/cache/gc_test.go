package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func install(t *testing.T, c *Cache, id plugin.ID, version, content string) *Version {
	t.Helper()
	v, err := c.Materialize(bg, id, version, files(map[string]string{"README.md": content}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Put(bg, RecordFor(v, "user")); err != nil {
		t.Fatal(err)
	}
	return v
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func TestGCGraceAndLeases(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := &clock{t0}
	c := newCache(t, Options{Now: clk.now})
	v1 := install(t, c, pid, "1.0.0", "one")
	v2 := install(t, c, pid, "2.0.0", "two") // v1 is orphaned at t0
	other := plugin.MustParseID("lint@corp")
	o1 := install(t, c, other, "1.0.0", "lint")

	// A session in another process leases v1 and stays alive.
	live := helper(t, "lease-and-hold", c.Home(), v1.Path)
	// A session that leased o1 and died without releasing.
	dead := helper(t, "lease-and-exit", c.Home(), o1.Path)
	dead.Wait()
	if err := c.Delete(bg, other); err != nil { // o1 orphaned at t0
		t.Fatal(err)
	}

	rep, err := c.GC(bg, t0.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 0 || !exists(v1.Path) || !exists(o1.Path) {
		t.Fatalf("GC within the grace period removed %v", rep.Removed)
	}
	if rep.StaleLeases != 1 {
		t.Errorf("stale leases removed = %d, want 1 (the dead session's)", rep.StaleLeases)
	}

	rep, err = c.GC(bg, t0.Add(8*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.Removed, []string{o1.Path}) {
		t.Fatalf("after the grace period removed %v, want only %s (v1 is leased by a live process)", rep.Removed, o1.Path)
	}
	if !exists(v1.Path) || !exists(v2.Path) || exists(o1.Path) {
		t.Fatalf("v1 exists=%v v2 exists=%v o1 exists=%v", exists(v1.Path), exists(v2.Path), exists(o1.Path))
	}
	var leased bool
	for _, k := range rep.Kept {
		leased = leased || k.Path == v1.Path && k.Reason == "leased"
	}
	if !leased {
		t.Errorf("kept = %+v, want v1 kept as leased", rep.Kept)
	}
	if exists(filepath.Join(c.Root(), "corp", "lint")) {
		t.Errorf("empty plugin dir of the removed version was left behind")
	}

	// The session ends (killed): its lease is stale and v1 goes.
	kill(t, live)
	rep, err = c.GC(bg, t0.Add(8*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.Removed, []string{v1.Path}) || exists(v1.Path) || !exists(v2.Path) {
		t.Fatalf("after the session died removed %v; v1 exists=%v v2 exists=%v", rep.Removed, exists(v1.Path), exists(v2.Path))
	}
}

func TestGCFirstSeenOrphanGetsGrace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCache(t, Options{Grace: time.Hour})
	// Materialized but never recorded (a crash between rename and Put).
	v, err := c.Materialize(bg, pid, "1.0.0", files(map[string]string{"a": "a"}))
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := c.GC(bg, t0); err != nil || len(rep.Removed) != 0 {
		t.Fatalf("first GC: %+v %v; want the unrecorded version kept for its grace period", rep, err)
	}
	if rep, err := c.GC(bg, t0.Add(30*time.Minute)); err != nil || len(rep.Removed) != 0 {
		t.Fatalf("GC within a 1h grace: %+v %v", rep, err)
	}
	rep, err := c.GC(bg, t0.Add(61*time.Minute))
	if err != nil || len(rep.Removed) != 1 || exists(v.Path) {
		t.Fatalf("GC after a 1h grace: %+v %v", rep, err)
	}
}

func TestOwnLeaseAndRelease(t *testing.T) {
	t0 := time.Now()
	c := newCache(t, Options{})
	v1 := install(t, c, pid, "1.0.0", "one")
	install(t, c, pid, "2.0.0", "two")
	l, err := c.Acquire(bg, v1.Path)
	if err != nil {
		t.Fatal(err)
	}
	if rep, _ := c.GC(bg, t0.Add(30*24*time.Hour)); len(rep.Removed) != 0 {
		t.Fatalf("GC removed a version leased by this process: %v", rep.Removed)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if rep, _ := c.GC(bg, t0.Add(30*24*time.Hour)); len(rep.Removed) != 1 {
		t.Fatalf("GC after release removed %v, want v1", rep.Removed)
	}
	if _, err := c.Acquire(bg, v1.Path); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("lease on a removed version: %v, want ErrNotInstalled", err)
	}
	if _, err := c.Acquire(bg, "/etc"); !errors.Is(err, ErrInvalid) {
		t.Errorf("lease outside the cache: %v, want ErrInvalid", err)
	}
}

func TestSeedUsedBeforeFetchAndNeverWritten(t *testing.T) {
	seed := t.TempDir()
	sv := filepath.Join(seed, "corp", "deploy", "1.0.0")
	files(map[string]string{"README.md": "from seed", "bin/x*": "#!/bin/sh\n"})(bg, sv)
	want, err := trust.Digest(sv)
	if err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.SealTree(seed); err != nil { // read-only, like a shipped image
		t.Fatal(err)
	}
	t.Cleanup(func() { removeTree(seed) })
	before, err := trust.Fingerprint(seed)
	if err != nil {
		t.Fatal(err)
	}
	c := newCache(t, Options{SeedDirs: []string{filepath.Join(t.TempDir(), "missing"), seed}})
	noFetch := func(context.Context, string) error {
		t.Error("network fill ran although a seed has the version")
		return errors.New("no network")
	}
	v, err := c.Ensure(bg, Request{ID: pid, Version: "1.0.0", Digest: want.Digest, Fill: noFetch})
	if err != nil {
		t.Fatal(err)
	}
	if v.Origin != "seed" || v.Seed != sv || v.Digest != want.Digest || !strings.HasPrefix(v.Path, c.Root()) {
		t.Fatalf("Ensure = %+v; want a copy of %s in the cache", v, sv)
	}
	if err := trust.CheckFingerprint(seed, before); err != nil {
		t.Fatalf("the seed dir was modified: %v", err)
	}
	// A seed whose content does not have the expected digest is skipped.
	fetched := false
	v, err = c.Ensure(bg, Request{ID: pid, Version: "1.0.0+b", Fill: func(ctx context.Context, dir string) error {
		fetched = true
		return files(map[string]string{"README.md": "fetched"})(ctx, dir)
	}})
	if err != nil || !fetched || v.Origin != "fill" {
		t.Fatalf("version absent from seeds: %+v %v fetched=%v", v, err, fetched)
	}
	// Without an expected digest no seed is used, even one that has the
	// version: nothing shows that it is what the marketplace publishes.
	fetched = false
	v, err = newCache(t, Options{SeedDirs: []string{seed}}).Ensure(bg, Request{ID: pid, Version: "1.0.0", Fill: func(ctx context.Context, dir string) error {
		fetched = true
		return files(map[string]string{"README.md": "fetched"})(ctx, dir)
	}})
	if err != nil || !fetched || v.Origin != "fill" || v.Digest == want.Digest {
		t.Fatalf("unpinned version with a seed copy: %+v %v fetched=%v; want the fill used", v, err, fetched)
	}
	other := t.TempDir()
	files(map[string]string{"README.md": "what the marketplace publishes"})(bg, other)
	pub, _ := trust.Digest(other)
	fetched = false
	c2 := newCache(t, Options{SeedDirs: []string{seed}})
	v, err = c2.Ensure(bg, Request{ID: pid, Version: "1.0.0", Digest: pub.Digest, Fill: func(ctx context.Context, dir string) error {
		fetched = true
		return files(map[string]string{"README.md": "what the marketplace publishes"})(ctx, dir)
	}})
	if err != nil || !fetched || v.Origin != "fill" {
		t.Fatalf("seed with the wrong digest: %+v %v fetched=%v; want the fill used", v, err, fetched)
	}
	if err := trust.CheckFingerprint(seed, before); err != nil {
		t.Fatalf("the seed dir was modified: %v", err)
	}
}

func TestRegistry(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := &clock{t0}
	c := newCache(t, Options{Now: clk.now})
	v, err := c.Materialize(bg, pid, "1.0.0", files(map[string]string{"a": "a"}))
	if err != nil {
		t.Fatal(err)
	}
	rec := RecordFor(v, "project")
	rec.GitCommitSha, rec.Auto, rec.ProjectPath = "0123456789abcdef0123456789abcdef01234567", true, "/src/app"
	if err := c.Put(bg, rec); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(pid)
	if err != nil {
		t.Fatal(err)
	}
	if got.InstallPath != v.Path || got.Digest != v.Digest || !got.InstalledAt.Equal(t0) || got.Scope != "project" || !got.Auto {
		t.Fatalf("Get = %+v", got)
	}
	if err := got.Pin().CheckFast(got.InstallPath); err != nil {
		t.Errorf("the recorded fingerprint does not match the installed tree: %v", err)
	}
	raw, _ := json.Marshal(got)
	for _, k := range []string{`"id":"deploy@corp"`, `"version":"1.0.0"`, `"scope":"project"`, `"installPath":`, `"gitCommitSha":`, `"installedAt":`, `"lastUpdated":`, `"auto":true`, `"digest":"w1:`, `"fingerprint":`} {
		if !bytes.Contains(raw, []byte(k)) {
			t.Errorf("record JSON %s lacks %s", raw, k)
		}
	}
	// An update keeps installedAt and moves lastUpdated.
	clk.t = t0.Add(time.Hour)
	v2, _ := c.Materialize(bg, pid, "1.1.0", files(map[string]string{"a": "b"}))
	if err := c.Put(bg, RecordFor(v2, "user")); err != nil {
		t.Fatal(err)
	}
	got, _ = c.Get(pid)
	if !got.InstalledAt.Equal(t0) || !got.LastUpdated.Equal(t0.Add(time.Hour)) || got.Version != "1.1.0" {
		t.Errorf("after update: %+v", got)
	}
	bad := []Record{
		{ID: pid, Version: "1.0.0", InstallPath: "/tmp/elsewhere"},
		{ID: pid, Version: "9.9.9"}, // not materialized
		{ID: pid, Version: "1.0.0", Scope: "managed"},
		{ID: pid, Version: "../1"},
	}
	for _, r := range bad {
		if err := c.Put(bg, r); !errors.Is(err, ErrInvalid) {
			t.Errorf("Put(%+v) = %v, want ErrInvalid", r, err)
		}
	}
	if list, _ := c.List(); len(list) != 1 {
		t.Errorf("List = %v", list)
	}
	if err := c.Delete(bg, pid); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(pid); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Get after Delete = %v, want ErrNotInstalled", err)
	}
	if err := c.Delete(bg, pid); err != nil {
		t.Errorf("second Delete: %v", err)
	}
}

func TestExportAndParseInstalled(t *testing.T) {
	c := newCache(t, Options{})
	v, _ := c.Materialize(bg, pid, "1.0.0", files(map[string]string{"a": "a"}))
	rec := RecordFor(v, "user")
	rec.Auto = true
	rec.GitCommitSha = "0123456789abcdef0123456789abcdef01234567"
	if err := c.Put(bg, rec); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := c.ExportInstalled(&buf); err != nil {
		t.Fatal(err)
	}
	var shape struct {
		Version int                         `json:"version"`
		Plugins map[string][]map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal(buf.Bytes(), &shape); err != nil || shape.Version != 2 {
		t.Fatalf("export %s: %v", buf.String(), err)
	}
	e := shape.Plugins["deploy@corp"][0]
	for _, k := range []string{"scope", "installPath", "version", "installedAt", "lastUpdated", "gitCommitSha", "auto"} {
		if _, ok := e[k]; !ok {
			t.Errorf("exported entry lacks %q: %v", k, e)
		}
	}
	recs, err := ParseInstalled(&buf)
	if err != nil || len(recs) != 1 || recs[0].ID != pid || recs[0].Version != "1.0.0" || !recs[0].Auto || recs[0].InstallPath != v.Path {
		t.Fatalf("ParseInstalled = %+v, %v", recs, err)
	}
	bad := map[string]string{
		"version 1":     `{"version":1,"plugins":{}}`,
		"bad id":        `{"version":2,"plugins":{"nope":[{"scope":"user","version":"1"}]}}`,
		"bad scope":     `{"version":2,"plugins":{"a@b":[{"scope":"managed","version":"1"}]}}`,
		"bad version":   `{"version":2,"plugins":{"a@b":[{"scope":"user","version":"../1"}]}}`,
		"bad time":      `{"version":2,"plugins":{"a@b":[{"scope":"user","version":"1","installedAt":"yesterday"}]}}`,
		"not an object": `[]`,
	}
	for name, in := range bad {
		_, err := ParseInstalled(strings.NewReader(in))
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Type != plugin.TypeManifestParse {
			t.Errorf("%s: err = %v, want a manifest-parse *plugin.Error", name, err)
		}
	}
}

func FuzzParseInstalled(f *testing.F) {
	f.Add(`{"version":2,"plugins":{"a@b":[{"scope":"user","installPath":"/x","version":"1.0.0","installedAt":"2026-01-01T00:00:00Z","lastUpdated":"2026-01-01T00:00:00Z","auto":true}]}}`)
	f.Add(`{"version":2,"plugins":{}}`)
	f.Add(`{"version":2,"plugins":{"a@b":[{"scope":"local","version":"v"}],"c@d":[]}}`)
	f.Add(`{"version":2,"plugins":null}`)
	f.Fuzz(func(t *testing.T, in string) {
		recs, err := ParseInstalled(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, r := range recs {
			if _, err := versionDir("/c", r.ID, r.Version); err != nil {
				t.Fatalf("accepted a record that cannot name a cache dir: %+v: %v", r, err)
			}
			if !validScopes[r.Scope] {
				t.Fatalf("accepted scope %q", r.Scope)
			}
		}
	})
}

func TestImportInstalledFromClaudeCode(t *testing.T) {
	claude := t.TempDir()
	dir := filepath.Join(claude, "plugins", "cache", "corp", "deploy", "1.2.0")
	files(map[string]string{".claude-plugin/plugin.json": `{"name":"deploy"}`, "bin/go*": "#!/bin/sh\n"})(bg, dir)
	js := `{"version":2,"plugins":{
	  "deploy@corp":[
	    {"scope":"project","projectPath":"/src/app","installPath":"` + dir + `","version":"1.2.0","installedAt":"2025-12-01T10:00:00.000Z","lastUpdated":"2025-12-02T10:00:00.000Z"},
	    {"scope":"user","installPath":"` + dir + `","version":"1.2.0","installedAt":"2025-11-01T10:00:00.000Z","lastUpdated":"2025-11-02T10:00:00.000Z","gitCommitSha":"0123456789abcdef0123456789abcdef01234567","auto":true}
	  ]}}`
	c := newCache(t, Options{})
	imported, skipped, err := c.ImportInstalled(bg, strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	if len(imported) != 1 || len(skipped) != 1 || !strings.Contains(skipped[0], "project") {
		t.Fatalf("imported %+v skipped %v; want the user entry imported and the project one skipped", imported, skipped)
	}
	r := imported[0]
	want := filepath.Join(c.Root(), "corp", "deploy", "1.2.0")
	if r.InstallPath != want || r.Scope != "user" || !r.Auto || r.GitCommitSha == "" ||
		!r.InstalledAt.Equal(time.Date(2025, 11, 1, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("record = %+v", r)
	}
	src, _ := trust.Digest(dir)
	if r.Digest != src.Digest {
		t.Errorf("imported digest %s, Claude Code's dir has %s", r.Digest, src.Digest)
	}
	// A running Claude Code session holds a lease (.in_use) on the version:
	// the import takes the plugin, not the lease.
	c = newCache(t, Options{})
	files(map[string]string{".in_use/4242.json": `{"pid":4242}`})(bg, dir)
	imported, _, err = c.ImportInstalled(bg, strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	if imported[0].Digest != src.Digest {
		t.Errorf("imported with a lease: digest %s; want the plugin's %s", imported[0].Digest, src.Digest)
	}
	if _, err := os.Lstat(filepath.Join(imported[0].InstallPath, ".in_use")); !os.IsNotExist(err) {
		t.Errorf("the lease was copied into wharf's cache: %v", err)
	}
	missing := strings.ReplaceAll(js, dir, filepath.Join(claude, "gone"))
	if _, _, err := c.ImportInstalled(bg, strings.NewReader(missing)); err == nil || !strings.Contains(err.Error(), "installPath") {
		t.Errorf("import with a missing installPath: %v", err)
	}
}

// GC removes plugin and marketplace directories it finds empty. A staging
// directory made at the same time (another process's install) must still
// be made: the cache re-creates the parents GC removed under it.
func TestStageDirWhileGCRemovesEmptyDirs(t *testing.T) {
	c := newCache(t, Options{})
	stop := make(chan struct{})
	gcErr := make(chan error, 1)
	go func() {
		defer close(gcErr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.GC(bg, time.Now()); err != nil {
				gcErr <- err
				return
			}
		}
	}()
	for i := range 3000 {
		id := plugin.ID{Name: fmt.Sprintf("p%d", i%7), Source: "m" + strconv.Itoa(i%3)}
		dir, err := c.StageDir(id, "stage")
		if err != nil {
			close(stop)
			t.Fatalf("stage %d: %v", i, err)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || filepath.Dir(dir) != filepath.Join(c.Root(), id.Source, id.Name) {
			close(stop)
			t.Fatalf("stage dir %s: %v", dir, err)
		}
		// Leave the plugin directory empty again, for GC to remove.
		if err := os.Remove(dir); err != nil {
			close(stop)
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-gcErr; err != nil {
		t.Fatalf("GC: %v", err)
	}
}

// A version uninstalled long ago and installed again: Ensure finds it in
// the cache, and a GC that runs before the install records it (GC runs
// after every install, in any process) must not remove it.
func TestEnsureOfAnOldOrphanSurvivesGCBeforeTheRecord(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := &clock{t0}
	c := newCache(t, Options{Now: clk.now})
	v := install(t, c, pid, "1.0.0", "one")
	if err := c.Delete(bg, pid); err != nil { // orphaned at t0
		t.Fatal(err)
	}
	if _, err := c.GC(bg, t0); err != nil {
		t.Fatal(err)
	}
	clk.t = t0.Add(30 * 24 * time.Hour)

	again, err := c.Ensure(bg, Request{ID: pid, Version: "1.0.0", Digest: v.Digest})
	if err != nil || again.Origin != "cache" {
		t.Fatalf("Ensure of the cached version: %+v, %v", again, err)
	}
	rep, err := c.GC(bg, clk.t)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 0 {
		t.Fatalf("GC between Ensure and Put removed %v", rep.Removed)
	}
	if err := c.Put(bg, RecordFor(again, "user")); err != nil {
		t.Fatalf("recording the version Ensure returned: %v", err)
	}
}

// TestSeedFromClaudeCache: a seed that is Claude Code's plugin cache has a
// lease directory .in_use (and maybe an .orphaned_at mark) in each version;
// the seed still matches the version's digest, and the copy in wharf's
// cache holds the plugin's files only.
func TestSeedFromClaudeCache(t *testing.T) {
	seed := t.TempDir()
	sv := filepath.Join(seed, "corp", "deploy", "1.0.0")
	files(map[string]string{"README.md": "from claude", "commands/d.md": "deploy"})(bg, sv)
	want, err := trust.Digest(sv)
	if err != nil {
		t.Fatal(err)
	}
	files(map[string]string{".in_use/777.json": `{"pid":777}`, ".orphaned_at": "1767323045000"})(bg, sv)
	c := newCache(t, Options{SeedDirs: []string{seed}})
	v, err := c.Ensure(bg, Request{ID: pid, Version: "1.0.0", Digest: want.Digest, Fill: func(context.Context, string) error {
		t.Error("network fill ran although Claude Code's cache has the version")
		return errors.New("no network")
	}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Origin != "seed" || v.Digest != want.Digest {
		t.Fatalf("Ensure = %+v; want the seed's copy with digest %s", v, want.Digest)
	}
	for _, n := range []string{".in_use", ".orphaned_at"} {
		if _, err := os.Lstat(filepath.Join(v.Path, n)); !os.IsNotExist(err) {
			t.Errorf("%s was copied into wharf's cache: %v", n, err)
		}
	}
}
