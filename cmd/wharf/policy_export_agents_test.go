package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// wharf policy export --format copilot|codex writes the layers of a
// managed directory as the agent's managed file, warns about what the
// format cannot carry, and refuses --channel, which the server serves for
// Claude Code only.
func TestPolicyExportAgentFormats(t *testing.T) {
	managed := t.TempDir()
	writeFile(t, filepath.Join(managed, "managed-settings.json"), `{
		"strictKnownMarketplaces": [{"source": "git", "url": "https://wharf.example.com/git/approved.git"}],
		"blockedMarketplaces": [{"source": "github", "repo": "evil/plugins"}],
		"enabledPlugins": {"deploy@approved": true}}`)
	c := newPolicyClient(t, "")
	c.env = append(c.env, "WHARF_MANAGED_DIR="+managed)

	code, out, stderr := c.run("policy", "export", "--format", "copilot")
	if code != 0 || !strings.Contains(out, `"strictKnownMarketplaces"`) || !strings.Contains(out, `"deploy@approved": true`) || strings.Contains(out, "blockedMarketplaces") {
		t.Fatalf("copilot: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "blockedMarketplaces is not exported") {
		t.Fatalf("copilot export does not warn about the blocklist: %s", stderr)
	}

	file := filepath.Join(t.TempDir(), "requirements.toml")
	code, out, stderr = c.run("policy", "export", "--format", "codex", "-o", file)
	if code != 0 || !strings.Contains(out, "/etc/codex/requirements.toml") {
		t.Fatalf("codex: exit %d\n%s%s", code, out, stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Marketplaces struct {
			Restrict bool                         `toml:"restrict_to_allowed_sources"`
			Allowed  map[string]map[string]string `toml:"allowed_sources"`
		} `toml:"marketplaces"`
	}
	if err := toml.Unmarshal(b, &req); err != nil || !req.Marketplaces.Restrict || len(req.Marketplaces.Allowed) != 1 ||
		req.Marketplaces.Allowed["wharf-1"]["url"] != "https://wharf.example.com/git/approved.git" {
		t.Fatalf("requirements.toml %+v (%v):\n%s", req, err, b)
	}
	if !strings.Contains(stderr, "enabledPlugins is not exported") {
		t.Fatalf("codex export does not warn about enabledPlugins: %s", stderr)
	}

	code, _, stderr = c.run("policy", "export", "--format", "codex", "--channel", "approved")
	if code != 2 || !strings.Contains(stderr, "Claude Code only") {
		t.Fatalf("--channel with codex: exit %d %s", code, stderr)
	}
	code, _, stderr = c.run("policy", "export", "--format", "gemini")
	if code != 2 || !strings.Contains(stderr, "copilot or codex") {
		t.Fatalf("unknown format: exit %d %s", code, stderr)
	}
}
