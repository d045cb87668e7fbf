package install

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/testutil/testworld"
	"github.com/wharfhq/wharf/plugin"
)

// killedTrees is the closure the kill tests install: app needs lib and
// util, both need base. Each has nested directories, an executable and a
// symlink, so that every kind of entry the write path makes is written.
func killedTrees() map[string]map[string]string {
	trees := map[string]map[string]string{}
	for name, deps := range map[string][]string{"app": {"lib", "util"}, "lib": {"base"}, "util": {"base"}, "base": nil} {
		trees[name] = map[string]string{
			".claude-plugin/plugin.json":      testworld.Manifest(name, "1.0.0", deps...),
			"commands/run.md":                 "Run " + name + ".\n",
			"commands/deep/more/help.md":      "Help for " + name + ".\n",
			"skills/" + name + "/SKILL.md":    "---\nname: " + name + "\ndescription: skill\n---\nA skill.\n",
			"bin/tool*":                       "#!/bin/sh\necho " + name + "\n",
			"agents/" + name + ".md":          "---\nname: " + name + "\ndescription: agent\n---\nAn agent.\n",
			"docs/" + strings.Repeat("x", 40): strings.Repeat(name, 5000),
		}
	}
	return trees
}

// killedWorld is a home with the marketplace of killedTrees added, and an
// installer over it.
func killedWorld(t *testing.T) (*testworld.World, *Installer) {
	t.Helper()
	tw := testworld.New(t)
	mkt := filepath.Join(filepath.Dir(tw.Home), "mkt")
	testworld.Marketplace(t, mkt, "corp", killedTrees())
	for name := range killedTrees() {
		if err := os.Symlink("run.md", filepath.Join(mkt, "plugins", name, "commands", "alias.md")); err != nil {
			t.Fatal(err)
		}
	}
	mgr, in := newInstaller(t, tw)
	addMarketplaceDir(t, mgr, mkt)
	return tw, in
}

const (
	killedRootEnv = "WHARF_TEST_KILLED_ROOT"
	// killedSyncEnv is how the killed install makes its trees durable:
	// "each-file" or "file-system" (source.SyncMode).
	killedSyncEnv = "WHARF_TEST_KILLED_SYNC"
)

var killedSyncModes = map[string]source.SyncMode{"each-file": source.SyncEachFile, "file-system": source.SyncFileSystem}

// TestInstallKilledChild is not a test: it is the install that
// TestInstallKilledAtManyPoints runs under strace, which kills it.
func TestInstallKilledChild(t *testing.T) {
	root := os.Getenv(killedRootEnv)
	if root == "" {
		t.Skip("run by TestInstallKilledAtManyPoints")
	}
	tw := &testworld.World{TB: t, Home: filepath.Join(root, "home"), Project: filepath.Join(root, "project"), Managed: filepath.Join(root, "managed")}
	st, err := store.OpenBolt(layout.New(tw.Home).StateDB(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tw.Store = st
	if tw.Cache, err = cache.New(cache.Options{Home: tw.Home, Store: st}); err != nil {
		t.Fatal(err)
	}
	_, in := newInstaller(t, tw)
	mode, ok := killedSyncModes[os.Getenv(killedSyncEnv)]
	if !ok {
		t.Fatalf("%s=%q: want each-file or file-system", killedSyncEnv, os.Getenv(killedSyncEnv))
	}
	in.o.Fetcher.Sync = mode
	if _, err := in.Install(bg, Request{ID: plugin.MustParseID("app@corp")}); err != nil {
		t.Fatal(err)
	}
}

// An install killed (SIGKILL, by strace at the entry of a system call) at
// many points of its write path — the k-th fsync, syncfs, rename, mkdir
// and chmod for every k, the k-th file open and write for every few k
// (strace counts the calls of each thread) — leaves no partial install
// visible: every version directory there is whole (its digest is the one a
// complete install records), every registry record points at a whole
// version whose fingerprint holds, no temporary directory is left in a
// version's place, and installing again gives what an install never
// killed gives. It holds both when each file is fsynced and when each
// plugin's tree is synced by one syncfs, which is then made once per
// plugin, before the plugin is placed, and in place of most fsyncs.
func TestInstallKilledAtManyPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("kills an install at many points: skipped in -short")
	}
	straceBin, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed (apt-get install strace): it is what kills the install at each point")
	}
	if out, err := exec.Command(straceBin, "-f", "-o", os.DevNull, "true").CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here: %v\n%s", err, out)
	}
	// strace older than 4.16 cannot inject a signal: then it does not kill.
	probe := exec.Command(straceBin, "-f", "-qq", "-o", os.DevNull, "-e", "trace=openat,open", "-e", "inject=openat,open:signal=KILL:when=1", os.Args[0], "-test.run=^$")
	if out, err := probe.CombinedOutput(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Skipf("this strace cannot kill a process at a system call (inject=…:signal=KILL): %v\n%s", err, out)
	}
	// The digests an install that is never killed records.
	_, ref := killedWorld(t)
	res, err := ref.Install(bg, Request{ID: plugin.MustParseID("app@corp")})
	if err != nil {
		t.Fatal(err)
	}
	want := map[plugin.ID]string{}
	for _, i := range res.Installed {
		want[i.ID] = i.Digest
	}
	if len(want) != 4 {
		t.Fatalf("reference install: %d plugins, want 4", len(want))
	}
	// Every point of the syscalls that make the tree durable and place it;
	// every few of the far more numerous opens and writes.
	points := []struct {
		call   string
		stride int
	}{{"fsync", 1}, {"syncfs", 1}, {"renameat", 1}, {"mkdirat", 1}, {"fchmod", 1}, {"openat", 9}, {"write", 5}}
	kills := map[string]map[string]int{} // mode → call → points killed at
	for _, mode := range []string{"each-file", "file-system"} {
		kills[mode] = map[string]int{}
		for _, p := range points {
			kills[mode][p.call] = killAtEvery(t, straceBin, mode, p.call, p.stride, want)
		}
	}
	t.Logf("points killed at (the most calls of one thread): %v", kills)
	// What each mode calls, over all threads of an install never killed.
	each, fsys := countCalls(t, straceBin, "each-file"), countCalls(t, straceBin, "file-system")
	t.Logf("calls: each-file %v, file-system %v", each, fsys)
	if each["syncfs"] != 0 {
		t.Errorf("fsyncing each file, the install also called syncfs %d times", each["syncfs"])
	}
	if fsys["syncfs"] != len(want) {
		t.Errorf("syncing the file system, the install called syncfs %d times, want once per plugin (%d)", fsys["syncfs"], len(want))
	}
	if kills["file-system"]["syncfs"] == 0 {
		t.Error("syncing the file system, the install was never killed at a syncfs")
	}
	// Each plugin has 10 directories and 7 files, each fsynced once when
	// each file is.
	if fsys["fsync"]+17*len(want) > each["fsync"] {
		t.Errorf("syncing the file system, the install made %d fsyncs; fsyncing each file, %d: want at least %d fewer", fsys["fsync"], each["fsync"], 17*len(want))
	}
}

