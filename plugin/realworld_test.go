package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/sharedtest"
)

// realworldDir is ../shared/realworld relative to the repository root, that
// is ../../shared/realworld from this package's directory.
func realworldDir(t testing.TB) string {
	t.Helper()
	return sharedtest.RealWorldDir(t)
}

// realMarketplace reads one real marketplace and loads every relative plugin
// it lists, failing the test on any error.
func realMarketplace(t *testing.T, name string) (*Marketplace, map[string]*Plugin) {
	t.Helper()
	root := filepath.Join(realworldDir(t), name)
	m, diags, err := ReadMarketplace(root)
	if err != nil {
		t.Fatalf("ReadMarketplace(%s): %v", name, err)
	}
	for _, d := range diags {
		if d.Severity == SeverityError {
			t.Errorf("error diagnostic without an error: %s", d)
		}
	}
	loaded := map[string]*Plugin{}
	for i := range m.Plugins {
		e := &m.Plugins[i]
		if err := e.Source.Validate(); err != nil {
			t.Errorf("%s: plugin %s: source not understood: %v", name, e.Name, err)
		}
		if e.Source.Kind != SourceRelative {
			continue
		}
		dir, err := e.LocalDir(root)
		if err != nil {
			t.Errorf("%s: plugin %s: %v", name, e.Name, err)
			continue
		}
		p, _, err := Load(dir, e)
		if err != nil {
			t.Errorf("%s: Load(%s): %v", name, e.Name, err)
			continue
		}
		loaded[e.Name] = p
	}
	return m, loaded
}

func TestRealworldAnthropicsClaudeCode(t *testing.T) {
	m, loaded := realMarketplace(t, "anthropics-claude-code")
	if m.Name != "claude-code-plugins" || m.Owner.Name != "Anthropic" || m.EffectiveVersion() != "1.0.0" {
		t.Errorf("marketplace header = %q owner %q version %q", m.Name, m.Owner.Name, m.EffectiveVersion())
	}
	if len(m.Plugins) != 13 || len(loaded) != 13 {
		t.Fatalf("got %d entries, %d loaded; want 13 and 13", len(m.Plugins), len(loaded))
	}
	for name, p := range loaded {
		if len(p.Components) == 0 {
			t.Errorf("plugin %s has no components", name)
		}
	}
	// agent-sdk-dev has no plugin.json: its name and description come from
	// the entry.
	sdk := loaded["agent-sdk-dev"]
	if sdk.Manifest.Name != "agent-sdk-dev" || !strings.Contains(sdk.Manifest.Description, "Agent SDK") {
		t.Errorf("agent-sdk-dev manifest = %+v", sdk.Manifest)
	}
	// Hook events come from hooks/hooks.json.
	var hookify []string
	for _, c := range loaded["hookify"].ComponentsOf(KindHook) {
		hookify = append(hookify, c.Name)
		if c.Path != "hooks/hooks.json" {
			t.Errorf("hookify hook %s path = %q", c.Name, c.Path)
		}
	}
	if got := strings.Join(hookify, ","); got != "PostToolUse,PreToolUse,Stop,UserPromptSubmit" {
		t.Errorf("hookify hook events = %s", got)
	}
	// plugin-dev carries 7 skills, agents and commands.
	pd := loaded["plugin-dev"]
	if n := len(pd.ComponentsOf(KindSkill)); n != 7 {
		t.Errorf("plugin-dev has %d skills, want 7: %v", n, pd.ComponentsOf(KindSkill))
	}
	if len(pd.ComponentsOf(KindAgent)) == 0 || len(pd.ComponentsOf(KindCommand)) == 0 {
		t.Errorf("plugin-dev components = %v", pd.Components)
	}
	// security-guidance's plugin.json says 2.0.0 while the entry says 1.0.0:
	// plugin.json wins.
	if v := loaded["security-guidance"].Manifest.Version; v != "2.0.0" {
		t.Errorf("security-guidance version = %q, want plugin.json's 2.0.0", v)
	}
}

func TestRealworldAnthropicsSkills(t *testing.T) {
	m, loaded := realMarketplace(t, "anthropics-skills")
	if len(m.Plugins) != 3 || len(loaded) != 3 {
		t.Fatalf("got %d entries, %d loaded; want 3", len(m.Plugins), len(loaded))
	}
	want := map[string][]string{
		"document-skills": {"docx", "pdf", "pptx", "xlsx"},
		"example-skills": {"algorithmic-art", "brand-guidelines", "canvas-design", "doc-coauthoring", "frontend-design",
			"internal-comms", "mcp-builder", "skill-creator", "slack-gif-creator", "theme-factory", "web-artifacts-builder", "webapp-testing"},
		"claude-api": {"claude-api"},
	}
	for name, skills := range want {
		e := m.Entry(name)
		if e == nil || e.IsStrict() {
			t.Fatalf("entry %s missing or strict", name)
		}
		var got []string
		for _, c := range loaded[name].Components {
			if c.Kind != KindSkill {
				t.Errorf("%s: unexpected component %+v", name, c)
			}
			if c.Path != "skills/"+c.Name+"/SKILL.md" {
				t.Errorf("%s: skill %s path = %q", name, c.Name, c.Path)
			}
			got = append(got, c.Name)
		}
		if strings.Join(got, ",") != strings.Join(skills, ",") {
			t.Errorf("%s skills = %v, want %v", name, got, skills)
		}
	}
}

