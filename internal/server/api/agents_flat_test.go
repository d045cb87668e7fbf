package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/testutil/agentcli"
)

// newClosureEnv is a catalog env whose marketplace also has app, which
// depends on base, which depends on lint: base has a skill and an MCP
// server run from its own files.
func newClosureEnv(t *testing.T) *env {
	f := newFixture(t)
	p := func(rel, content string) { writeFile(t, filepath.Join(f.root, rel), content) }
	p("plugins/app/.claude-plugin/plugin.json", `{"name": "app", "version": "1.0.0", "description": "Deploy the app", "dependencies": ["base"]}`)
	p("plugins/app/skills/app-release/SKILL.md", "---\nname: app-release\ndescription: release the app\n---\nRelease.\n")
	p("plugins/base/.claude-plugin/plugin.json", `{"name": "base", "version": "0.2.0", "description": "Shared base", "dependencies": ["lint"]}`)
	p("plugins/base/skills/base-guide/SKILL.md", "---\nname: base-guide\ndescription: the shared guide\n---\nGuide.\n")
	p("plugins/base/.mcp.json", `{"mcpServers": {"basesrv": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/srv", "args": ["--stdio"]}}}`)
	p("plugins/base/bin/srv", "#!/bin/sh\n")
	raw, err := os.ReadFile(filepath.Join(f.root, ".claude-plugin/marketplace.json"))
	if err != nil {
		t.Fatal(err)
	}
	var mkt map[string]any
	if err := json.Unmarshal(raw, &mkt); err != nil {
		t.Fatal(err)
	}
	mkt["plugins"] = append(mkt["plugins"].([]any),
		map[string]any{"name": "app", "source": "./plugins/app", "category": "ops"},
		map[string]any{"name": "base", "source": "./plugins/base", "category": "ops"})
	raw, _ = json.Marshal(mkt)
	p(".claude-plugin/marketplace.json", string(raw))
	e := newEnv(t, withCatalog(f, t.TempDir()))
	if res := e.do("POST", "/v1/marketplaces", e.tokens[RoleAdmin], map[string]any{
		"name": "corp", "source": map[string]string{"source": "directory", "path": f.root}}); res.status != 201 {
		t.Fatalf("add marketplace: %d %s", res.status, res.body)
	}
	return e
}

// TestAgentsGetFlattenedClosure drives the real GitHub Copilot CLI and
// OpenAI Codex against a channel on loopback: each reads the channel's
// second marketplace (.github/plugin/marketplace.json, and
// .agents/plugins/marketplace.json for Codex), where app is flattened with
// its closure (base, and base's dependency lint), so installing app alone
// makes the skills and the MCP server of its dependencies usable, from a
// copy whose digest the channel pins beside that marketplace.
func TestAgentsGetFlattenedClosure(t *testing.T) {
	for _, a := range []agentcli.Agent{agentcli.Copilot, agentcli.Codex} {
		t.Run(a.Name, func(t *testing.T) {
			cli := agentcli.Find(t, a)
			needGit(t)
			e := newClosureEnv(t)
			dev := e.tokens[RoleDeveloper]
			home, cwd := cli.Home(t), t.TempDir()
			writeGitCredentials(t, home, e.channelURL("approved", dev))
			cli.Must(t, home, cwd, "plugin", "marketplace", "add", e.channelURL("approved", ""))
			var copyDir string
			var omit []string
			switch a.Name {
			case "copilot":
				cli.Must(t, home, cwd, "plugin", "install", "app@approved")
				skills, code := cli.Stdout(t, home, cwd, "skill", "list")
				if code != 0 {
					t.Fatalf("skill list: exit %d\n%s", code, skills)
				}
				for _, s := range []string{"app-release", "base-guide", "lint"} {
					if !strings.Contains(skills, "  "+s+" ") {
						t.Errorf("after installing app, Copilot CLI has no skill %s (from app's closure):\n%s", s, skills)
					}
				}
				mcp, code := cli.Stdout(t, home, cwd, "mcp", "get", "basesrv")
				if code != 0 || !strings.Contains(mcp, "Source: Plugin") || !strings.Contains(mcp, "${CLAUDE_PLUGIN_ROOT}/deps/base/bin/srv --stdio") {
					t.Fatalf("base's MCP server as Copilot CLI has it (exit %d):\n%s", code, mcp)
				}
				copyDir = filepath.Join(home, ".copilot/installed-plugins/approved/app")
			case "codex":
				cli.Must(t, home, cwd, "plugin", "add", "app@approved")
				// The skills Codex gives the model, as it renders them.
				prompt, code := cli.Stdout(t, home, cwd, "debug", "prompt-input")
				if code != 0 {
					t.Fatalf("debug prompt-input: exit %d\n%.2000s", code, prompt)
				}
				for _, s := range []string{"app:app-release", "app:base-guide"} {
					if !strings.Contains(prompt, s+":") {
						t.Errorf("after installing app, Codex gives the model no skill %s (from app's closure)", s)
					}
				}
				mcp, code := cli.Stdout(t, home, cwd, "mcp", "list")
				if code != 0 || !strings.Contains(mcp, "basesrv") || !strings.Contains(mcp, "${CLAUDE_PLUGIN_ROOT}/deps/base/bin/srv") {
					t.Fatalf("base's MCP server as Codex has it (exit %d):\n%s", code, mcp)
				}
				vs, _ := filepath.Glob(filepath.Join(home, ".codex/plugins/cache/approved/app/*"))
				if len(vs) != 1 {
					t.Fatalf("Codex's copies of app: %v", vs)
				}
				copyDir, omit = vs[0], []string{".codex-plugin"}
			}

			// The copy is the flattened one the channel pins.
			pins := flatPins(t, e, dev)
			tree, err := trust.DigestOmitting(copyDir, omit...)
			if err != nil {
				t.Fatalf("%s installed no copy of app: %v", a.Name, err)
			}
			if tree.Digest != pins["app"] {
				t.Fatalf("%s's copy of app has digest %s; the channel pins the flattened app at %s", a.Name, tree.Digest, pins["app"])
			}
			// lint has no dependency: the second marketplace serves the same copy.
			var view ChannelView
			e.do("GET", "/v1/channels/approved", dev, nil).json(t, &view)
			for _, en := range view.Entries {
				if en.Name == "lint" && pins["lint"] != en.Digest {
					t.Fatalf("lint is pinned at %s for %s and %s for Claude Code", pins["lint"], a.Name, en.Digest)
				}
			}
		})
	}
}
