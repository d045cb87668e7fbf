package collect

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

const copilotConfig = `// User settings belong in settings.json.
// This file is managed automatically.
{
  "installedPlugins": [
    {"name": "deploy", "marketplace": "approved", "version": "1.2.0", "cache_path": "/etc", "enabled": true},
    {"name": "lint", "marketplace": "approved", "version": "0.3.0", "enabled": false},
    {"name": "../x", "marketplace": "approved", "version": "1.0.0"},
    {"name": "gone", "marketplace": "approved", "version": "1.0.0"}
  ]
}
`

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func byID(ps []inventory.Plugin) map[string]inventory.Plugin {
	m := map[string]inventory.Plugin{}
	for _, p := range ps {
		m[p.ID] = p
	}
	return m
}

// A Copilot CLI home is reported from config.json and the copies under
// installed-plugins, hashed where wharf names them (not where cache_path
// points); a bad entry is left out with a warning, a missing copy failed.
func TestCopilotRead(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"config.json": copilotConfig,
		"installed-plugins/approved/deploy/.claude-plugin/plugin.json": `{"name":"deploy"}`,
		"installed-plugins/approved/lint/commands/lint.md":             "Lint.\n",
	})
	ps, warns, err := Copilot{Dir: dir}.Read()
	if err != nil {
		t.Fatal(err)
	}
	m := byID(ps)
	want, _ := trust.Digest(filepath.Join(dir, "installed-plugins/approved/deploy"))
	if d := m["deploy@approved"]; d.Digest != want.Digest || d.State != inventory.StateActive || d.Version != "1.2.0" {
		t.Fatalf("deploy: %+v, want digest %s", d, want.Digest)
	}
	if l := m["lint@approved"]; l.Enabled || l.State != inventory.StateDisabled || l.Digest == "" {
		t.Fatalf("lint: %+v", l)
	}
	if g := m["gone@approved"]; g.State != inventory.StateFailed || g.Reason == "" {
		t.Fatalf("gone: %+v", g)
	}
	if len(ps) != 3 || len(warns) != 1 || !strings.Contains(warns[0], "installedPlugins[2]") {
		t.Fatalf("plugins %v, warnings %q", ps, warns)
	}
}

// A Codex home is reported from config.toml's [plugins] tables and the
// newest version under plugins/cache; Codex's migrated command skills are
// not part of the digest.
func TestCodexRead(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"config.toml": "[marketplaces.approved]\nsource_type = \"git\"\nsource = \"http://127.0.0.1/x.git\"\n\n[plugins.\"deploy@approved\"]\nenabled = true\n\n[plugins.\"off@approved\"]\nenabled = false\n\n[plugins.\"bad@x@y\"]\nenabled = true\n",
		"plugins/cache/approved/deploy/1.2.0/commands/ship.md":                                                   "Ship.\n",
		"plugins/cache/approved/deploy/1.2.0/.codex-plugin/migrated-command-skills/source-command-ship/SKILL.md": "skill\n",
		"plugins/cache/approved/off/2.0.0/commands/off.md":                                                       "Off.\n",
		"plugins/cache/approved/off/2.0.0/.codex-plugin/plugin.json":                                             "{}",
	})
	ps, warns, err := Codex{Dir: dir}.Read()
	if err != nil {
		t.Fatal(err)
	}
	m := byID(ps)
	want, _ := trust.DigestOmitting(filepath.Join(dir, "plugins/cache/approved/deploy/1.2.0"), ".codex-plugin")
	if d := m["deploy@approved"]; d.Digest != want.Digest || d.Version != "1.2.0" || d.State != inventory.StateActive {
		t.Fatalf("deploy: %+v, want %s", d, want.Digest)
	}
	// A .codex-plugin the plugin ships itself is hashed.
	full, _ := trust.Digest(filepath.Join(dir, "plugins/cache/approved/off/2.0.0"))
	if o := m["off@approved"]; o.Digest != full.Digest || o.State != inventory.StateDisabled {
		t.Fatalf("off: %+v, want %s", o, full.Digest)
	}
	if len(ps) != 2 || len(warns) != 1 || !strings.Contains(warns[0], "bad@x@y") {
		t.Fatalf("plugins %v, warnings %q", ps, warns)
	}
}

