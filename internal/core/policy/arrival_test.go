package policy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

func wantRule(t *testing.T, err error, rule, what string) {
	t.Helper()
	var d *Denial
	if !errors.As(err, &d) {
		t.Fatalf("%s: %v, want a policy denial by %s", what, err, rule)
	}
	for _, r := range d.Decision.Reasons {
		if r.Rule == rule {
			return
		}
	}
	t.Fatalf("%s: denied by %+v, want rule %s", what, d.Decision.Reasons, rule)
}

// blockedMarketplaces applies to every source a plugin's tree is fetched
// from (the entry's source and every redirect target), whatever the
// spelling; other sources and npm packages pass.
func TestAllowFetchAppliesBlockedMarketplaces(t *testing.T) {
	e := engineWith(t, `{"blockedMarketplaces": [
		{"source": "github", "repo": "evil/tools"},
		{"source": "git", "url": "http://127.0.0.1/git/tools.git"},
		{"source": "hostPattern", "hostPattern": "^files\\.evil\\.example$"}]}`)
	ctx := context.Background()
	for _, src := range []plugin.Source{
		{Kind: plugin.SourceGitHub, Repo: "Evil/Tools"},
		{Kind: plugin.SourceURL, URL: "https://github.com/evil/tools.git"},
		{Kind: plugin.SourceURL, URL: "git@github.com:evil/tools.git", Ref: "main"},
		{Kind: plugin.SourceURL, Repo: "evil/tools"},
		{Kind: plugin.SourceGitSubdir, URL: "https://github.com/evil/tools", Path: "plugins/x"},
		{Kind: plugin.SourceURL, URL: "http://127.0.0.1:41234/git/tools.git"},
		{Kind: plugin.SourceArchive, URL: "https://files.evil.example/p.zip"},
	} {
		err := e.AllowFetch(ctx, "deploy@corp", src)
		wantRule(t, err, "blockedMarketplaces", "fetch from "+src.URL+src.Repo)
		if !strings.Contains(err.Error(), "plugin source") {
			t.Errorf("message does not say what was refused: %v", err)
		}
	}
	for _, src := range []plugin.Source{
		{Kind: plugin.SourceGitHub, Repo: "good/tools"},
		{Kind: plugin.SourceURL, URL: "http://127.0.0.1:41234/r/tools.git"},
		{Kind: plugin.SourceArchive, URL: "https://files.good.example/p.zip"},
		{Kind: plugin.SourceNPM, Package: "evil-tools"},
	} {
		if err := e.AllowFetch(ctx, "deploy@corp", src); err != nil {
			t.Errorf("fetch from %+v: %v", src, err)
		}
	}
}

// A --plugin-dir inside a blocked directory, through a symlink or not, is
// refused; a managed enabledPlugins false for name@inline refuses it too.
func TestSideloadObeysBlocklistAndForcedOff(t *testing.T) {
	root := t.TempDir()
	blocked := filepath.Join(root, "blocked")
	if err := os.MkdirAll(filepath.Join(blocked, "deploy"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "innocent")
	if err := os.Symlink(blocked, link); err != nil {
		t.Fatal(err)
	}
	e := engineWith(t, `{"blockedMarketplaces": [{"source": "directory", "path": `+jsonString(blocked)+`}],
		"enabledPlugins": {"off@inline": false}}`)
	ctx := context.Background()
	for _, dir := range []string{filepath.Join(blocked, "deploy"), filepath.Join(link, "deploy"), blocked} {
		err := e.Check(ctx, Request{Action: ActionSideload, Path: dir, Plugin: plugin.ID{Name: "deploy", Source: plugin.SourceInline}})
		wantRule(t, err, "blockedMarketplaces", "sideload "+dir)
		if err := e.AllowSideload(ctx, dir); err == nil {
			t.Errorf("AllowSideload(%s) allowed a blocked directory", dir)
		}
	}
	fine := filepath.Join(root, "fine")
	err := e.Check(ctx, Request{Action: ActionSideload, Path: fine, Plugin: plugin.ID{Name: "off", Source: plugin.SourceInline}})
	wantRule(t, err, "enabledPlugins", "sideload of a plugin forced off")
	if err := e.Check(ctx, Request{Action: ActionSideload, Path: fine, Plugin: plugin.ID{Name: "on", Source: plugin.SourceInline}}); err != nil {
		t.Errorf("sideload of another directory: %v", err)
	}
}

func jsonString(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}
