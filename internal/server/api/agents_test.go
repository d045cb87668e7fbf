package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/testutil/agentcli"
	"github.com/wharfhq/wharf/internal/testutil/claudetest"
)

// TestAgentsUseChannel drives the real GitHub Copilot CLI and OpenAI Codex
// against a wharf channel served on loopback, added by its token-less URL
// with the token handed over by git's credential helper: each installs
// deploy from it, with the digest the channel pins, and neither installs
// deploy's dependency lint (neither resolves dependencies). As root with
// CI=true, wharf's export of a policy allowing only the channel is put in
// the agent's managed file: the agent then refuses the channel's URL with
// the token in it and another marketplace, and adds the token-less URL.
func TestAgentsUseChannel(t *testing.T) {
	for _, a := range []agentcli.Agent{agentcli.Copilot, agentcli.Codex} {
		t.Run(a.Name, func(t *testing.T) {
			cli := agentcli.Find(t, a)
			// The managed part writes a machine-wide file the agent reads;
			// other tests may be writing one too.
			writeManaged, why := agentcli.CanWriteManaged()
			claudetest.Lock(t, writeManaged)
			needGit(t)
			e, _ := newCatalogEnv(t)
			dev := e.tokens[RoleDeveloper]
			home, cwd := cli.Home(t), t.TempDir()
			writeGitCredentials(t, home, e.channelURL("approved", dev))

			var view ChannelView
			e.do("GET", "/v1/channels/approved", dev, nil).json(t, &view)
			pins := map[string]string{}
			for _, en := range view.Entries {
				pins[en.Name] = en.Digest
			}
			// Both agents read the channel's second marketplace, where a
			// plugin with dependencies is flattened with its closure
			// (TestAgentsGetFlattenedClosure), pinned beside it.
			pins = flatPins(t, e, dev)

			var dirOf func(name string) string
			switch a.Name {
			case "copilot":
				cli.Must(t, home, cwd, "plugin", "marketplace", "add", e.channelURL("approved", ""))
				cli.Must(t, home, cwd, "plugin", "install", "deploy@approved")
				dirOf = func(name string) string { return filepath.Join(home, ".copilot/installed-plugins/approved", name) }
			case "codex":
				cli.Must(t, home, cwd, "plugin", "marketplace", "add", e.channelURL("approved", ""))
				cli.Must(t, home, cwd, "plugin", "add", "deploy@approved")
				dirOf = func(name string) string {
					vs, _ := filepath.Glob(filepath.Join(home, ".codex/plugins/cache/approved", name, "*"))
					if len(vs) != 1 {
						return filepath.Join(home, ".codex/plugins/cache/approved", name, "(none)")
					}
					return vs[0]
				}
			}
			// Codex writes the skills it makes of a plugin's commands into
			// .codex-plugin/migrated-command-skills in its copy; the rest is
			// the plugin as the channel serves it.
			var omit []string
			if a.Name == "codex" {
				if ents, err := os.ReadDir(filepath.Join(dirOf("deploy"), ".codex-plugin")); err != nil || len(ents) != 1 || ents[0].Name() != "migrated-command-skills" {
					t.Fatalf("codex's copy of deploy has no .codex-plugin/migrated-command-skills alone (%v, %v): the digest rule for Codex's cache is out of date", ents, err)
				}
				omit = []string{".codex-plugin"}
			}
			tree, err := trust.DigestOmitting(dirOf("deploy"), omit...)
			if err != nil {
				t.Fatalf("%s installed no copy of deploy from the channel: %v", a.Name, err)
			}
			if tree.Digest != pins["deploy"] {
				clone := filepath.Join(t.TempDir(), "approved")
				mustGit(t, "", "clone", "-q", e.channelURL("approved", dev), clone)
				want, _ := trust.Digest(filepath.Join(clone, "plugins/deploy"))
				t.Logf("differences: %v", trust.DiffDetail(want, tree))
				t.Fatalf("%s's copy of deploy (%s) has digest %s, the channel pins %s", a.Name, dirOf("deploy"), tree.Digest, pins["deploy"])
			}
			// The channel's token is in git's credential store, not in the
			// agent's own state.
			for _, f := range agentState(t, home, a.Name) {
				if strings.Contains(f, dev) {
					t.Fatalf("%s stored the channel token in its state", a.Name)
				}
			}
			// deploy depends on lint: Claude Code installs both from the
			// channel (TestClaudeUsesChannel); these agents install deploy
			// alone (their deploy carries lint inside it).
			if _, err := os.Stat(dirOf("lint")); !os.IsNotExist(err) {
				t.Fatalf("%s installed deploy's dependency lint (%v): the docs say it does not resolve dependencies", a.Name, err)
			}
			list, code := cli.Stdout(t, home, cwd, "plugin", "list", "--json")
			if code != 0 {
				t.Fatalf("%s plugin list --json: exit %d\n%s", a.Name, code, list)
			}
			if !strings.Contains(list, `"deploy"`) || strings.Contains(list, `"lint@approved"`) || listsInstalled(t, list, "lint") {
				t.Fatalf("%s lists after installing deploy:\n%s", a.Name, list)
			}

			// What the docs tell users of these agents: install the
			// dependency by name; it comes from the channel as pinned.
			if a.Name == "copilot" {
				cli.Must(t, home, cwd, "plugin", "install", "lint@approved")
			} else {
				cli.Must(t, home, cwd, "plugin", "add", "lint@approved")
			}
			lint, err := trust.DigestOmitting(dirOf("lint"), omit...)
			if err != nil || lint.Digest != pins["lint"] {
				t.Fatalf("%s's copy of lint: %v, digest %v, the channel pins %s", a.Name, err, lint, pins["lint"])
			}

			// With wharf's export of a policy that allows only the channel
			// in force, the agent refuses the channel's URL with the token
			// in it and adds it by the token-less URL the policy names.
			if !writeManaged {
				t.Logf("skipping the managed part: %s", why)
				return
			}
			eng, err := policy.NewEngine([]policy.Layer{{Name: "org", Settings: []byte(`{"strictKnownMarketplaces": [{"source": "git", "url": "` + e.channelURL("approved", "") + `"}]}`)}})
			if err != nil {
				t.Fatal(err)
			}
			var doc []byte
			if a.Name == "copilot" {
				doc, err = eng.ExportCopilot().JSON()
			} else {
				doc, err = eng.ExportCodex().TOML()
			}
			if err != nil {
				t.Fatal(err)
			}
			agentcli.PutManaged(t, a.ManagedFile, doc)
			h2 := cli.Home(t)
			out, code := cli.Run(t, h2, cwd, "plugin", "marketplace", "add", e.channelURL("approved", dev))
			if code == 0 {
				t.Fatalf("%s added the channel by a URL with a token in it, which the managed policy does not name: %s", a.Name, out)
			}
			if low := strings.ToLower(out); !strings.Contains(low, "polic") && !strings.Contains(low, "not allowed") {
				t.Fatalf("%s's refusal of the URL with a token does not name the policy: %s", a.Name, out)
			}
			if out, code := cli.Run(t, h2, cwd, "plugin", "marketplace", "add", newFixture(t).root); code == 0 {
				t.Fatalf("%s added another marketplace under the managed policy: %s", a.Name, out)
			}
			writeGitCredentials(t, h2, e.channelURL("approved", dev))
			cli.Must(t, h2, cwd, "plugin", "marketplace", "add", e.channelURL("approved", ""))
		})
	}
}

