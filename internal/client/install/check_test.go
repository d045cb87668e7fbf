package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/testworld"
	"github.com/wharfhq/wharf/plugin"
)

// TestInstallCheckOfMarketplaceTreeEqualsCheckFirst installs plugins stored
// in a marketplace the usual way, where the load of the plugin's directory
// in the marketplace is made only when something fails or the fetched copy
// left entries out, and with that load made first (checkBeforeFetch), and
// requires the same error or the same registry from both: on good trees,
// on trees refused for a manifest, a component or a link out of the
// plugin, and on one whose bad link is in the top-level .git that the copy
// leaves out.
func TestInstallCheckOfMarketplaceTreeEqualsCheckFirst(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.md")
	write(t, outside, "secret\n")
	mkt := t.TempDir()
	m := func(name string, extra string, deps ...string) string {
		s := testworld.Manifest(name, "1.0.0", deps...)
		if extra != "" {
			s = strings.TrimSuffix(s, "}") + ", " + extra + "}"
		}
		return s
	}
	trees := map[string]map[string]string{
		"base":       {".claude-plugin/plugin.json": m("base", ""), "commands/b.md": "B.\n"},
		"extra":      {".claude-plugin/plugin.json": m("extra", ""), "commands/e.md": "E.\n"},
		"good":       {".claude-plugin/plugin.json": m("good", "", "base"), "commands/g.md": "G.\n"},
		"gitkept":    {".claude-plugin/plugin.json": m("gitkept", "", "base"), "commands/g.md": "G.\n", ".git/config": "[core]\n"},
		"badjson":    {".claude-plugin/plugin.json": `{"name": "badjson",`, "commands/x.md": "X.\n"},
		"badhooks":   {".claude-plugin/plugin.json": m("badhooks", "", "base", "extra"), "hooks/hooks.json": `{"hooks":`},
		"linkout":    {".claude-plugin/plugin.json": m("linkout", "", "base")},
		"gitlinkout": {".claude-plugin/plugin.json": m("gitlinkout", `"commands": ["./.git/x.md"]`, "base")},
		"githooks":   {".claude-plugin/plugin.json": m("githooks", `"hooks": "./.git/hooks.json"`), ".git/hooks.json": `{"hooks":`},
	}
	testworld.Marketplace(t, mkt, "corp", trees)
	for rel, target := range map[string]string{"linkout/commands/x.md": outside, "gitlinkout/.git/x.md": outside} {
		p := filepath.Join(mkt, "plugins", filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Skipf("symlinks: %v", err)
		}
	}
	install := func(first bool, name string) (string, map[string]string) {
		old := checkBeforeFetch
		checkBeforeFetch = first
		defer func() { checkBeforeFetch = old }()
		tw := testworld.New(t)
		mgr, in := newInstaller(t, tw)
		addMarketplaceDir(t, mgr, mkt)
		_, err := in.Install(bg, Request{ID: plugin.MustParseID(name + "@corp")})
		msg := ""
		if err != nil {
			msg = strings.ReplaceAll(err.Error(), tw.Home, "HOME")
		}
		recs, lerr := tw.Cache.List()
		if lerr != nil {
			t.Fatal(lerr)
		}
		reg := map[string]string{}
		for _, r := range recs {
			reg[r.ID.String()] = r.Version + " " + r.Digest + " " + strings.TrimPrefix(r.InstallPath, tw.Home)
		}
		return msg, reg
	}
	refused := 0
	for _, name := range []string{"good", "gitkept", "badjson", "badhooks", "linkout", "gitlinkout", "githooks"} {
		wantErr, wantReg := install(true, name)
		gotErr, gotReg := install(false, name)
		if gotErr != wantErr {
			t.Errorf("%s: error\n%s\nwith the check first\n%s", name, gotErr, wantErr)
		}
		if !equalStrings(gotReg, wantReg) {
			t.Errorf("%s: registry %v, with the check first %v", name, gotReg, wantReg)
		}
		if wantErr != "" {
			refused++
			if len(wantReg) != 0 {
				t.Errorf("%s: refused and registered %v", name, wantReg)
			}
			if !strings.Contains(wantErr, filepath.Join(mkt, "plugins", name)) {
				t.Errorf("%s: the refusal does not name the marketplace's copy: %s", name, wantErr)
			}
		}
	}
	if refused != 5 {
		t.Fatalf("%d of the 5 bad trees refused", refused)
	}
}

func equalStrings(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
