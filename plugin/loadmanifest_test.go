package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// sameAsLoad checks LoadManifest(dir, e) against Load(dir, e): the same
// manifest when Load succeeds, the same error text when it fails, except
// that a plugin refused only for a component (wantComponentOnly) loads its
// manifest. It returns Load's error.
func sameAsLoad(t *testing.T, what, dir string, e *Entry, wantComponentOnly bool) error {
	t.Helper()
	p, _, lerr := Load(dir, e)
	m, merr := LoadManifest(dir, e)
	switch {
	case lerr == nil && merr == nil:
		if !reflect.DeepEqual(p.Manifest, *m) {
			t.Errorf("%s: LoadManifest = %+v, Load's manifest = %+v", what, *m, p.Manifest)
		}
		if wantComponentOnly {
			t.Errorf("%s: Load succeeded; the case expects it to fail on a component", what)
		}
	case lerr != nil && merr != nil:
		if lerr.Error() != merr.Error() {
			t.Errorf("%s: LoadManifest error %q, Load's %q", what, merr, lerr)
		}
		if wantComponentOnly {
			t.Errorf("%s: LoadManifest failed (%v); the case expects only Load to", what, merr)
		}
	case lerr != nil && merr == nil:
		if !wantComponentOnly {
			t.Errorf("%s: Load failed (%v), LoadManifest did not", what, lerr)
		}
		var pe *Error
		if !errors.As(lerr, &pe) || pe.Type != TypeComponentLoad && pe.Type != TypeManifestInvalid {
			t.Errorf("%s: Load's error %v is not a component's", what, lerr)
		}
	default:
		t.Errorf("%s: LoadManifest failed (%v), Load did not", what, merr)
	}
	return lerr
}

