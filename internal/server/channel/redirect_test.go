package channel

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/testutil/gitserve"
	"github.com/wharfhq/wharf/internal/testutil/netnstest"
	"github.com/wharfhq/wharf/plugin"
)

// A channel built by the server never carries a repository of the
// server's own network: a plugin whose git URL is on a public host that
// redirects to 127.0.0.1 is left out as unavailable, and no file of the
// internal repository reaches the channel. The public host is an address
// on lo inside the test's own network namespace.
func TestChannelRefusesRedirectToPrivateAddress(t *testing.T) {
	if !netnstest.Enter(t) {
		return
	}
	t.Setenv(fetch.AllowPrivateEnv, "")
	root := t.TempDir()
	work := t.TempDir()
	write(t, filepath.Join(work, ".claude-plugin/plugin.json"), `{"name": "leak", "version": "1.0.0"}`)
	write(t, filepath.Join(work, "commands/secret.md"), "internal-only-secret\n")
	gitRun(t, work, "init", "-q", "-b", "main")
	gitRun(t, work, "add", "-A")
	gitRun(t, work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "internal")
	gitRun(t, "", "clone", "-q", "--bare", work, filepath.Join(root, "corp", "internal.git"))
	internal := gitserve.Start(t, root, gitserve.Options{})
	public := gitserve.Start(t, t.TempDir(), gitserve.Options{Addr: netnstest.PublicAddr + ":0", Redirect: internal.URL})
	ca := append(append([]byte{}, internal.CA...), public.CA...)

	mkt := t.TempDir()
	write(t, filepath.Join(mkt, ".claude-plugin/marketplace.json"), `{"name": "ext", "owner": {"name": "x"}, "plugins": [
		{"name": "leak", "source": {"source": "url", "url": "`+public.URL+`/corp/internal.git"}}]}`)
	w := newWorld(t)
	w.known = []marketplace.Known{{Name: "ext", Source: plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: mkt}, InstallLocation: mkt}}

	v := &Vendor{Fetcher: source.NewFetcher(fetch.Config{CABundle: ca})}
	b := NewBuilder(t.TempDir(), w.st, v)
	res, err := b.Ensure(context.Background(), w.input(v, DefaultApproved(), nil), "fp1")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Head.Plan.Entries) != 0 {
		t.Fatalf("channel carries %+v", res.Head.Plan.Entries)
	}
	if lo := res.Head.Plan.LeftOut; len(lo) != 1 || lo[0].Kind != LeftUnavailable || !strings.Contains(lo[0].Reason, "private network address refused") {
		t.Fatalf("left out = %+v, want leak@ext unavailable: private network address refused", lo)
	}
	if n := len(internal.Requests()); n != 0 {
		t.Errorf("the internal server got %d requests", n)
	}
	clone := filepath.Join(t.TempDir(), "c")
	gitRun(t, "", "clone", "-q", b.repoDir(Approved), clone)
	out, _ := exec.Command("grep", "-r", "internal-only-secret", clone, b.Vendor.Dir).CombinedOutput()
	if strings.Contains(string(out), "internal-only-secret") {
		t.Fatalf("the internal repository's content reached the channel:\n%s", out)
	}
	if _, err := os.Stat(clone); err != nil {
		t.Fatal(err)
	}
}
