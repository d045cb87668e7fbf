package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/agentcli"
	"github.com/wharfhq/wharf/internal/testutil/claudetest"
)

// localMarketplace writes a one-plugin Claude-format marketplace named name
// under dir and returns its directory.
func localMarketplace(t *testing.T, dir, name string) string {
	t.Helper()
	root := filepath.Join(dir, name)
	for rel, content := range map[string]string{
		".claude-plugin/marketplace.json":         `{"name": "` + name + `", "owner": {"name": "x"}, "plugins": [{"name": "tool", "source": "./plugins/tool"}]}`,
		"plugins/tool/.claude-plugin/plugin.json": `{"name": "tool", "version": "1.0.0"}`,
		"plugins/tool/commands/t.md":              "t\n",
	} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestExportAgentsObeyed puts the Copilot CLI and Codex exports of a policy
// that allows one marketplace in the machine-wide file each CLI reads, and
// runs the real CLI: it adds the allowed marketplace and refuses another.
// Neither CLI offers another managed path on Linux, so this runs only as
// root with CI=true, under the lock every agent CLI test takes.
func TestExportAgentsObeyed(t *testing.T) {
	for _, a := range []agentcli.Agent{agentcli.Copilot, agentcli.Codex} {
		t.Run(a.Name, func(t *testing.T) {
			cli := agentcli.Find(t, a)
			if ok, why := agentcli.CanWriteManaged(); !ok {
				t.Skipf("skipping: %s (%s reads only %s)", why, a.Name, a.ManagedFile)
			}
			claudetest.Lock(t, true)
			mk := t.TempDir()
			allowed, other := localMarketplace(t, mk, "allowed"), localMarketplace(t, mk, "other")
			e, err := NewEngine([]Layer{{Name: "org", Settings: []byte(`{
				"strictKnownMarketplaces": [{"source": "directory", "path": "` + allowed + `"}],
				"blockedMarketplaces": [{"source": "directory", "path": "` + other + `"}]}`)}})
			if err != nil {
				t.Fatal(err)
			}
			var doc []byte
			if a.Name == "copilot" {
				doc, err = e.ExportCopilot().JSON()
			} else {
				doc, err = e.ExportCodex().TOML()
			}
			if err != nil {
				t.Fatal(err)
			}
			agentcli.PutManaged(t, a.ManagedFile, doc)
			home, cwd := cli.Home(t), t.TempDir()
			out, code := cli.Run(t, home, cwd, "plugin", "marketplace", "add", other)
			if code == 0 {
				t.Fatalf("%s added a marketplace the exported policy does not allow:\n%s\n%s", a.Name, out, doc)
			}
			if low := strings.ToLower(out); !strings.Contains(low, "polic") && !strings.Contains(low, "requirements") && !strings.Contains(low, "not allowed") {
				t.Fatalf("%s's refusal does not name the policy: %s", a.Name, out)
			}
			cli.Must(t, home, cwd, "plugin", "marketplace", "add", allowed)
		})
	}
}

// TestCopilotIgnoresBlockedMarketplaces shows why the Copilot CLI export
// leaves blockedMarketplaces out and warns: with it alone in Copilot CLI's
// managed settings, the blocked marketplace is added all the same.
func TestCopilotIgnoresBlockedMarketplaces(t *testing.T) {
	cli := agentcli.Find(t, agentcli.Copilot)
	if ok, why := agentcli.CanWriteManaged(); !ok {
		t.Skipf("skipping: %s (copilot reads only %s)", why, agentcli.Copilot.ManagedFile)
	}
	claudetest.Lock(t, true)
	blocked := localMarketplace(t, t.TempDir(), "blocked")
	agentcli.PutManaged(t, agentcli.Copilot.ManagedFile, []byte(`{"blockedMarketplaces": [{"source": "directory", "path": "`+blocked+`"}]}`))
	if out, code := cli.Run(t, cli.Home(t), t.TempDir(), "plugin", "marketplace", "add", blocked); code != 0 {
		t.Fatalf("copilot now obeys blockedMarketplaces (exit %d: %s): export it in ExportCopilot and update docs/agents.md", code, out)
	}
	e, err := NewEngine([]Layer{{Name: "org", Settings: []byte(`{"blockedMarketplaces": [{"source": "directory", "path": "` + blocked + `"}]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	x := e.ExportCopilot()
	if _, ok := x.Settings["blockedMarketplaces"]; ok || len(x.Warnings) == 0 || !strings.Contains(x.Warnings[0], "blockedMarketplaces") {
		t.Fatalf("export %+v", x)
	}
}
