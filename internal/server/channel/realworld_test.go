package channel

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/testutil/sharedtest"
	"github.com/wharfhq/wharf/plugin"
)

// TestRealWorldChannel builds the approved channel of the real-world
// marketplaces: every plugin stored in its marketplace is vendored and
// served with the digest of its tree; a plugin on a remote host (no
// network here) is left out as unavailable, naming its source; a plain
// git clone holds exactly what the entries pin.
func TestRealWorldChannel(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	rw := sharedtest.RealWorldDir(t)
	ents, err := os.ReadDir(rw)
	if err != nil {
		t.Fatal(err)
	}
	var known []marketplace.Known
	for _, e := range ents {
		dir := filepath.Join(rw, e.Name())
		if _, err := os.Stat(filepath.Join(dir, ".claude-plugin/marketplace.json")); err != nil {
			continue
		}
		abs, _ := filepath.Abs(dir)
		known = append(known, marketplace.Known{Name: e.Name(), Source: plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: abs}, InstallLocation: abs})
	}
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := NewBuilder(t.TempDir(), st, &Vendor{Fetcher: source.NewFetcher(fetch.Config{Timeout: 5 * time.Second, IdleTimeout: 5 * time.Second,
		GitHubHost: "http://127.0.0.1:1", NPMRegistry: "http://127.0.0.1:1"})})
	ctx := context.Background()
	in := Input{Definition: DefaultApproved(), Catalog: marketplace.LoadCatalog(known), Vendor: b.Vendor,
		Decide: func(context.Context, Candidate) (Verdict, error) { return Verdict{Allowed: true}, nil }}
	res, err := b.Ensure(ctx, in, "rw")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Head.Plan.Entries) < 100 {
		t.Fatalf("only %d entries from the real-world marketplaces", len(res.Head.Plan.Entries))
	}
	for _, lo := range res.Head.Plan.LeftOut {
		if lo.Kind != LeftUnavailable && lo.Kind != LeftDependency {
			t.Errorf("%s left out as %s: %s", lo.Plugin, lo.Kind, lo.Reason)
		}
	}
	clone := filepath.Join(t.TempDir(), "c")
	gitRun(t, "", "clone", "-q", "--depth", "1", "file://"+b.repoDir(Approved), clone)
	for _, e := range res.Head.Plan.Entries {
		tree, err := trust.Digest(filepath.Join(clone, "plugins", e.Name))
		if err != nil {
			t.Fatal(err)
		}
		if tree.Digest != e.Digest {
			t.Errorf("%s (%s): cloned digest %s, pinned %s", e.Name, e.Origin, tree.Digest, e.Digest)
		}
	}
	// The same inputs on another replica give the same commit.
	b2 := NewBuilder(t.TempDir(), st, b.Vendor)
	res2, err := b2.Ensure(ctx, in, "rw-again")
	if err != nil || res2.Head.Commit != res.Head.Commit || res2.Rebuilt {
		t.Fatalf("second build: %v %s vs %s", err, res2.Head.Commit, res.Head.Commit)
	}
	t.Logf("%d entries, %d left out, commit %s", len(res.Head.Plan.Entries), len(res.Head.Plan.LeftOut), res.Head.Commit)
}
