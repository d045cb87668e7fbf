package channel

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// world is two directory marketplaces: corp (deploy depends on lint; risky;
// lost has a source that does not exist) and tools (another lint).
type world struct {
	t     *testing.T
	known []marketplace.Known
	st    store.Store
	deny  map[string]bool
}

func newWorld(t *testing.T) *world {
	t.Helper()
	root := t.TempDir()
	corp := filepath.Join(root, "corp")
	write(t, filepath.Join(corp, "plugins/deploy/.claude-plugin/plugin.json"), `{"name": "deploy", "version": "1.2.0", "description": "Deploy", "dependencies": ["lint"]}`)
	write(t, filepath.Join(corp, "plugins/deploy/commands/ship.md"), "Ship it.\n")
	write(t, filepath.Join(corp, "plugins/lint/.claude-plugin/plugin.json"), `{"name": "lint", "version": "0.3.0"}`)
	write(t, filepath.Join(corp, "plugins/lint/commands/lint.md"), "Lint.\n")
	write(t, filepath.Join(corp, "plugins/risky/commands/run.md"), "Run anything.\n")
	if err := os.WriteFile(filepath.Join(corp, "plugins/risky/run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(corp, ".claude-plugin/marketplace.json"), `{"name": "corp", "owner": {"name": "IT"}, "plugins": [
		{"name": "deploy", "source": "./plugins/deploy", "category": "ops"},
		{"name": "lint", "source": "./plugins/lint"},
		{"name": "risky", "source": "./plugins/risky", "version": "2.0.0"},
		{"name": "lost", "source": "./plugins/lost"}]}`)
	tools := filepath.Join(root, "tools")
	write(t, filepath.Join(tools, "lint/commands/lint.md"), "Other lint.\n")
	write(t, filepath.Join(tools, ".claude-plugin/marketplace.json"), `{"name": "tools", "owner": {"name": "T"}, "plugins": [{"name": "lint", "source": "./lint", "version": "1.0.0"}]}`)
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w := &world{t: t, st: st, deny: map[string]bool{}}
	for _, n := range []string{"corp", "tools"} {
		dir := filepath.Join(root, n)
		w.known = append(w.known, marketplace.Known{Name: n, Source: plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: dir}, InstallLocation: dir})
	}
	return w
}

func (w *world) input(v *Vendor, def Definition, revs policy.Revocations) Input {
	return Input{Definition: def, Catalog: marketplace.LoadCatalog(w.known), Vendor: v, Revocations: revs,
		Decide: func(_ context.Context, c Candidate) (Verdict, error) {
			if w.deny[c.ID.String()] {
				return Verdict{Reasons: []Reason{{Layer: "org", Rule: "blocked", Message: c.ID.String() + " is blocked"}}}, nil
			}
			return Verdict{Allowed: true}, nil
		}}
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestBuildApprovedChannel(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w := newWorld(t)
	ctx := context.Background()
	b := NewBuilder(t.TempDir(), w.st, nil)
	def := DefaultApproved()
	res, err := b.Ensure(ctx, w.input(b.Vendor, def, nil), "fp1")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Rebuilt || res.Head.Generation != 1 {
		t.Fatalf("first build: %+v", res)
	}
	names := map[string]Entry{}
	for _, e := range res.Head.Plan.Entries {
		names[e.Name] = e
	}
	for _, n := range []string{"deploy", "lint-corp", "lint-tools", "risky"} {
		if _, ok := names[n]; !ok {
			t.Fatalf("entry %s missing: %+v", n, res.Head.Plan.Entries)
		}
	}
	if got := names["deploy"].Dependencies; len(got) != 1 || got[0] != "lint-corp" {
		t.Fatalf("deploy's dependencies = %v, want [lint-corp]", got)
	}
	if len(res.Head.Plan.LeftOut) != 1 || res.Head.Plan.LeftOut[0].Plugin != "lost@corp" || res.Head.Plan.LeftOut[0].Kind != LeftUnavailable {
		t.Fatalf("left out = %+v", res.Head.Plan.LeftOut)
	}

	// A plain git clone of the bare repository holds the marketplace, and
	// every plugin tree's w1: digest is the entry's.
	clone := filepath.Join(t.TempDir(), "c")
	gitRun(t, "", "clone", "-q", b.repoDir(Approved), clone)
	// marketplace.json holds only what Claude Code knows; the pins and
	// where each plugin came from are in the pins file, which wharf reads
	// as the entries' integrity.
	raw, err := os.ReadFile(filepath.Join(clone, ".claude-plugin/marketplace.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), `"integrity":`) || strings.Contains(string(raw), `"wharf":`) {
		t.Fatalf("marketplace.json carries wharf's keys: %s", raw)
	}
	mj, _, err := plugin.ReadMarketplaceFile(filepath.Join(clone, ".claude-plugin/marketplace.json"))
	if err != nil {
		t.Fatal(err)
	}
	pinsRaw, err := os.ReadFile(filepath.Join(clone, ".claude-plugin", plugin.PinsFileName))
	if err != nil {
		t.Fatal(err)
	}
	pins, err := plugin.ParsePins(pinsRaw, plugin.PinsFileName)
	if err != nil {
		t.Fatal(err)
	}
	if mj.Name != Approved || len(mj.Plugins) != 4 || pins.Channel != Approved {
		t.Fatalf("marketplace.json: %s\npins: %s", raw, pinsRaw)
	}
	for _, p := range mj.Plugins {
		tree, err := trust.Digest(filepath.Join(clone, "plugins", p.Name))
		if err != nil {
			t.Fatal(err)
		}
		if tree.Digest != p.Integrity || p.Source.Path != "./plugins/"+p.Name || pins.Plugins[p.Name].Origin == "" {
			t.Fatalf("plugin %s: digest %s, entry %+v, pin %+v", p.Name, tree.Digest, p, pins.Plugins[p.Name])
		}
	}
	// deploy's plugin.json was rewritten to name lint-corp.
	pj, _ := os.ReadFile(filepath.Join(clone, "plugins/deploy/.claude-plugin/plugin.json"))
	if !strings.Contains(string(pj), `"lint-corp"`) || names["deploy"].OriginDigest == "" {
		t.Fatalf("deploy plugin.json not rewritten: %s", pj)
	}
	if fi, err := os.Stat(filepath.Join(clone, "plugins/risky/run.sh")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Fatalf("run.sh lost its execute bit: %v %v", fi, err)
	}
	first := res.Head.Commit
	if got := gitRun(t, clone, "rev-parse", "HEAD"); got != first {
		t.Fatalf("clone HEAD %s, head %s", got, first)
	}

	// The same inputs give the same commit, on another replica too (its own
	// directory, the same store).
	b2 := NewBuilder(t.TempDir(), w.st, nil)
	res2, err := b2.Ensure(ctx, w.input(b2.Vendor, def, nil), "fp1")
	if err != nil {
		t.Fatal(err)
	}
	if res2.Head.Commit != first || res2.Rebuilt {
		t.Fatalf("replica: %+v", res2.Head.Commit)
	}
	// Recomputing with a new fingerprint but the same content: no new commit.
	res3, err := b2.Ensure(ctx, w.input(b2.Vendor, def, nil), "fp2")
	if err != nil || res3.Head.Commit != first || res3.Rebuilt {
		t.Fatalf("recompute: %v %+v", err, res3.Head)
	}

	// Denying lint@corp removes it and deploy (its dependent): a child commit.
	w.deny["lint@corp"] = true
	res4, err := b.Ensure(ctx, w.input(b.Vendor, def, nil), "fp3")
	if err != nil {
		t.Fatal(err)
	}
	if !res4.Rebuilt || res4.Head.Parent != first || len(res4.Head.Plan.Entries) != 2 {
		t.Fatalf("after deny: %+v", res4.Head)
	}
	var sawDep bool
	for _, lo := range res4.Head.Plan.LeftOut {
		if lo.Plugin == "deploy@corp" && lo.Kind == LeftDependency && lo.Dependency == "lint@corp" {
			sawDep = true
		}
		if lo.Plugin == "lint@corp" && (lo.Kind != LeftDenied || lo.Reasons[0].Rule != "blocked") {
			t.Fatalf("lint left out as %+v", lo)
		}
	}
	if !sawDep {
		t.Fatalf("deploy not left out for its dependency: %+v", res4.Head.Plan.LeftOut)
	}
	gitRun(t, clone, "fetch", "-q", "origin")
	if got := gitRun(t, clone, "rev-parse", "origin/main"); got != res4.Head.Commit {
		t.Fatalf("fetched %s, want %s", got, res4.Head.Commit)
	}
	if got := gitRun(t, clone, "rev-parse", "origin/main^"); got != first {
		t.Fatalf("parent %s, want %s", got, first)
	}

	// The replica that missed the change catches up from the store: same
	// commit, same history, without computing.
	res5, err := b2.Ensure(ctx, w.input(b2.Vendor, def, nil), "fp3")
	if err != nil || res5.Head.Commit != res4.Head.Commit {
		t.Fatalf("replica catch-up: %v %s", err, res5.Head.Commit)
	}
	clone2 := filepath.Join(t.TempDir(), "c2")
	gitRun(t, "", "clone", "-q", b2.repoDir(Approved), clone2)
	if got := gitRun(t, clone2, "rev-list", "--count", "HEAD"); got != "2" {
		t.Fatalf("replica history has %s commits", got)
	}

	// A revocation of risky's content leaves it out.
	revs := policy.Revocations{{ID: "r1", Plugin: "risky@corp", Version: "2.0.0", Reason: "bad release", Created: time.Now()}}
	res6, err := b.Ensure(ctx, w.input(b.Vendor, def, revs), "fp4")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res6.Head.Plan.Entries {
		if e.Origin == "risky@corp" {
			t.Fatal("revoked plugin still in the channel")
		}
	}
	builds, err := func() (hs []Head, err error) {
		err = w.st.View(func(r store.Reader) (err error) { hs, err = Builds(r, Approved); return })
		return
	}()
	if err != nil || len(builds) != 3 || !strings.Contains(strings.Join(builds[2].Changes, "\n"), "removed risky") {
		t.Fatalf("builds: %v %+v", err, builds)
	}
}

func TestDefinitionLimitsChannel(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	b := NewBuilder(t.TempDir(), w.st, nil)
	var def Definition
	if err := w.st.Update(func(tx store.Tx) (err error) {
		def, err = Put(tx, Definition{Name: "ops", Plugins: []string{"deploy@corp", "ghost@corp"}}, true, time.Now(), "tok")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	res, err := b.Ensure(ctx, w.input(b.Vendor, def, nil), "x")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range res.Head.Plan.Entries {
		got = append(got, e.Name)
	}
	if strings.Join(got, ",") != "deploy,lint" {
		t.Fatalf("ops entries = %v (deploy and its dependency lint, named as it is unique here)", got)
	}
	if len(res.Head.Plan.LeftOut) != 1 || res.Head.Plan.LeftOut[0].Kind != LeftNotFound {
		t.Fatalf("left out: %+v", res.Head.Plan.LeftOut)
	}
	// Errors of definitions.
	err = w.st.Update(func(tx store.Tx) error {
		_, err := Put(tx, Definition{Name: "ops"}, true, time.Now(), "")
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("duplicate create: %v", err)
	}
	err = w.st.Update(func(tx store.Tx) error {
		_, err := Put(tx, Definition{Name: "x", Plugins: []string{"no-at-sign"}}, true, time.Now(), "")
		return err
	})
	var fe *FieldError
	if !asFieldError(err, &fe) || fe.Field != "plugins[0]" {
		t.Fatalf("bad plugin id: %v", err)
	}
	if err := w.st.Update(func(tx store.Tx) error { return Delete(tx, Approved, time.Now(), "") }); err == nil {
		t.Fatal("approved deleted")
	}
	if err := w.st.Update(func(tx store.Tx) error { return Delete(tx, "ops", time.Now(), "") }); err != nil {
		t.Fatal(err)
	}
	var hist []Definition
	w.st.View(func(r store.Reader) (err error) { hist, err = History(r, "ops"); return })
	if len(hist) != 2 || !hist[1].Deleted {
		t.Fatalf("history: %+v", hist)
	}
	_ = plugin.ID{}
}

func asFieldError(err error, fe **FieldError) bool {
	return errors.As(err, fe)
}

// TestVendorPrunesUnusedCopies: copies a build used stay; copies no build
// used for Keep go, with the leftovers of a killed fetch, after the next
// build; a later build fetches what it needs again and gives the same tree.
func TestVendorPrunesUnusedCopies(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w := newWorld(t)
	ctx := context.Background()
	v := &Vendor{Keep: time.Hour}
	b := NewBuilder(t.TempDir(), w.st, v)
	def := DefaultApproved()
	first, err := b.Ensure(ctx, w.input(v, def, nil), "fp1")
	if err != nil {
		t.Fatal(err)
	}
	trees := filepath.Join(v.Dir, "trees")
	copies := func() []string {
		t.Helper()
		ms, err := filepath.Glob(filepath.Join(trees, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	used := copies()
	if len(used) == 0 {
		t.Fatal("the build vendored no copies")
	}
	if n, err := v.Prune(time.Now()); err != nil || n != 0 {
		t.Fatalf("Prune right after a build removed %d (%v), want 0", n, err)
	}
	age := func(paths ...string) {
		t.Helper()
		old := time.Now().Add(-2 * time.Hour)
		for _, p := range paths {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A copy of an earlier marketplace revision, a tree whose metadata a
	// kill lost, and a fetch's staging directory, all unused for 2h.
	stale := filepath.Join(trees, "0000000000000000000000000000000000000000")
	orphan := filepath.Join(trees, "1111111111111111111111111111111111111111")
	stage := filepath.Join(trees, ".stage-123")
	for _, d := range []string{stale, orphan, stage} {
		write(t, filepath.Join(d, "commands/x.md"), "old\n")
	}
	write(t, stale+".json", `{"digest":"w1:x"}`)
	age(append(used, stale, stale+".json", orphan, stage)...)

	// Builds prune at most once an hour: the first build's run counts.
	if res, err := b.Ensure(ctx, w.input(v, def, nil), "fp2"); err != nil || res.Pruned != 0 {
		t.Fatalf("a build within the hour pruned %d (%v), want none", res.Pruned, err)
	}
	if _, err := os.Lstat(stale); err != nil {
		t.Fatalf("the stale copy went before its time: %v", err)
	}
	age(used...) // that build used them again: make them old once more
	v.lastPrune = time.Time{}

	// The next build uses (touches) its copies, then prunes the rest.
	second, err := b.Ensure(ctx, w.input(v, def, nil), "fp2b")
	if err != nil {
		t.Fatal(err)
	}
	if second.PruneErr != nil || second.Pruned != 3 {
		t.Fatalf("build pruned %d (%v), want the 3 unused entries", second.Pruned, second.PruneErr)
	}
	for _, p := range []string{stale, stale + ".json", orphan, stage} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there after the prune (%v)", p, err)
		}
	}
	if got := copies(); !slices.Equal(got, used) {
		t.Fatalf("copies after the prune = %v, want the used ones %v", got, used)
	}

	// Unused for 2h, every copy goes; a build fetches them again and its
	// tree is the same.
	age(used...)
	if n, err := v.Prune(time.Now()); err != nil || n != len(used) {
		t.Fatalf("Prune removed %d (%v), want %d", n, err, len(used))
	}
	if len(copies()) != 0 {
		t.Fatalf("copies left: %v", copies())
	}
	third, err := b.Ensure(ctx, w.input(v, def, nil), "fp3")
	if err != nil {
		t.Fatal(err)
	}
	if third.Head.Tree != first.Head.Tree || third.Rebuilt {
		t.Fatalf("after fetching again: tree %s rebuilt %v, want the first build's tree %s unchanged", third.Head.Tree, third.Rebuilt, first.Head.Tree)
	}
	if len(copies()) != len(used) {
		t.Fatalf("copies after the rebuild = %d, want %d", len(copies()), len(used))
	}
}