// countCalls runs the install that syncs as mode says under strace, never
// killed, and counts its fsync and syncfs calls over all its threads.
func countCalls(t *testing.T, straceBin, mode string) map[string]int {
	t.Helper()
	tw, _ := killedWorld(t)
	root := filepath.Dir(tw.Home)
	tw.Store.Close()
	log := filepath.Join(t.TempDir(), "strace.log")
	cmd := exec.Command(straceBin, "-f", "-qq", "-o", log, "-e", "trace=fsync,syncfs",
		os.Args[0], "-test.run=^TestInstallKilledChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), killedRootEnv+"="+root, killedSyncEnv+"="+mode)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: the install under strace: %v\n%s", mode, err, out)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for line := range strings.Lines(string(b)) {
		// "1234 fsync(7) = 0" or "1234 syncfs(5 <unfinished ...>"; a
		// "<... syncfs resumed>" line ends a call already counted.
		_, call, _ := strings.Cut(line, " ")
		if name, _, ok := strings.Cut(strings.TrimSpace(call), "("); ok && (name == "fsync" || name == "syncfs") {
			n[name]++
		}
	}
	return n
}

// killAtEvery kills the install that syncs as mode says at the k-th call
// for every stride-th k until the install has fewer calls than k, checks
// what each kill leaves and installs again, and returns the number of
// points it was killed at.
func killAtEvery(t *testing.T, straceBin, mode, call string, stride int, want map[plugin.ID]string) int {
	t.Helper()
	killed := 0
	for k := 1; ; k += stride {
		if k > 2000 {
			t.Fatalf("%s, %s: the install was still killed at call %d", mode, call, k)
		}
		tw, in := killedWorld(t)
		root := filepath.Dir(tw.Home)
		tw.Store.Close()
		cmd := exec.Command(straceBin, "-f", "-qq", "-o", os.DevNull, "-e", "trace="+call,
			"-e", "inject="+call+":signal=KILL:when="+strconv.Itoa(k),
			os.Args[0], "-test.run=^TestInstallKilledChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), killedRootEnv+"="+root, killedSyncEnv+"="+mode)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		done := err == nil
		if !done && !strings.Contains(err.Error(), "killed") {
			t.Fatalf("%s #%d: the install failed without being killed: %v\n%s", call, k, err, out)
		}
		where := fmt.Sprintf("%s, killed at %s #%d", mode, call, k)
		if done {
			where = fmt.Sprintf("%s, not killed (%s has fewer than %d calls)", mode, call, k)
		}
		checkNoPartialInstall(t, where, tw.Home, want)
		reopenAndInstallAgain(t, where, tw, in, want)
		if done {
			return killed
		}
		killed++
	}
}

// checkNoPartialInstall opens the home left behind and checks what any
// reader would see.
func checkNoPartialInstall(t *testing.T, where, home string, want map[plugin.ID]string) {
	t.Helper()
	st, err := store.OpenBolt(layout.New(home).StateDB(), store.Options{})
	if err != nil {
		t.Fatalf("%s: state: %v", where, err)
	}
	defer st.Close()
	c, err := cache.New(cache.Options{Home: home, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	for id, digest := range want {
		dir, err := c.Dir(id, "1.0.0")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(dir); err != nil {
			continue
		}
		if got, err := trust.Digest(dir); err != nil || got.Digest != digest {
			t.Errorf("%s: %s is there but not whole: %v %v, want %s", where, dir, got, err, digest)
		}
	}
	recs, err := c.List()
	if err != nil {
		t.Fatalf("%s: registry: %v", where, err)
	}
	for _, r := range recs {
		if r.Digest != want[r.ID] {
			t.Errorf("%s: %s recorded with %s, want %s", where, r.ID, r.Digest, want[r.ID])
		}
		if err := trust.CheckFingerprint(r.InstallPath, r.Fingerprint); err != nil {
			t.Errorf("%s: %s recorded but its tree fails its fingerprint: %v", where, r.ID, err)
		}
	}
}

// reopenAndInstallAgain installs app again over the home, as the user would
// after the kill, and checks it ends as an install never killed does.
func reopenAndInstallAgain(t *testing.T, where string, tw *testworld.World, in *Installer, want map[plugin.ID]string) {
	t.Helper()
	st, err := store.OpenBolt(layout.New(tw.Home).StateDB(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tw.Store = st
	if tw.Cache, err = cache.New(cache.Options{Home: tw.Home, Store: st}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	_, in = newInstaller(t, tw)
	if _, err := in.Install(bg, Request{ID: plugin.MustParseID("app@corp")}); err != nil {
		t.Fatalf("%s: installing again: %v", where, err)
	}
	recs, err := tw.Cache.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(want) {
		t.Errorf("%s: %d plugins installed after installing again, want %d", where, len(recs), len(want))
	}
	for _, r := range recs {
		if r.Digest != want[r.ID] {
			t.Errorf("%s: installed again, %s has %s, want %s", where, r.ID, r.Digest, want[r.ID])
		}
		if err := trust.CheckFingerprint(r.InstallPath, r.Fingerprint); err != nil {
			t.Errorf("%s: installed again, %s fails its fingerprint: %v", where, r.ID, err)
		}
		ents, err := os.ReadDir(filepath.Dir(r.InstallPath))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".tmp-") {
				t.Errorf("%s: installed again, %s is left beside %s", where, e.Name(), r.InstallPath)
			}
		}
	}
}

// The versions an install writes (fetched durable and read-only, digested
// from the hashes taken as the files were written, renamed into place) are
// the versions a plain fill of the marketplace's plugin directories makes:
// same digest, same fingerprint paths, kinds, modes and hashes.
func TestInstallEqualsPlainFill(t *testing.T) {
	tw, in := killedWorld(t)
	res, err := in.Install(bg, Request{ID: plugin.MustParseID("app@corp")})
	if err != nil {
		t.Fatal(err)
	}
	plainHome := testworld.New(t)
	mkt := filepath.Join(filepath.Dir(tw.Home), "mkt")
	recs := map[plugin.ID]cache.Record{}
	all, err := tw.Cache.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		recs[r.ID] = r
	}
	for _, i := range res.Installed {
		src := filepath.Join(mkt, "plugins", i.ID.Name)
		plain, err := plainHome.Cache.Materialize(bg, i.ID, i.Version, func(_ context.Context, dir string) error {
			return os.CopyFS(dir, os.DirFS(src))
		})
		if err != nil {
			t.Fatal(err)
		}
		r := recs[i.ID]
		if r.Digest != plain.Digest || i.Digest != plain.Digest {
			t.Fatalf("%s: installed %s (recorded %s), a plain fill makes %s", i.ID, i.Digest, r.Digest, plain.Digest)
		}
		if len(r.Fingerprint.Entries) != len(plain.FP.Entries) {
			t.Fatalf("%s: fingerprint of %d paths, plain %d", i.ID, len(r.Fingerprint.Entries), len(plain.FP.Entries))
		}
		for k, e := range r.Fingerprint.Entries {
			p := plain.FP.Entries[k]
			if e.Path != p.Path || e.Kind != p.Kind || e.Mode != p.Mode || e.Size != p.Size || e.Hash != p.Hash {
				t.Errorf("%s: fingerprint %+v, plain %+v", i.ID, e, p)
			}
		}
		if got, err := trust.Digest(r.InstallPath); err != nil || got.Digest != r.Digest {
			t.Errorf("%s: %s read again: %v %v", i.ID, r.InstallPath, got, err)
		}
	}
}