// TestLoadManifestEqualsLoad compares the two over one marketplace of many
// kinds of plugin trees, read through marketplace.json as install reads
// its entries: the layout of bench/install.sh, trees without plugin.json,
// a root plugin.json, strict: false entries, merges with warnings, bad and
// oversized manifests, a manifest behind a symlink out of the plugin, a
// plugin reached through a symlink, and trees refused only for a component.
func TestLoadManifestEqualsLoad(t *testing.T) {
	mkt := t.TempDir()
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"plugin.json": `{"name":"outside","version":"9.9.9"}`})
	type tc struct {
		entry         string // marketplace.json entry, without the name and source
		files         map[string]string
		link          map[string]string // slash path → symlink target
		componentOnly bool              // Load refuses a component only
	}
	cases := map[string]tc{}
	// The bench layout: p02 depends on p01 and p00.
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("p%02d", i)
		deps := "[]"
		if i == 1 {
			deps = `["p00"]`
		} else if i == 2 {
			deps = `["p01","p00"]`
		}
		files := map[string]string{
			".claude-plugin/plugin.json": fmt.Sprintf(`{"name":%q,"version":"1.0.%d","description":"bench plugin","dependencies":%s}`, name, i, deps),
			"skills/s/SKILL.md":          "---\nname: s\ndescription: skill\n---\nA skill.\n",
			"agents/a.md":                "---\nname: a\ndescription: agent\n---\nAn agent.\n",
		}
		for c := 1; c <= 5; c++ {
			files[fmt.Sprintf("commands/c%d.md", c)] = fmt.Sprintf("---\ndescription: command %d\n---\nDo it.\n", c)
		}
		cases[name] = tc{files: files}
	}
	cases["no-manifest"] = tc{entry: `"version":"2.0.0","description":"d","dependencies":["p00",{"name":"p01","version":"^1.0.0"}]`,
		files: map[string]string{"commands/x.md": "X.\n", "skills/k/SKILL.md": "---\nname: k\ndescription: k\n---\nK.\n"}}
	cases["no-manifest-no-version"] = tc{files: map[string]string{"agents/a.md": "---\nname: a\ndescription: a\n---\nA.\n"}}
	cases["root-plugin-json"] = tc{entry: `"dependencies":["p00"]`, files: map[string]string{"plugin.json": `{"name":"ignored","version":"3.1.4","dependencies":["nope"]}`, "commands/x.md": "X.\n"}}
	cases["root-plugin-json-bad-version"] = tc{files: map[string]string{"plugin.json": `{"version":"not a version!"}`}}
	cases["root-plugin-json-unparsable"] = tc{files: map[string]string{"plugin.json": `{"version":`}}
	cases["merge"] = tc{entry: `"version":"1.0.0","dependencies":["p00","p01"],"keywords":["e"]`,
		files: map[string]string{".claude-plugin/plugin.json": `{"name":"merge","version":"1.1.0","dependencies":["p01","p02"],"author":{"name":"a"}}`}}
	cases["renamed"] = tc{files: map[string]string{".claude-plugin/plugin.json": `{"name":"other-name","version":"1.0.0"}`}}
	cases["entry-deps-only"] = tc{entry: `"dependencies":["p00"]`, files: map[string]string{".claude-plugin/plugin.json": `{"name":"entry-deps-only"}`}}
	cases["loose"] = tc{entry: `"strict":false,"version":"5.0.0","dependencies":["p00"],"commands":["./commands/a.md"]`,
		files: map[string]string{".claude-plugin/plugin.json": `{"name":"x","version":"6.0.0","dependencies":["p02"]}`, "commands/a.md": "A.\n"}}
	cases["loose-components-in-manifest"] = tc{entry: `"strict":false,"dependencies":["p01"]`,
		files: map[string]string{".claude-plugin/plugin.json": `{"name":"x","commands":["./c.md"],"dependencies":["p02"]}`, "c.md": "C.\n"}}
	cases["loose-conflict"] = tc{entry: `"strict":false,"commands":["./a.md"]`,
		files: map[string]string{".claude-plugin/plugin.json": `{"commands":["./b.md"]}`, "a.md": "A.\n", "b.md": "B.\n"}}
	cases["bad-json"] = tc{files: map[string]string{".claude-plugin/plugin.json": `{"name":"bad-json",`}}
	cases["bad-name"] = tc{files: map[string]string{".claude-plugin/plugin.json": `{"name":"Bad Name!"}`}}
	cases["bad-dependency"] = tc{files: map[string]string{".claude-plugin/plugin.json": `{"name":"bad-dependency","dependencies":["../x"]}`}}
	cases["bad-version-type"] = tc{files: map[string]string{".claude-plugin/plugin.json": `{"name":"bad-version-type","version":3}`}}
	cases["manifest-is-dir"] = tc{files: map[string]string{".claude-plugin/plugin.json/x": "x"}}
	cases["oversized"] = tc{files: map[string]string{".claude-plugin/plugin.json": `{"name":"oversized","description":"` + strings.Repeat("a", MaxManifestSize) + `"}`}}
	cases["manifest-link-out"] = tc{link: map[string]string{".claude-plugin/plugin.json": filepath.Join(outside, "plugin.json")}}
	cases["manifest-link-in"] = tc{files: map[string]string{"real.json": `{"name":"manifest-link-in","version":"1.2.3","dependencies":["p00"]}`},
		link: map[string]string{".claude-plugin/plugin.json": "../real.json"}}
	cases["component-bad-hooks"] = tc{files: map[string]string{".claude-plugin/plugin.json": `{"name":"component-bad-hooks","dependencies":["p00"]}`,
		"hooks/hooks.json": `{"hooks":`}, componentOnly: true}
	cases["component-link-out"] = tc{files: map[string]string{".claude-plugin/plugin.json": `{"name":"component-link-out","version":"1.0.0"}`},
		link: map[string]string{"commands/x.md": filepath.Join(outside, "plugin.json")}, componentOnly: true}
	cases["component-bad-path"] = tc{files: map[string]string{".claude-plugin/plugin.json": `{"name":"component-bad-path","commands":["../up.md"]}`}}

	var entries []string
	for name, c := range cases {
		dir := filepath.Join(mkt, "plugins", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeTree(t, dir, c.files)
		for rel, target := range c.link {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Skipf("symlinks: %v", err)
			}
		}
		e := fmt.Sprintf(`{"name":%q,"source":"./plugins/%s"`, name, name)
		if c.entry != "" {
			e += "," + c.entry
		}
		entries = append(entries, e+"}")
	}
	// A plugin whose source is a symlink to a directory of the marketplace.
	if err := os.Symlink("p01", filepath.Join(mkt, "plugins", "linked")); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	entries = append(entries, `{"name":"linked","source":"./plugins/linked"}`)
	writeTree(t, mkt, map[string]string{".claude-plugin/marketplace.json": `{"name":"m","owner":{"name":"o"},"plugins":[` + strings.Join(entries, ",") + `]}`})

	m, _, err := ReadMarketplace(mkt)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for i := range m.Plugins {
		e := &m.Plugins[i]
		dir, err := e.LocalDir(mkt)
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		if sameAsLoad(t, e.Name, dir, e, cases[e.Name].componentOnly) != nil {
			failed++
		}
		// The same trees on their own, without an entry: the name is
		// plugin.json's or the directory's.
		sameAsLoad(t, e.Name+" without entry", dir, nil, cases[e.Name].componentOnly)
	}
	if len(m.Plugins) != len(cases)+1 || failed < 10 {
		t.Fatalf("%d plugins of %d read, %d refused: the cases did not run as written", len(m.Plugins), len(cases)+1, failed)
	}
	// Roots that are not plugin directories.
	sameAsLoad(t, "missing root", filepath.Join(mkt, "plugins", "missing"), nil, false)
	sameAsLoad(t, "root is a file", filepath.Join(mkt, ".claude-plugin", "marketplace.json"), nil, false)
}

// TestLoadManifestEqualsLoadOnCorp compares the two over every relative
// plugin of the test marketplace.
func TestLoadManifestEqualsLoadOnCorp(t *testing.T) {
	sameAsLoadUnder(t, filepath.Join("testdata", "corp"))
}

// TestLoadManifestEqualsLoadOnRealWorld does the same over the real
// marketplaces; it skips, or fails in CI, without them.
func TestLoadManifestEqualsLoadOnRealWorld(t *testing.T) {
	sameAsLoadUnder(t, realworldDir(t))
}

// sameAsLoadUnder runs sameAsLoad over every relative plugin of the
// marketplace at r, or of each marketplace directly under r.
func sameAsLoadUnder(t *testing.T, r string) {
	var mkts []string
	if _, err := os.Stat(filepath.Join(r, ".claude-plugin", "marketplace.json")); err == nil {
		mkts = append(mkts, r)
	} else {
		ds, _ := os.ReadDir(r)
		for _, d := range ds {
			if d.IsDir() {
				mkts = append(mkts, filepath.Join(r, d.Name()))
			}
		}
	}
	n := 0
	for _, root := range mkts {
		m, _, err := ReadMarketplace(root)
		if err != nil {
			continue
		}
		// Entries whose directory cannot be used are not compared.
		entries, _ := relativeEntriesOf(m, root)
		for _, r := range entries {
			sameAsLoad(t, root+": "+r.entry.Name, r.dir, r.entry, false)
			n++
		}
	}
	if n == 0 {
		t.Fatalf("no plugin compared under %s", r)
	}
	t.Logf("%d plugins compared", n)
}