// flatPins reads the pins of the channel's marketplace for agents without
// dependency resolution (.github/plugin/wharf.json) from a clone.
func flatPins(t *testing.T, e *env, token string) map[string]string {
	t.Helper()
	clone := filepath.Join(t.TempDir(), "approved")
	mustGit(t, "", "clone", "-q", e.channelURL("approved", token), clone)
	raw, err := os.ReadFile(filepath.Join(clone, ".github/plugin/wharf.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pins struct {
		Plugins map[string]struct {
			Integrity string `json:"integrity"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(raw, &pins); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for n, p := range pins.Plugins {
		out[n] = p.Integrity
	}
	return out
}

// agentState is the text of the agent's own state files in home.
func agentState(t *testing.T, home, agent string) []string {
	t.Helper()
	var files []string
	switch agent {
	case "copilot":
		files = []string{".copilot/config.json", ".copilot/settings.json"}
	case "codex":
		files = []string{".codex/config.toml"}
	}
	var out []string
	for _, f := range files {
		if b, err := os.ReadFile(filepath.Join(home, f)); err == nil {
			out = append(out, string(b))
		}
	}
	return out
}

// listsInstalled reports whether a `plugin list --json` output shows name
// installed: Copilot prints an array of installed plugins, Codex an object
// whose "installed" array holds them.
func listsInstalled(t *testing.T, out, name string) bool {
	t.Helper()
	type entry struct {
		Name      string `json:"name"`
		Installed *bool  `json:"installed"`
	}
	var arr []entry
	if err := json.Unmarshal([]byte(out), &arr); err != nil {
		var obj struct {
			Installed []entry `json:"installed"`
		}
		if err := json.Unmarshal([]byte(out), &obj); err != nil {
			t.Fatalf("plugin list --json is not JSON: %v\n%s", err, out)
		}
		arr = obj.Installed
	}
	for _, e := range arr {
		if e.Name == name && (e.Installed == nil || *e.Installed) {
			return true
		}
	}
	return false
}
