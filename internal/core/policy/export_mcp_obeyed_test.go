package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/agentcli"
)

// mcpLine is the line of an agent's `mcp list` output about server name.
func mcpLine(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " "+name+":") || strings.Contains(l, " "+name+" ") || strings.HasSuffix(strings.TrimSpace(l), " "+name) {
			return l
		}
	}
	return ""
}

// TestExportMCPObeyed gives the real Gemini CLI and OpenCode three MCP
// servers in the user's configuration (ok, shell, extra) and wharf's
// export of a policy that allows ok and denies shell, in the override
// path each offers for its managed file. Gemini CLI blocks shell and
// extra (mcp.excluded, mcp.allowed) and keeps ok; OpenCode turns shell off
// and, as docs/agents.md says, cannot keep extra out (it has no allowlist).
// Without the export, neither blocks shell.
func TestExportMCPObeyed(t *testing.T) {
	e, err := NewEngine([]Layer{{Name: "org", Settings: []byte(`{
		"allowedMcpServers": [{"serverName": "ok"}, {"serverName": "shell"}],
		"deniedMcpServers": [{"serverName": "shell"}]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []agentcli.Agent{agentcli.Gemini, agentcli.OpenCode} {
		t.Run(a.Name, func(t *testing.T) {
			cli := agentcli.Find(t, a)
			home, cwd := cli.Home(t), t.TempDir()
			var doc []byte
			blocked := func(line string) bool { return false }
			switch a.Name {
			case "gemini":
				settings := `{"privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}, "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
					"mcpServers": {"ok": {"command": "/bin/true"}, "shell": {"command": "/bin/true"}, "extra": {"command": "/bin/true"}}}`
				if err := os.WriteFile(filepath.Join(home, ".gemini/settings.json"), []byte(settings), 0o600); err != nil {
					t.Fatal(err)
				}
				doc, err = e.ExportGemini().JSON()
				blocked = func(line string) bool { return strings.Contains(line, "Blocked") }
			case "opencode":
				cfg := filepath.Join(home, ".config/opencode/opencode.json")
				if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(cfg, []byte(`{"mcp": {"ok": {"type": "local", "command": ["/bin/true"]}, "shell": {"type": "local", "command": ["/bin/true"]}, "extra": {"type": "local", "command": ["/bin/true"]}}}`), 0o600); err != nil {
					t.Fatal(err)
				}
				doc, err = e.ExportOpenCode().JSON()
				blocked = func(line string) bool { return strings.Contains(line, "disabled") }
			}
			if err != nil {
				t.Fatal(err)
			}
			out := cli.Must(t, home, cwd, "mcp", "list")
			if l := mcpLine(out, "shell"); l == "" || blocked(l) {
				t.Fatalf("%s without the export: shell is %q\n%s", a.Name, l, out)
			}
			if ok, why := cli.ManagedOverride(t, doc); !ok {
				t.Skipf("skipping: %s", why)
			}
			out = cli.Must(t, home, cwd, "mcp", "list")
			if l := mcpLine(out, "shell"); !blocked(l) {
				t.Fatalf("%s with the export does not block the denied server shell (%q):\n%s\nexport:\n%s", a.Name, l, out, doc)
			}
			if l := mcpLine(out, "ok"); l == "" || blocked(l) {
				t.Fatalf("%s with the export blocks the allowed server ok (%q):\n%s", a.Name, l, out)
			}
			extra := mcpLine(out, "extra")
			switch a.Name {
			case "gemini":
				if !blocked(extra) {
					t.Fatalf("gemini with the export runs extra, which the allowlist leaves out (%q):\n%s", extra, out)
				}
			case "opencode":
				if extra == "" || blocked(extra) {
					t.Fatalf("opencode now keeps out a server the allowlist leaves out (%q): export allowedMcpServers and update docs/agents.md", extra)
				}
			}
		})
	}
}