func TestRealworldWshobsonAgents(t *testing.T) {
	m, loaded := realMarketplace(t, "wshobson-agents")
	if len(m.Plugins) != 92 {
		t.Fatalf("got %d entries, want 92", len(m.Plugins))
	}
	var subdir []Entry
	for _, e := range m.Plugins {
		if e.Source.Kind == SourceGitSubdir {
			subdir = append(subdir, e)
		}
	}
	if len(subdir) != 1 || subdir[0].Source.URL != "https://github.com/major7apps/pensyve.git" || subdir[0].Source.Path != "integrations/claude-code" {
		t.Errorf("git-subdir entries = %+v", subdir)
	}
	if len(loaded) != 91 {
		t.Errorf("loaded %d relative plugins, want 91", len(loaded))
	}
	total := 0
	for name, p := range loaded {
		if len(p.Components) == 0 {
			t.Errorf("plugin %s has no components", name)
		}
		total += len(p.Components)
	}
	if total < 300 {
		t.Errorf("only %d components across the marketplace", total)
	}
	// pptx-deck-creation declares its skills and agents in plugin.json.
	pptx := loaded["pptx-deck-creation"]
	if n := len(pptx.ComponentsOf(KindSkill)); n != 5 {
		t.Errorf("pptx-deck-creation skills = %d, want 5", n)
	}
	if len(pptx.ComponentsOf(KindAgent)) == 0 {
		t.Errorf("pptx-deck-creation has no agents")
	}
	if v := m.EffectiveVersion(); v != "1.7.1" {
		t.Errorf("metadata.version = %q", v)
	}
}

func TestRealworldObraSuperpowers(t *testing.T) {
	m, loaded := realMarketplace(t, "obra-superpowers-marketplace")
	if len(m.Plugins) != 10 || len(loaded) != 0 {
		t.Fatalf("got %d entries, %d loaded; want 10 external", len(m.Plugins), len(loaded))
	}
	for _, e := range m.Plugins {
		if e.Source.Kind != SourceURL || !strings.HasPrefix(e.Source.URL, "https://github.com/obra/") {
			t.Errorf("%s source = %+v", e.Name, e.Source)
		}
	}
	if dev := m.Entry("superpowers-dev"); dev == nil || dev.Source.Ref != "dev" || dev.Source.Revision() != "dev" {
		t.Errorf("superpowers-dev = %+v", dev)
	}
}

// Every real marketplace validates without errors (warnings allowed),
// except where Claude Code errors too: superpowers-marketplace lists a
// third party's "claude-session-driver", a name Claude Code refuses
// (Anthropic's own marketplaces may use such names), and one plugin of
// wshobson-agents lists a folder as "agents", where Claude Code takes only
// .md files.
func TestRealworldValidate(t *testing.T) {
	dir := realworldDir(t)
	want := map[string]string{"obra-superpowers-marketplace": "plugins[7].name", "wshobson-agents": "agents[0]"}
	for _, name := range []string{"anthropics-claude-code", "anthropics-skills", "obra-superpowers-marketplace", "wshobson-agents"} {
		t.Run(name, func(t *testing.T) {
			diags, err := Validate(filepath.Join(dir, name), false)
			if (err != nil) != (want[name] != "") {
				t.Fatalf("Validate: %v", err)
			}
			for _, d := range diags {
				if d.Severity != SeverityWarning && d.Field != want[name] {
					t.Errorf("unexpected %s", d)
				}
			}
		})
	}
}

// Every real hooks file and Markdown front matter parses.
func TestRealworldComponentFiles(t *testing.T) {
	hooks, md := 0, 0
	err := filepath.WalkDir(realworldDir(t), func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		switch {
		case de.Name() == "hooks.json":
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h, _, err := ParseHooks(data, p)
			if err != nil {
				t.Errorf("ParseHooks(%s): %v", p, err)
			} else if len(h.Hooks) == 0 {
				t.Errorf("%s: no hook events", p)
			}
			hooks++
		case strings.HasSuffix(p, ".md") && (strings.Contains(p, "/agents/") || strings.Contains(p, "/commands/") || de.Name() == "SKILL.md"):
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if _, _, err := ParseFrontMatter(data); err != nil {
				t.Errorf("ParseFrontMatter(%s): %v", p, err)
			}
			md++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if hooks != 7 || md < 300 {
		t.Errorf("parsed %d hooks files and %d Markdown components", hooks, md)
	}
}
