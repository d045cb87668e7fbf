package claudecompat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/claudetest"
)

// TestClaudeConformanceUninstallSettings runs the same install, uninstall
// and prune with the real claude CLI and with wharf on one marketplace (app
// depends on lib; other stands alone) and compares, after each step, the
// enabledPlugins entries each leaves in its user settings: an install
// enables the plugin and its dependency, an uninstall deletes the
// plugin's entry, a prune its dependency's.
func TestClaudeConformanceUninstallSettings(t *testing.T) {
	claude := claudetest.Find(t).Bin
	claudetest.Lock(t, false)
	src := t.TempDir()
	writeTree(t, src, map[string]string{
		".claude-plugin/marketplace.json": `{"name": "src", "owner": {"name": "wharf"}, "plugins": [
			{"name": "app", "source": "./plugins/app"},
			{"name": "lib", "source": "./plugins/lib"},
			{"name": "other", "source": "./plugins/other"}]}`,
		"plugins/app/.claude-plugin/plugin.json":   `{"name": "app", "version": "1.0.0", "dependencies": ["lib"]}`,
		"plugins/app/commands/go.md":               "---\ndescription: go\n---\nGo.\n",
		"plugins/lib/.claude-plugin/plugin.json":   `{"name": "lib", "version": "1.0.0"}`,
		"plugins/lib/commands/lib.md":              "---\ndescription: lib\n---\nLib.\n",
		"plugins/other/.claude-plugin/plugin.json": `{"name": "other", "version": "1.0.0"}`,
		"plugins/other/commands/other.md":          "---\ndescription: other\n---\nOther.\n",
	})
	m := copyMarket(t, src, "compat-uninstall", true)
	c, w := newClaude(t, claude), newWharf(t, buildWharf(t))
	cSettings := filepath.Join(c.cwd, ".claude", "settings.json")
	wSettings := filepath.Join(w.cwd, ".wharf", "settings.json")

	step := func(what string, claudeArgs, wharfArgs []string) {
		t.Helper()
		if _, all, err := c.run(claudeArgs...); err != nil {
			t.Fatalf("claude %s: %v\n%s", strings.Join(claudeArgs, " "), err, all)
		}
		if _, all, err := w.run(wharfArgs...); err != nil {
			t.Fatalf("wharf %s: %v\n%s", strings.Join(wharfArgs, " "), err, all)
		}
		ce, we := enabledEntries(t, cSettings), enabledEntries(t, wSettings)
		if !slices.Equal(ce, we) {
			t.Errorf("after %s: claude's enabledPlugins %v, wharf's %v", what, ce, we)
		}
		t.Logf("after %s: %v", what, ce)
	}
	if _, all, err := c.run("plugin", "marketplace", "add", m.Dir); err != nil {
		t.Fatalf("claude plugin marketplace add: %v\n%s", err, all)
	}
	if _, all, err := w.run("marketplace", "add", m.Dir); err != nil {
		t.Fatalf("wharf marketplace add: %v\n%s", err, all)
	}
	id := func(n string) string { return n + "@" + m.Name }
	step("install app", []string{"plugin", "install", id("app")}, []string{"install", id("app")})
	step("install other", []string{"plugin", "install", id("other")}, []string{"install", id("other")})
	step("uninstall app", []string{"plugin", "uninstall", id("app")}, []string{"uninstall", id("app")})
	if got := enabledEntries(t, wSettings); len(got) != 2 {
		t.Fatalf("after uninstall app wharf's entries are %v; want lib and other", got)
	}
	step("prune", []string{"plugin", "prune", "-y"}, []string{"prune"})
	if got := enabledEntries(t, wSettings); !slices.Equal(got, []string{id("other") + "=true"}) {
		t.Fatalf("after prune wharf's entries are %v; want only other", got)
	}
}

// enabledEntries lists the enabledPlugins entries of a settings file as
// "id=value", sorted; none for a missing file.
func enabledEntries(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		EnabledPlugins map[string]any `json:"enabledPlugins"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	out := []string{}
	for k, v := range doc.EnabledPlugins {
		b, _ := json.Marshal(v)
		out = append(out, k+"="+string(b))
	}
	sort.Strings(out)
	return out
}

// writeTree writes files (path relative to dir: content).
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
