package claudecompat

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// caseWant is what wharf loads from one minimal case: the components by
// "kind name", the failed components by "kind name", the version, or the
// error it refuses the plugin with. The comments say what Claude Code
// 2.1.332 does (TestClaudeConformanceLoad checks it against the real CLI).
type caseWant struct {
	comps   []string
	failed  []string
	version string
	errType string // the plugin is refused with this error type
	errText string
	check   func(t *testing.T, p *plugin.Plugin)
}

var cases = map[string]caseWant{
	// A declared path that is missing: claude loads the rest.
	"missing-path": {comps: []string{"agent a"}, failed: []string{"command ./commands/", "agent ./agents/gone.md"}},
	// The same LSP server in the entry and in .lsp.json: claude keeps one.
	"lsp-twice": {comps: []string{"lsp-server gopls"}, check: func(t *testing.T, p *plugin.Plugin) {
		if c := p.ComponentsOf(plugin.KindLSPServer); c[0].Path != "" {
			t.Errorf("gopls comes from %q; want the entry's definition", c[0].Path)
		}
	}},
	// "*" and "**" select every tool.
	"star-matcher": {comps: []string{"hook PostToolUse", "hook PreToolUse"}},
	// A symlink out of the plugin folder: claude copies its target; wharf
	// refuses the plugin, and says why and what to do (deliberate).
	"shared-link": {errType: plugin.TypeComponentLoad, errText: "cp -RL"},
	// strict: false, components only in plugin.json: claude loads them.
	"loose-hooks": {comps: []string{"command c", "hook Stop", "mcp-server srv"}},
	// strict: false, components in both: claude refuses it too.
	"loose-conflict": {errType: plugin.TypeConflict, errText: "keep the components in one place"},
	// The same MCP server in plugin.json and .mcp.json: plugin.json's wins.
	"mcp-twice": {comps: []string{"mcp-server s", "mcp-server t"}, check: func(t *testing.T, p *plugin.Plugin) {
		for _, c := range p.ComponentsOf(plugin.KindMCPServer) {
			if c.Name == "s" && c.Path != ".claude-plugin/plugin.json" {
				t.Errorf("s comes from %q; want plugin.json's definition", c.Path)
			}
		}
	}},
	// Events at the top of hooks.json: wharf reads them; claude refuses a
	// plugin with PreToolUse there (deliberate: wharf runs the guard).
	"hooks-bare": {comps: []string{"hook PreToolUse"}},
	// A matcher object in a guard event: both refuse the plugin.
	"matcher-object": {errType: plugin.TypeComponentLoad, errText: "expected string, got object"},
	// A matcher object elsewhere: the group is left out, the rest loads.
	"matcher-object-stop": {comps: []string{"hook SessionStart"}},
	// The object form of commands: the source file loads; inline content
	// is a failed component.
	"command-object": {comps: []string{"command about"}, failed: []string{"command hello"}},
	// An MCP bundle URL: no server, the rest loads.
	"mcp-bundle": {comps: []string{"command c"}, failed: []string{"mcp-server tool"}},
	// A timeout above a day is kept.
	"long-timeout": {comps: []string{"hook Stop"}},
	// A server name with a space, and an empty url: both listed.
	"mcp-names": {comps: []string{"mcp-server google calendar", "mcp-server later"}},
	// Agents are named by their front matter; a second one of a name is
	// dropped.
	"agent-names": {comps: []string{"agent plain", "agent reviewer"}},
	// plugin.json skills add to skills/; a listed skill is named by its
	// front matter.
	"skills-listed": {comps: []string{"skill b", "skill named-one", "skill a"}},
	// The entry's skills add to skills/ too.
	"entry-skills": {comps: []string{"skill b", "skill a"}},
	// Prompt and agent hooks are listed.
	"model-hooks": {comps: []string{"hook Stop", "hook SubagentStop"}},
	// A file reached through two declared paths is one command.
	"commands-twice": {comps: []string{"command sub:deep", "command top"}},
	// No version anywhere: the version comes from the checkout's commit
	// when installed (source.TestFetchRelativeCommitOfCheckout).
	"no-version": {comps: []string{"command n"}},
	// A plugin.json at the root gives the version, over the entry's.
	"root-manifest": {comps: []string{"command r"}, version: "2.0.0"},
}

// TestCases loads every minimal case of testdata/cases as wharf loads a
// plugin of a marketplace, and checks the result, with no claude needed.
func TestCases(t *testing.T) {
	root := filepath.Join("testdata", "cases")
	m, _, err := plugin.ReadMarketplace(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Plugins) != len(cases) {
		t.Errorf("%d plugins in the marketplace, %d cases here", len(m.Plugins), len(cases))
	}
	for i := range m.Plugins {
		e := &m.Plugins[i]
		t.Run(e.Name, func(t *testing.T) {
			want, ok := cases[e.Name]
			if !ok {
				t.Fatalf("no expectation for %s", e.Name)
			}
			dir, err := e.LocalDir(root)
			if err != nil {
				t.Fatal(err)
			}
			p, diags, err := plugin.Load(dir, e)
			if want.errType != "" {
				var pe *plugin.Error
				if !errors.As(err, &pe) || pe.Type != want.errType || !strings.Contains(err.Error(), want.errText) {
					t.Fatalf("Load = %v, %v; want a %s error saying %q", p, err, want.errType, want.errText)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load refused it: %v (%v)", err, diags)
			}
			var got, failed []string
			for _, c := range p.Components {
				got = append(got, string(c.Kind)+" "+c.Name)
			}
			for _, f := range p.Failed {
				failed = append(failed, string(f.Kind)+" "+f.Name)
			}
			if !reflect.DeepEqual(got, want.comps) {
				t.Errorf("components = %q; want %q", got, want.comps)
			}
			if !slices.Equal(failed, want.failed) {
				t.Errorf("failed = %q; want %q", failed, want.failed)
			}
			if want.version != "" && p.Manifest.Version != want.version {
				t.Errorf("version = %q; want %q", p.Manifest.Version, want.version)
			}
			if want.check != nil {
				want.check(t, p)
			}
		})
	}
}

// TestCaseDetails checks what the component list alone does not show.
func TestCaseDetails(t *testing.T) {
	root := filepath.Join("testdata", "cases", "plugins")
	read := func(rel string) []byte {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	h, _, err := plugin.ParseHooks(read("long-timeout/hooks/hooks.json"), "hooks.json")
	if err != nil || h.Hooks[plugin.HookStop][0].Hooks[0].Timeout != 100000 {
		t.Errorf("timeout above a day: %+v, %v; want 100000 seconds kept", h, err)
	}
	h, _, err = plugin.ParseHooks(read("star-matcher/hooks/hooks.json"), "hooks.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []plugin.HookEvent{plugin.HookPreToolUse, plugin.HookPostToolUse} {
		if m := h.Hooks[ev][0].Matcher; !plugin.MatchesEveryTool(m) {
			t.Errorf("%s matcher %q does not select every tool", ev, m)
		}
	}
}
