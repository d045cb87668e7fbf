package marketplace

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/claudetest"
	"github.com/wharfhq/wharf/plugin"
)

// compatNames are marketplace names whose verdict real marketplaces and
// look-alikes depend on: the names of public marketplaces, every name
// Claude Code reserves, and spellings around each rule. want is Claude Code
// 2.1.332's verdict for a marketplace added from a local directory (true:
// refused).
var compatNames = map[string]bool{
	// public marketplaces Claude Code adds
	"claude-skills": false, "claude-code-skills": false, "loc-claude-plugins-official": false,
	"anthropic-agent-skills-local": false, "claude-code-workflows": false, "superpowers-marketplace": false,
	"wshobson-agents": false, "corp": false, "claude-ops": false, "skills": false, "official-tools": false,
	"sciences": false, "agentskills": false, "life_sciences": false, "anthropic-tools-v2": false,
	"anthropic-skills": false, "anthropics-skills": false, "claude": false, "anthropic": false,
	"claude-code": false, "claude-plugin": false, "claude-mods": false, "cc-plugin-x": false,
	"my-claude-plugins": false, "xclaude-marketplace": false, "claude-code-marketplace-x": false,
	"claude_code.plugins": false, "claudecode-marketplaces": false, "claude-tools-directory": false,
	"agent-skills-local": false, "healthcare-tools": false, "claude-code-official-x": false, "claude-code-official": false,
	// reserved names
	"claude-code-marketplace": true, "claude-code-plugins": true, "claude-plugins-official": true,
	"anthropic-marketplace": true, "anthropic-plugins": true, "agent-skills": true,
	"anthropic-agent-skills": true, "life-sciences": true, "knowledge-work-plugins": true,
	"claude-for-legal": true, "claude-for-financial-services": true, "financial-services-plugins": true,
	"first-party-plugins": true, "claude-tag-plugins": true, "claude-community": true,
	"claude-plugins-community": true, "healthcare": true, "anthropic-plugin-directory": true,
	"claude-plugin-directory": true, "Claude-Code-Plugins": true, "HealthCare": true,
	// imitations
	"claude-plugins-public": true, "claude-plugins": true, "claudeplugins": true, "claude-marketplace": true,
	"claude.marketplaces": true, "anthropic_marketplace_x": true, "claude-directory": true,
	"anthropic-directories": true, "claude-official": true, "official-claude-plugins": true,
	"the-official-claude": true, "anthropic_official": true, "official_anthropic_stuff": true,
	"claudeofficial": true, "my-anthropic-official-tools": true,
	"claude-plugin-s": true, "claudemarketplace-tools": true,
	// names of plugin sources that are not marketplaces
	"builtin": true, "inline": true, "skills-dir": true, "synced": true, "claude-plugin-test": true,
}

// deliberateNames are names wharf refuses and Claude Code accepts, on
// purpose (docs/claude-compat.md lists them). None today.
var deliberateNames = map[string]string{}

// TestClaudeCompatMarketplaceNames checks wharf's marketplace name rule
// (CheckName for a local directory) against the table, and, when the claude
// CLI is present (required in CI), against what `claude plugin marketplace
// add <dir>` does with each name.
func TestClaudeCompatMarketplaceNames(t *testing.T) {
	for name, want := range compatNames {
		got := CheckName(name, plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: "/src/m"}) != nil
		if got != want {
			t.Errorf("wharf refuses marketplace name %q: %v; want %v", name, got, want)
		}
	}
	for name := range deliberateNames {
		if CheckName(name, plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: "/src/m"}) == nil {
			t.Errorf("wharf accepts marketplace name %q, which it refuses on purpose", name)
		}
	}
	cli := claudetest.Find(t)
	claudetest.Lock(t, false)
	root := t.TempDir()
	names := map[string]bool{}
	for name := range compatNames {
		names[name] = true
	}
	for name := range deliberateNames {
		names[name] = true
	}
	version := cli.Version(t)
	// Each name is a subtest so that the runs overlap.
	t.Run("claude", func(t *testing.T) {
		for name := range names {
			if plugin.ValidateName(name) != nil {
				continue
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				dir := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Join(dir, ".claude-plugin"), 0o755); err != nil {
					t.Fatal(err)
				}
				doc := fmt.Sprintf(`{"name": %q, "owner": {"name": "x"}, "plugins": []}`, name)
				if err := os.WriteFile(plugin.MarketplaceFile(dir), []byte(doc), 0o644); err != nil {
					t.Fatal(err)
				}
				out, _ := cli.Stdout(t, t.TempDir(), root, "plugin", "marketplace", "add", dir, "--json")
				var res struct {
					Outcome string `json:"outcome"`
					Message string `json:"message"`
				}
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
					t.Fatalf("claude plugin marketplace add %s --json: %v\n%s", name, err, out)
				}
				claude := res.Outcome != "ok"
				wharf := CheckName(name, plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: dir}) != nil
				if _, ok := deliberateNames[name]; ok {
					if claude {
						t.Errorf("claude now refuses %q too; drop it from deliberateNames and docs/claude-compat.md", name)
					}
					return
				}
				if claude != wharf {
					t.Errorf("marketplace name differs from Claude Code %s: %s: claude refuses %v (%s), wharf refuses %v", version, name, claude, res.Message, wharf)
				}
			})
		}
	})
}