// Files that are not the agent's shape are errors of type
// agent-state-invalid naming the file (and for TOML the line).
func TestAgentStateInvalid(t *testing.T) {
	for _, c := range []struct {
		name, file, content, want string
		read                      func(dir string) error
	}{
		{"copilot", "config.json", "// c\n{\"installedPlugins\": {}}", "config.json", func(d string) error { _, _, err := Copilot{Dir: d}.Read(); return err }},
		{"codex", "config.toml", "[plugins]\nx = \n", "line 2", func(d string) error { _, _, err := Codex{Dir: d}.Read(); return err }},
		{"codex-plugins-not-table", "config.toml", "plugins = 3\n", "plugins", func(d string) error { _, _, err := Codex{Dir: d}.Read(); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{c.file: c.content})
			err := c.read(dir)
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Type != TypeAgentState || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %s naming %q", err, TypeAgentState, c.want)
			}
		})
	}
	if _, _, err := (Codex{Dir: filepath.Join(t.TempDir(), "none")}).Read(); err == nil || !strings.Contains(err.Error(), "not a Codex home") {
		t.Fatalf("missing home: %v", err)
	}
	if _, _, err := (Copilot{Dir: filepath.Join(t.TempDir(), "none")}).Read(); err == nil || !strings.Contains(err.Error(), "not a Copilot CLI home") {
		t.Fatalf("missing home: %v", err)
	}
}

func FuzzParseCopilotConfig(f *testing.F) {
	f.Add([]byte(copilotConfig))
	f.Add([]byte("// x\n"))
	f.Add([]byte(`{"installedPlugins":[{"name":"a","marketplace":"b","version":"1","enabled":"yes"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ins, _, err := ParseCopilotConfig("config.json", b)
		if err != nil {
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Type != TypeAgentState {
				t.Fatalf("error of another kind: %v", err)
			}
			return
		}
		for _, in := range ins {
			if _, err := plugin.ParseID(in.ID.String()); err != nil {
				t.Fatalf("reported an invalid id %q", in.ID)
			}
		}
	})
}

func FuzzParseCodexConfig(f *testing.F) {
	f.Add([]byte("[plugins.\"deploy@approved\"]\nenabled = true\n"))
	f.Add([]byte("plugins = 1\n"))
	f.Add([]byte("[plugins]\n\"a@b\" = 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ins, _, err := ParseCodexConfig("config.toml", b)
		if err != nil {
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Type != TypeAgentState {
				t.Fatalf("error of another kind: %v", err)
			}
			return
		}
		for _, in := range ins {
			if _, err := plugin.ParseID(in.ID.String()); err != nil {
				t.Fatalf("reported an invalid id %q", in.ID)
			}
		}
	})
}

// A plugin Copilot CLI loads in place from a local directory marketplace
// (nothing copied, no config.json entry) is reported sideloaded, hashed in
// that directory; an entry whose source leaves the directory is not hashed.
func TestCopilotReadLive(t *testing.T) {
	dir, mk := t.TempDir(), t.TempDir()
	writeTree(t, mk, map[string]string{
		".claude-plugin/marketplace.json":          `{"name": "mk", "plugins": [{"name": "hello", "source": "./plugins/hello", "version": "1.0.0"}, {"name": "esc", "source": "../../etc"}]}`,
		"plugins/hello/commands/hi.md":             "hi\n",
		"plugins/hello/.claude-plugin/plugin.json": `{"name": "hello"}`,
	})
	writeTree(t, dir, map[string]string{
		"settings.json": `{"extraKnownMarketplaces": {"mk": {"source": {"source": "directory", "path": "` + mk + `"}}}, "enabledPlugins": {"hello@mk": true, "esc@mk": true, "gone@git": true}}`,
	})
	ps, warns, err := Copilot{Dir: dir}.Read()
	if err != nil {
		t.Fatal(err)
	}
	m := byID(ps)
	want, _ := trust.Digest(filepath.Join(mk, "plugins/hello"))
	if h := m["hello@mk"]; h.Digest != want.Digest || h.Install != inventory.InstallSideloaded || h.State != inventory.StateActive || h.Version != "1.0.0" {
		t.Fatalf("hello: %+v, want %s", h, want.Digest)
	}
	if e := m["esc@mk"]; e.State != inventory.StateFailed || e.Digest != "" || !strings.Contains(e.Reason, "leaves the marketplace") {
		t.Fatalf("esc: %+v", e)
	}
	if len(ps) != 2 || len(warns) != 1 || !strings.Contains(warns[0], "gone@git") {
		t.Fatalf("plugins %+v, warnings %q", ps, warns)
	}
}
