package api

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/server/channel"
	"github.com/wharfhq/wharf/internal/testutil/gitserve"
)

// The server's channels ask its policy about every plugin's own source
// and every redirect of its fetch: once an admin blocks a repository
// (blockedMarketplaces in a policy layer), a plugin of an allowed
// marketplace whose source is that repository, or redirects to it, leaves
// the channel as denied by that layer. Real git servers on 127.0.0.1.
func TestChannelLeavesOutBlockedSource(t *testing.T) {
	needGit(t)
	root := t.TempDir()
	work := t.TempDir()
	writeFile(t, filepath.Join(work, ".claude-plugin/plugin.json"), `{"name": "tool", "version": "1.0.0"}`)
	writeFile(t, filepath.Join(work, "commands/tool.md"), "Tool.\n")
	mustGit(t, work, "init", "-q", "-b", "main")
	mustGit(t, work, "add", "-A")
	mustGit(t, work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "tool")
	mustGit(t, "", "clone", "-q", "--bare", work, filepath.Join(root, "vendor", "tools.git"))
	origin := gitserve.Start(t, root, gitserve.Options{HTTP: true})
	redir := gitserve.Start(t, t.TempDir(), gitserve.Options{HTTP: true, Addr: "127.0.0.2:0", Redirect: origin.URL})

	ext := filepath.Join(t.TempDir(), "ext")
	writeFile(t, filepath.Join(ext, ".claude-plugin/marketplace.json"), `{"name": "ext", "owner": {"name": "x"}, "plugins": [
		{"name": "direct", "source": {"source": "url", "url": "`+origin.URL+`/vendor/tools.git"}},
		{"name": "redirected", "source": {"source": "url", "url": "`+redir.URL+`/vendor/tools.git"}}]}`)
	e, _ := newCatalogEnv(t, func(d *Deps) { d.Fetcher = source.NewFetcher(fetch.Config{AllowPrivate: true}) })
	admin, dev := e.tokens[RoleAdmin], e.tokens[RoleDeveloper]
	if res := e.do("POST", "/v1/marketplaces", admin, map[string]any{"name": "ext", "source": map[string]string{"source": "directory", "path": ext}}); res.status != 201 {
		t.Fatalf("add marketplace: %d %s", res.status, res.body)
	}
	inChannel := func() map[string]bool {
		var view ChannelView
		e.do("GET", "/v1/channels/approved", dev, nil).json(t, &view)
		m := map[string]bool{}
		for _, en := range view.Entries {
			m[en.Origin] = true
		}
		return m
	}
	if got := inChannel(); !got["direct@ext"] || !got["redirected@ext"] {
		t.Fatalf("before the block the channel carries %v", got)
	}

	if res := e.putLayer("org", "*new", map[string]any{"settings": map[string]any{
		"blockedMarketplaces": []any{map[string]string{"source": "git", "url": "http://127.0.0.1/vendor/tools.git"}}}}); res.status != 201 {
		t.Fatalf("put layer: %d %s", res.status, res.body)
	}
	var view ChannelView
	e.do("GET", "/v1/channels/approved", dev, nil).json(t, &view)
	for _, en := range view.Entries {
		if strings.HasSuffix(en.Origin, "@ext") {
			t.Errorf("%s is in the channel after its repository was blocked", en.Origin)
		}
	}
	left := map[string]channel.LeftOut{}
	for _, lo := range view.LeftOut {
		left[lo.Plugin] = lo
	}
	for _, id := range []string{"direct@ext", "redirected@ext"} {
		lo := left[id]
		if lo.Kind != channel.LeftDenied || len(lo.Reasons) == 0 || lo.Reasons[0].Layer != "org" || lo.Reasons[0].Rule != "blockedMarketplaces" ||
			!strings.Contains(lo.Reason, "/vendor/tools.git is blocked by blockedMarketplaces") {
			t.Errorf("%s left out as %+v, want denied by layer org's blockedMarketplaces naming the source", id, lo)
		}
	}
	if got := inChannel(); !got["deploy@corp"] {
		t.Errorf("the other marketplace's plugins left the channel: %v", got)
	}
}
