package api

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/server/channel"
	"github.com/wharfhq/wharf/internal/testutil/agentcli"
	"github.com/wharfhq/wharf/internal/testutil/claudetest"
)

// revokeDeploy has an administrator revoke deploy@corp 1.2.0, the version
// the fixture's channels hold.
func revokeDeploy(t *testing.T, e *env) {
	t.Helper()
	res := e.do("POST", "/v1/revocations", e.tokens[RoleAdmin], map[string]string{"plugin": "deploy@corp", "version": "1.2.0", "reason": "leaks tokens"})
	if res.status != http.StatusCreated {
		t.Fatalf("revoke deploy: %d %s", res.status, res.body)
	}
}

// TestAgentsWithdrawRevokedPlugin drives the real Copilot CLI and Codex: each
// installs deploy from a wharf channel; an administrator revokes it. After
// the agent's own marketplace update the channel no longer offers deploy,
// and installing it, in the same home or a fresh one, is refused. Copilot
// CLI keeps listing its copy (`plugin list --json`); Codex no longer lists
// deploy once its upgraded marketplace lacks it, and leaves its copy in its
// cache.
//
// For Copilot CLI, as root with CI=true, the channel's Copilot settings
// (GET /v1/channels/approved/copilot-managed-settings, deploy@approved
// false in enabledPlugins) are put in its managed file: a session then
// loads no deploy (its debug log's "Plugins loaded"), where it loaded it
// before. A session needs no account: its model provider is a closed
// loopback port, and the session ends when it cannot reach it, after the
// plugins are loaded. `copilot plugin list --json` still shows deploy
// enabled: it does not read the managed file.
func TestAgentsWithdrawRevokedPlugin(t *testing.T) {
	for _, a := range []agentcli.Agent{agentcli.Copilot, agentcli.Codex} {
		t.Run(a.Name, func(t *testing.T) {
			cli := agentcli.Find(t, a)
			writeManaged, why := agentcli.CanWriteManaged()
			claudetest.Lock(t, writeManaged)
			needGit(t)
			e, _ := newCatalogEnv(t)
			dev := e.tokens[RoleDeveloper]
			home, cwd := cli.Home(t), t.TempDir()
			writeGitCredentials(t, home, e.channelURL("approved", dev))
			install := []string{"plugin", "install", "deploy@approved"}
			update := []string{"plugin", "marketplace", "update", "approved"}
			if a.Name == "codex" {
				install = []string{"plugin", "add", "deploy@approved"}
				update = []string{"plugin", "marketplace", "upgrade"}
			}
			cli.Must(t, home, cwd, "plugin", "marketplace", "add", e.channelURL("approved", ""))
			cli.Must(t, home, cwd, install...)
			if list, _ := cli.Stdout(t, home, cwd, "plugin", "list", "--json"); !listsInstalled(t, list, "deploy") {
				t.Fatalf("%s does not list deploy installed:\n%s", a.Name, list)
			}

			revokeDeploy(t, e)
			out := cli.Must(t, home, cwd, update...)
			t.Logf("%s %v:\n%s", a.Name, update, out)
			list, _ := cli.Stdout(t, home, cwd, "plugin", "list", "--json")
			t.Logf("%s plugin list --json after the update:\n%s", a.Name, list)
			// Copilot CLI keeps listing its copy; Codex lists only what its
			// marketplaces still offer.
			if listed := listsInstalled(t, list, "deploy"); listed != (a.Name == "copilot") {
				t.Fatalf("%s plugin list --json after the update (deploy listed: %v):\n%s", a.Name, listed, list)
			}
			if a.Name == "codex" {
				// Its copy stays in its cache, unlisted.
				if _, err := os.Stat(filepath.Join(home, ".codex/plugins/cache/approved/deploy")); err != nil {
					t.Fatalf("codex's copy of deploy after the upgrade: %v", err)
				}
			}
			out, code := cli.Run(t, home, cwd, install...)
			t.Logf("%s %v in the same home after the update: exit %d\n%s", a.Name, install, code, out)
			if code == 0 || !strings.Contains(out, "not found in marketplace") {
				t.Fatalf("%s installed the revoked deploy again after its marketplace update, or failed for another reason:\n%s", a.Name, out)
			}
			h2 := cli.Home(t)
			writeGitCredentials(t, h2, e.channelURL("approved", dev))
			cli.Must(t, h2, cwd, "plugin", "marketplace", "add", e.channelURL("approved", ""))
			out, code = cli.Run(t, h2, cwd, install...)
			t.Logf("%s %v in a fresh home: exit %d\n%s", a.Name, install, code, out)
			if code == 0 || !strings.Contains(out, "not found in marketplace") {
				t.Fatalf("%s installed the revoked deploy from the channel in a fresh home, or failed for another reason:\n%s", a.Name, out)
			}

			if a.Name != "copilot" {
				return
			}
			if !writeManaged {
				t.Skipf("skipping the managed part: %s (Copilot CLI reads enabledPlugins only from %s)", why, a.ManagedFile)
			}
			before := copilotSessionPlugins(t, cli, home, cwd)
			if !strings.Contains(before, `"deploy@approved"`) {
				t.Fatalf("without the managed settings a Copilot CLI session loaded %s, not deploy@approved", before)
			}
			var as AgentSettings
			e.do("GET", "/v1/channels/approved/copilot-managed-settings", dev, nil).json(t, &as)
			var doc struct {
				EnabledPlugins map[string]bool `json:"enabledPlugins"`
			}
			if err := json.Unmarshal([]byte(as.Document), &doc); err != nil {
				t.Fatal(err)
			}
			if on, ok := doc.EnabledPlugins["deploy@approved"]; !ok || on {
				t.Fatalf("the channel's copilot settings do not turn deploy@approved off:\n%s", as.Document)
			}
			agentcli.PutManaged(t, a.ManagedFile, []byte(as.Document))
			after := copilotSessionPlugins(t, cli, home, cwd)
			if strings.Contains(after, "deploy") {
				t.Fatalf("with the managed settings a Copilot CLI session still loaded %s", after)
			}
			// plugin list does not read the managed file: deploy shows
			// enabled there all the same.
			list, _ = cli.Stdout(t, home, cwd, "plugin", "list", "--json")
			if !strings.Contains(list, `"enabled": true`) || !listsInstalled(t, list, "deploy") {
				t.Fatalf("copilot plugin list --json under the managed settings:\n%s", list)
			}
		})
	}
}

