package channel

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

func f(path, data string) file { return file{path: path, mode: filemode.Regular, data: []byte(data)} }

func flatFixture() ([]Entry, map[string][]file) {
	entries := []Entry{
		{Name: "app", Origin: "app@corp", Source: "corp", Digest: "w1:app", Dependencies: []string{"base"}},
		{Name: "base", Origin: "base@corp", Source: "corp", Digest: "w1:base", Dependencies: []string{"lint", "app"}}, // a cycle back to app
		{Name: "lint", Origin: "lint@corp", Source: "corp", Digest: "w1:lint"},
	}
	trees := map[string][]file{
		"app": {f(".claude-plugin/plugin.json", `{"name": "app", "version": "1.0.0", "dependencies": ["base"], "skills": "./my-skills/"}`),
			f(".mcp.json", `{"mcpServers": {"srv": {"command": "${CLAUDE_PLUGIN_ROOT}/a"}}}`),
			f("my-skills/x/SKILL.md", "x")},
		"base": {f(".claude-plugin/plugin.json", `{"name": "base", "mcpServers": {"srv": {"command": "${CLAUDE_PLUGIN_ROOT}/b", "args": ["${CLAUDE_PLUGIN_ROOT}/c"]}}}`),
			f("skills/g/SKILL.md", "g"), f("commands/go.md", "go"),
			f("hooks/hooks.json", `{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/h.sh"}]}]}}`)},
		"lint": {f("commands/lint.md", "lint")},
	}
	return entries, trees
}

func TestFlatFiles(t *testing.T) {
	entries, trees := flatFixture()
	out, err := flatFiles(Definition{Name: "approved"}, entries, trees)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]string{}
	for _, x := range out {
		byPath[x.path] = string(x.data)
	}
	if byPath[CodexFlatMarketplaceFile] != byPath[FlatMarketplaceFile] || byPath[CodexFlatPinsFile] != byPath[FlatPinsFile] {
		t.Fatal("Codex's flat marketplace differs from Copilot's")
	}
	var m struct {
		Plugins []struct {
			Name, Source string
			Dependencies []string
		}
	}
	if err := json.Unmarshal([]byte(byPath[FlatMarketplaceFile]), &m); err != nil {
		t.Fatal(err)
	}
	src := map[string]string{}
	for _, p := range m.Plugins {
		src[p.Name] = p.Source
		if len(p.Dependencies) != 0 {
			t.Errorf("%s keeps dependencies in the flat marketplace: %v", p.Name, p.Dependencies)
		}
	}
	if src["app"] != "./flat/app" || src["base"] != "./flat/base" || src["lint"] != "./plugins/lint" {
		t.Fatalf("sources: %v", src)
	}
	// app's copy holds base and lint (the closure through the cycle), not
	// itself again.
	for _, p := range []string{"flat/app/deps/base/skills/g/SKILL.md", "flat/app/deps/lint/commands/lint.md", "flat/app/my-skills/x/SKILL.md"} {
		if _, ok := byPath[p]; !ok {
			t.Errorf("flat copy lacks %s", p)
		}
	}
	if _, ok := byPath["flat/app/deps/app/my-skills/x/SKILL.md"]; ok {
		t.Error("app's copy holds itself as a dependency")
	}
	var man map[string]any
	if err := json.Unmarshal([]byte(byPath["flat/app/.claude-plugin/plugin.json"]), &man); err != nil {
		t.Fatal(err)
	}
	if _, ok := man["dependencies"]; ok {
		t.Error("the flat manifest keeps dependencies")
	}
	if got, _ := json.Marshal(man["skills"]); string(got) != `["./my-skills/","./deps/base/skills/"]` {
		t.Errorf("skills = %s", got)
	}
	if got, _ := json.Marshal(man["commands"]); string(got) != `["./deps/base/commands/","./deps/lint/commands/"]` {
		t.Errorf("commands = %s", got)
	}
	servers, _ := json.Marshal(man["mcpServers"])
	if !strings.Contains(string(servers), `"srv":{"command":"${CLAUDE_PLUGIN_ROOT}/a"}`) ||
		!strings.Contains(string(servers), `"base-srv":{"args":["${CLAUDE_PLUGIN_ROOT}/deps/base/c"],"command":"${CLAUDE_PLUGIN_ROOT}/deps/base/b"}`) {
		t.Errorf("mcpServers = %s", servers)
	}
	hooks, _ := json.Marshal(man["hooks"])
	if !strings.Contains(string(hooks), `${CLAUDE_PLUGIN_ROOT}/deps/base/h.sh`) {
		t.Errorf("hooks = %s", hooks)
	}
	var pins struct {
		Plugins map[string]struct{ Integrity string } `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(byPath[FlatPinsFile]), &pins); err != nil {
		t.Fatal(err)
	}
	if pins.Plugins["lint"].Integrity != "w1:lint" || pins.Plugins["app"].Integrity == "w1:app" || !strings.HasPrefix(pins.Plugins["app"].Integrity, "w1:") {
		t.Errorf("pins = %+v", pins.Plugins)
	}
	// The same input gives the same files (the channel's commit is a pure
	// function of its entries).
	again, _ := flatFiles(Definition{Name: "approved"}, entries, trees)
	if len(again) != len(out) {
		t.Fatal("flattening is not deterministic")
	}
	for i := range out {
		if out[i].path != again[i].path || string(out[i].data) != string(again[i].data) {
			t.Fatalf("flattening is not deterministic at %s", out[i].path)
		}
	}
}

func TestFlatFilesNamesABadManifest(t *testing.T) {
	entries, trees := flatFixture()
	trees["base"][0] = f(".claude-plugin/plugin.json", `{"name": `)
	_, err := flatFiles(Definition{Name: "approved"}, entries, trees)
	if err == nil || !strings.Contains(err.Error(), "base@corp") || !strings.Contains(err.Error(), "plugin.json") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzFlatManifest(f *testing.F) {
	f.Add(`{"name": "base", "skills": ["./s/", "../x"], "hooks": "./h.json"}`, `{"mcpServers": {"a": {"command": "${CLAUDE_PLUGIN_ROOT}/x"}}}`)
	f.Add(`{"mcpServers": "./m.json", "commands": 5}`, `[]`)
	f.Fuzz(func(t *testing.T, manifest, mcp string) {
		entries, trees := flatFixture()
		trees["base"] = []file{{path: ".claude-plugin/plugin.json", data: []byte(manifest)}, {path: ".mcp.json", data: []byte(mcp)},
			{path: "h.json", data: []byte(mcp)}, {path: "m.json", data: []byte(mcp)}}
		out, err := flatFiles(Definition{Name: "approved"}, entries, trees)
		if err != nil {
			return
		}
		for _, x := range out {
			if strings.HasSuffix(x.path, ".claude-plugin/plugin.json") && strings.HasPrefix(x.path, "flat/app/") && !json.Valid(x.data) {
				t.Fatalf("invalid flat manifest %s", x.data)
			}
			if strings.Contains(x.path, "..") {
				t.Fatalf("path %s", x.path)
			}
		}
	})
}
