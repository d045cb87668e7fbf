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
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/testutil/gitserve"
	"github.com/wharfhq/wharf/plugin"
)

// bareRepo makes root/<name>.git a bare repository of one plugin whose
// command file holds text.
func bareRepo(t *testing.T, root, name, plugin, text string) {
	t.Helper()
	work := t.TempDir()
	write(t, filepath.Join(work, ".claude-plugin/plugin.json"), `{"name": "`+plugin+`", "version": "1.0.0"}`)
	write(t, filepath.Join(work, "commands/run.md"), text+"\n")
	gitRun(t, work, "init", "-q", "-b", "main")
	gitRun(t, work, "add", "-A")
	gitRun(t, work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "plugin")
	gitRun(t, "", "clone", "-q", "--bare", work, filepath.Join(root, name+".git"))
}

func policyWith(t *testing.T, managed string) *policy.Engine {
	t.Helper()
	e, err := policy.NewEngine([]policy.Layer{{Name: "managed", Managed: true, Origin: "managed-settings.json", Settings: []byte(managed)}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// wantDenied checks that direct@ext and redirected@ext are left out as
// denied by the managed layer's blockedMarketplaces, naming the source.
func wantDenied(t *testing.T, res Result) {
	t.Helper()
	left := map[string]LeftOut{}
	for _, lo := range res.Head.Plan.LeftOut {
		left[lo.Plugin] = lo
	}
	for _, id := range []string{"direct@ext", "redirected@ext"} {
		lo, ok := left[id]
		if !ok || lo.Kind != LeftDenied || len(lo.Reasons) == 0 || lo.Reasons[0].Rule != "blockedMarketplaces" || lo.Reasons[0].Layer != "managed" ||
			!strings.Contains(lo.Reason, "/corp/blocked.git is blocked by blockedMarketplaces (policy layer managed") {
			t.Errorf("%s left out as %+v, want denied: its source is blocked by blockedMarketplaces (policy layer managed)", id, lo)
		}
	}
}

// A channel does not carry a plugin of an allowed marketplace whose source
// is a repository the server's policy blocks (blockedMarketplaces), nor one
// whose source redirects to it: both are left out as denied, with the
// policy's layer and rule, and no file of the blocked repository reaches
// the channel. This holds when the plugins were vendored before the block
// (the copies are not fetched again, and a copy made through a redirect
// remembers where it was redirected to). The servers are real git servers
// on 127.0.0.1.
func TestChannelLeavesOutBlockedPluginSource(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	bareRepo(t, root+"/corp", "blocked", "direct", "blocked-repo-secret")
	bareRepo(t, root+"/corp", "good", "good", "good plugin")
	origin := gitserve.Start(t, root, gitserve.Options{HTTP: true})
	// The redirecting server is on another loopback address, which the
	// block does not name.
	redir := gitserve.Start(t, t.TempDir(), gitserve.Options{HTTP: true, Addr: "127.0.0.2:0", Redirect: origin.URL})

	mkt := t.TempDir()
	write(t, filepath.Join(mkt, "plugins/local/commands/l.md"), "local\n")
	write(t, filepath.Join(mkt, ".claude-plugin/marketplace.json"), `{"name": "ext", "owner": {"name": "x"}, "plugins": [
		{"name": "direct", "source": {"source": "url", "url": "`+origin.URL+`/corp/blocked.git"}},
		{"name": "redirected", "source": {"source": "url", "url": "`+redir.URL+`/corp/blocked.git"}},
		{"name": "good", "source": {"source": "url", "url": "`+origin.URL+`/corp/good.git"}},
		{"name": "local", "source": "./plugins/local"}]}`)
	w := newWorld(t)
	w.known = []marketplace.Known{{Name: "ext", Source: plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: mkt}, InstallLocation: mkt}}
	v := &Vendor{Fetcher: source.NewFetcher(fetch.Config{AllowPrivate: true})}
	b := NewBuilder(t.TempDir(), w.st, v)
	ctx := context.Background()
	entries := func(r Result) map[string]bool {
		m := map[string]bool{}
		for _, e := range r.Head.Plan.Entries {
			m[e.Origin] = true
		}
		return m
	}

	// Before the block every plugin is in the channel.
	in := w.input(v, DefaultApproved(), nil)
	in.Sources = policyWith(t, `{}`)
	res, err := b.Ensure(ctx, in, "fp1")
	if err != nil {
		t.Fatal(err)
	}
	if got := entries(res); len(got) != 4 {
		t.Fatalf("before the block the channel carries %v, left out %+v", got, res.Head.Plan.LeftOut)
	}
	fetched := len(origin.Requests())

	// The server's policy blocks the repository.
	in.Sources = policyWith(t, `{"blockedMarketplaces": [{"source": "git", "url": "http://127.0.0.1/corp/blocked.git"}]}`)
	res, err = b.Ensure(ctx, in, "fp2")
	if err != nil {
		t.Fatal(err)
	}
	if got := entries(res); len(got) != 2 || !got["good@ext"] || !got["local@ext"] {
		t.Fatalf("the channel carries %v, want good@ext and local@ext", got)
	}
	wantDenied(t, res)
	if n := len(origin.Requests()); n != fetched {
		t.Errorf("the build fetched again (%d requests, %d before): the vendored copies should have been decided as they are", n, fetched)
	}
	clone := filepath.Join(t.TempDir(), "c")
	gitRun(t, "", "clone", "-q", b.repoDir(Approved), clone)
	out, _ := exec.Command("grep", "-r", "blocked-repo-secret", clone).CombinedOutput()
	if strings.Contains(string(out), "blocked-repo-secret") {
		t.Fatalf("the blocked repository's content is in the channel:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(clone, "plugins/good/commands/run.md")); err != nil {
		t.Fatalf("the allowed plugin is not in the channel: %v", err)
	}

	// A fresh server (no vendored copies) under the block fetches nothing
	// from the blocked repository and leaves out the same plugins.
	fresh := NewBuilder(t.TempDir(), w.st, &Vendor{Fetcher: source.NewFetcher(fetch.Config{AllowPrivate: true})})
	before := len(origin.Requests())
	in.Vendor = fresh.Vendor
	res, err = fresh.Ensure(ctx, in, "fp3")
	if err != nil {
		t.Fatal(err)
	}
	if got := entries(res); len(got) != 2 || !got["good@ext"] || !got["local@ext"] {
		t.Fatalf("fresh build carries %v, left out %+v", got, res.Head.Plan.LeftOut)
	}
	wantDenied(t, res)
	for _, r := range origin.Requests()[before:] {
		if strings.Contains(r.Path, "blocked.git") {
			t.Errorf("the blocked repository was fetched: %s", r.Path)
		}
	}
}