// copilotPluginsLoaded is the debug log line a Copilot CLI session writes
// once it has loaded its plugins.
var copilotPluginsLoaded = regexp.MustCompile(`Plugins loaded: (\[.*\])`)

// copilotSessionPlugins starts a non-interactive Copilot CLI session in home
// whose model provider is a closed loopback port, and returns the plugins
// its debug log says it loaded (a JSON array).
func copilotSessionPlugins(t *testing.T, cli *agentcli.CLI, home, cwd string) string {
	t.Helper()
	logs := filepath.Join(home, ".copilot", "logs")
	os.RemoveAll(logs)
	out, code := cli.Run(t, home, cwd, "-p", "hi", "--model", "gpt-4o", "--log-level", "debug")
	files, _ := filepath.Glob(filepath.Join(logs, "*.log"))
	var loaded []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range copilotPluginsLoaded.FindAllStringSubmatch(string(b), -1) {
			loaded = append(loaded, m[1])
		}
	}
	if len(loaded) == 0 {
		t.Fatalf("the Copilot CLI session (exit %d) logged no loaded plugins in %s:\n%s", code, logs, out)
	}
	return loaded[len(loaded)-1]
}

// TestGeminiWithdrawsRevokedPlugin drives the real Gemini CLI: it installs
// deploy from the channel's extension repository; an administrator revokes
// it; the channel then serves no such repository, so a fresh install is
// refused and Gemini CLI's own update of the extension reports the
// repository not found, while the copy it installed stays listed active.
func TestGeminiWithdrawsRevokedPlugin(t *testing.T) {
	cli := agentcli.Find(t, agentcli.Gemini)
	needGit(t)
	e, _ := newCatalogEnv(t)
	dev := e.tokens[RoleDeveloper]
	home, cwd := cli.Home(t), t.TempDir()
	askpass := filepath.Join(t.TempDir(), "askpass")
	if err := os.WriteFile(askpass, []byte("#!/bin/sh\ncase \"$1\" in Username*) echo wharf;; *) echo \"$WHARF_TEST_TOKEN\";; esac\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	cli.Extra = append(cli.Extra, "GIT_ASKPASS="+askpass, "WHARF_TEST_TOKEN="+dev)
	extURL := e.hs.URL + "/git/" + channel.GeminiPath("approved", "deploy")
	cli.Must(t, home, cwd, "extensions", "install", extURL, "--consent")

	revokeDeploy(t, e)
	out, code := cli.Run(t, home, cwd, "extensions", "update", "deploy")
	// Gemini CLI reports the repository gone and keeps its copy.
	if !strings.Contains(out, "not found") {
		t.Fatalf("gemini extensions update deploy after the revocation: exit %d\n%s", code, out)
	}
	if out, code := cli.Run(t, cli.Home(t), cwd, "extensions", "install", extURL, "--consent"); code == 0 {
		t.Fatalf("gemini installed the revoked deploy from the channel in a fresh home:\n%s", out)
	}
	list := cli.Must(t, home, cwd, "extensions", "list", "-o", "json")
	if !strings.Contains(list, `"name": "deploy"`) || !strings.Contains(list, `"isActive": true`) {
		t.Fatalf("gemini extensions list after the revocation:\n%s", list)
	}
}

// TestOpenCodeWithdrawsRevokedPlugin drives the real OpenCode: it loads
// deploy's skills from a public channel's skill index; an administrator
// revokes deploy; the index no longer lists it, so OpenCode loads none of
// deploy's skills, in a fresh home or in the one that had loaded them.
func TestOpenCodeWithdrawsRevokedPlugin(t *testing.T) {
	cli := agentcli.Find(t, agentcli.OpenCode)
	needGit(t)
	e, _ := newCatalogEnv(t)
	admin := e.tokens[RoleAdmin]
	if res := e.do("POST", "/v1/channels", admin, map[string]any{"name": "ops", "plugins": []string{"deploy@corp", "lint@corp"}, "public": true}); res.status != 201 {
		t.Fatalf("create ops: %d %s", res.status, res.body)
	}
	skillsURL := e.hs.URL + "/git/" + channel.OpenCodeSkillsPath("ops")
	cfg, _ := json.Marshal(map[string]any{"$schema": "https://opencode.ai/config.json", "skills": map[string]any{"urls": []string{skillsURL}}})
	names := func(home string) map[string]string {
		t.Helper()
		at := map[string]string{}
		for _, s := range debugSkills(t, cli, home, t.TempDir()) {
			at[s.Name] = s.Location
		}
		return at
	}
	home := cli.Home(t)
	writeFile(t, filepath.Join(home, ".config/opencode/opencode.json"), string(cfg))
	if at := names(home); at["deploy"] == "" || at["rollback"] == "" || at["lint"] == "" {
		t.Fatalf("before the revocation opencode loaded %v", at)
	}

	revokeDeploy(t, e)
	fresh := cli.Home(t)
	writeFile(t, filepath.Join(fresh, ".config/opencode/opencode.json"), string(cfg))
	if at := names(fresh); at["deploy"] != "" || at["rollback"] != "" || at["lint"] == "" {
		t.Fatalf("after the revocation opencode in a fresh home loaded %v; want lint and nothing of deploy", at)
	}
	// Nor in the home that had loaded it: OpenCode loads only the entries
	// the index lists now.
	if at := names(home); at["deploy"] != "" || at["rollback"] != "" || at["lint"] == "" {
		t.Fatalf("after the revocation opencode in the home that had deploy loaded %v; want lint and nothing of deploy", at)
	}
}
