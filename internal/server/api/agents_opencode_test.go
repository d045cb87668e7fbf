package api

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/server/channel"
	"github.com/wharfhq/wharf/internal/testutil/agentcli"
)

// openCodeSkills is what `opencode debug skill` prints of one skill.
type openCodeSkills []struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Location    string `json:"location"`
}

// debugSkills runs `opencode debug skill` and decodes the list it prints.
func debugSkills(t *testing.T, cli *agentcli.CLI, home, cwd string) openCodeSkills {
	t.Helper()
	out, code := cli.Stdout(t, home, cwd, "debug", "skill")
	var sk openCodeSkills
	if code != 0 || json.Unmarshal([]byte(out[strings.Index(out, "["):]), &sk) != nil {
		t.Fatalf("opencode debug skill: exit %d\n%s", code, out)
	}
	return sk
}

// TestOpenCodeUsesChannel drives the real OpenCode against a wharf channel
// on loopback. The user's opencode.json lists the public channel's skill
// index under skills.urls; OpenCode fetches each plugin into its cache and
// loads the plugin's skill and the skill wharf generated for the plugin
// (`opencode debug skill`), and its copy, without OpenCode's version file
// and wharf's SKILL.md, has the digest the channel pins. A channel that is
// not public refuses OpenCode, which sends no credentials, and OpenCode
// loads nothing from it. With wharf's export of a policy that denies an
// MCP server in OpenCode's managed configuration, OpenCode keeps that
// server, defined in the user's configuration, disabled.
func TestOpenCodeUsesChannel(t *testing.T) {
	cli := agentcli.Find(t, agentcli.OpenCode)
	needGit(t)
	e, _ := newCatalogEnv(t)
	admin := e.tokens[RoleAdmin]
	if res := e.do("POST", "/v1/channels", admin, map[string]any{"name": "ops", "plugins": []string{"deploy@corp"}, "public": true}); res.status != 201 {
		t.Fatalf("create ops: %d %s", res.status, res.body)
	}
	var view ChannelView
	e.do("GET", "/v1/channels/ops", admin, nil).json(t, &view)
	pins := map[string]string{}
	for _, en := range view.Entries {
		pins[en.Name] = en.Digest
	}
	if pins["deploy"] == "" || pins["lint"] == "" {
		t.Fatalf("ops pins %v, want deploy and lint", pins)
	}

	home, cwd := cli.Home(t), t.TempDir()
	skillsURL := e.hs.URL + "/git/" + channel.OpenCodeSkillsPath("ops")
	privateURL := e.hs.URL + "/git/" + channel.OpenCodeSkillsPath("approved")
	cfg := map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"skills":  map[string]any{"urls": []string{skillsURL, privateURL}},
		"mcp": map[string]any{
			"deploy-api": map[string]any{"type": "local", "command": []string{"/bin/true"}, "enabled": true},
			"docs":       map[string]any{"type": "local", "command": []string{"/bin/true"}, "enabled": true},
		},
	}
	b, _ := json.Marshal(cfg)
	writeFile(t, filepath.Join(home, ".config/opencode/opencode.json"), string(b))

	sk := debugSkills(t, cli, home, cwd)
	at := map[string]string{}
	for _, s := range sk {
		at[s.Name] = s.Location
	}
	cache := filepath.Join(home, ".cache/opencode/skills")
	if at["rollback"] != filepath.Join(cache, "deploy/skills/rollback/SKILL.md") || at["deploy"] != filepath.Join(cache, "deploy/SKILL.md") || at["lint"] != filepath.Join(cache, "lint/SKILL.md") {
		t.Fatalf("opencode loaded skills %v; want rollback, deploy and lint from the channel's entries in %s", at, cache)
	}
	for _, s := range sk {
		if s.Name == "deploy" && s.Description != "Deploy services" {
			t.Fatalf("wharf's skill for deploy has description %q, want the plugin's", s.Description)
		}
	}
	for _, name := range []string{"deploy", "lint"} {
		dir := filepath.Join(cache, name)
		tree, err := trust.DigestOmitting(dir, channel.OpenCodeVersionFile, channel.OpenCodeSkillFile)
		if err != nil {
			t.Fatal(err)
		}
		if tree.Digest != pins[name] {
			t.Fatalf("opencode's copy of %s has digest %s, the channel pins %s", name, tree.Digest, pins[name])
		}
		v, err := os.ReadFile(filepath.Join(dir, channel.OpenCodeVersionFile))
		if want := (channel.OpenCodeVersion{Channel: "ops", Digest: pins[name], Generated: true}).String(); err != nil || string(v) != want {
			t.Fatalf("%s: %q (%v), want %q", channel.OpenCodeVersionFile, v, err, want)
		}
	}
	// The private channel refused OpenCode (no credentials): nothing of
	// it is loaded, and a request without a token is refused.
	if res, err := http.Get(privateURL + "index.json"); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the private channel's skill index without a token: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	if len(sk) != 4 { // the three above and OpenCode's own
		t.Fatalf("opencode loaded %d skills, want 4: %+v", len(sk), sk)
	}

	// The managed configuration wharf exports denies deploy-api: OpenCode
	// lists it disabled, and docs still enabled.
	eng, err := policy.NewEngine([]policy.Layer{{Name: "org", Settings: []byte(`{"deniedMcpServers": [{"serverName": "deploy-api"}]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := eng.ExportOpenCode().JSON()
	if err != nil {
		t.Fatal(err)
	}
	before := cli.Must(t, home, cwd, "mcp", "list")
	if ok, why := cli.ManagedOverride(t, doc); !ok {
		t.Skip(why)
	}
	after := cli.Must(t, home, cwd, "mcp", "list")
	if line := lineWith(after, "deploy-api"); !strings.Contains(line, "disabled") || strings.Contains(lineWith(before, "deploy-api"), "disabled") {
		t.Fatalf("opencode mcp list, before the managed configuration:\n%s\nafter:\n%s\nwant deploy-api disabled only after", before, after)
	}
	if strings.Contains(lineWith(after, "docs"), "disabled") {
		t.Fatalf("the managed configuration disabled docs too:\n%s", after)
	}
}

// lineWith is the first line of out that contains s, or "".
func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
