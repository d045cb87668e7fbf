package plugin

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/claudetest"
)

// pluginNameCases are Claude Code 2.1.332's verdicts on plugin names.
var pluginNameCases = map[string]NameVerdict{
	"claude-helper": NameImitation, "claude": NameImitation, "anthropic": NameImitation, "anthropics": NameImitation,
	"claude-code": NameImitation, "claude-mods": NameImitation, "anthropic-tools": NameImitation,
	"anthropics-x": NameImitation, "cc-plugin-x": NameImitation, "Claude_Helper": NameImitation,
	"claude.helper": NameImitation, "official-claude": NameImitation, "claude-official": NameImitation,
	"tools-anthropic-official": NameImitation, "claudeofficial": NameImitation, "x-official_claude": NameImitation,
	"claude-code-review": NameImitation,
	"my-claude-tool":     NameLooksOwn, "tool-for-claude": NameLooksOwn, "anthropic2-x": NameOK,
	"x-anthropics": NameLooksOwn, "code-claude": NameLooksOwn,
	"claudehelper": NameOK, "claudecode": NameImitation, "cc-plugin": NameOK, "ccplugin-x": NameImitation, "deploy": NameOK,
	"official-tools": NameOK, "claude2": NameOK, "superpowers": NameOK, "claude-code-official-tools": NameImitation,
	"code-review": NameOK, "cc-helper": NameOK,
}

func TestClaudePluginName(t *testing.T) {
	for name, want := range pluginNameCases {
		if got, msg := ClaudePluginName(name); got != want {
			t.Errorf("ClaudePluginName(%q) = %v (%s); want %v", name, got, msg, want)
		}
	}
	if _, msg := ClaudePluginName("claude-helper"); !strings.Contains(msg, "name it for what it does") {
		t.Errorf("message %q does not say what to do", msg)
	}
}

// TestClaudeCompatPluginNames runs `claude plugin validate` over a
// marketplace whose entries carry every name of pluginNameCases and
// compares each verdict (error, warning, none) with ClaudePluginName.
func TestClaudeCompatPluginNames(t *testing.T) {
	cli := claudetest.Find(t)
	claudetest.Lock(t, false)
	dir := t.TempDir()
	var names []string
	var entries []string
	for name := range pluginNameCases {
		names = append(names, name)
		entries = append(entries, fmt.Sprintf(`{"name": %q, "description": "d", "source": {"source": "github", "repo": "o/r"}}`, name))
	}
	if err := os.MkdirAll(filepath.Join(dir, ".claude-plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	doc := `{"name": "names", "description": "d", "owner": {"name": "x"}, "plugins": [` + strings.Join(entries, ",") + `]}`
	if err := os.WriteFile(MarketplaceFile(dir), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := cli.Stdout(t, t.TempDir(), dir, "plugin", "validate", dir, "--json")
	var res struct {
		Manifest struct {
			Errors   []struct{ Path, Message string } `json:"errors"`
			Warnings []struct{ Path, Message string } `json:"warnings"`
		} `json:"manifest"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("claude plugin validate --json: %v\n%s", err, out)
	}
	claude := make([]NameVerdict, len(names))
	for _, d := range res.Manifest.Warnings {
		var i int
		if _, err := fmt.Sscanf(d.Path, "plugins[%d].name", &i); err == nil && strings.HasSuffix(d.Path, ".name") {
			claude[i] = NameLooksOwn
		}
	}
	for _, d := range res.Manifest.Errors {
		var i int
		if _, err := fmt.Sscanf(d.Path, "plugins[%d].name", &i); err == nil && strings.HasSuffix(d.Path, ".name") {
			claude[i] = NameImitation
		}
	}
	for i, name := range names {
		if got, _ := ClaudePluginName(name); got != claude[i] {
			t.Errorf("plugin name %q: claude %s says %v, wharf %v", name, cli.Version(t), claude[i], got)
		}
	}
}
