package hooks

import (
	"errors"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/internal/worldtest"
	"github.com/wharfhq/wharf/plugin"
)

// Hooks nothing can run are component failures naming file, field and
// reason, while the event's other hooks load; prompt and agent hooks are
// live (an agent with a model runs them; wharf reports them not run); an
// unknown event is a warning and never listed live.
func TestHookComponentFailures(t *testing.T) {
	w := worldtest.New(t)
	w.Install("mixed@corp", "1.0.0", map[string]string{
		".claude-plugin/plugin.json": `{"name": "mixed", "version": "1.0.0"}`,
		"hooks/hooks.json": `{"hooks": {
			"PreToolUse": [{"matcher": "Bash", "hooks": [
				{"type": "command", "command": "echo '{\"decision\":\"block\",\"reason\":\"cmd\"}'", "if": "Bash(rm *)"},
				{"type": "prompt", "prompt": "is this safe?"},
				{"type": "agent", "prompt": "check it"},
				{"type": "http", "url": "https://hooks.example.com/x"},
				{"type": "webhook", "command": "x"},
				{"type": "http"}
			]}],
			"BeforeLunch": [{"hooks": [{"type": "command", "command": "true"}]}],
			"Stop": [{"hooks": [{"type": "prompt", "prompt": "done?"}]}]
		}}`,
	})
	w.SetEnabled("mixed@corp", true)
	w.WriteManaged(map[string]any{agent.KeyAllowedHTTPHookURLs: []string{"http://127.0.0.1:*"}})
	s := w.Load(w.Runtime(w.Options()), agent.CacheOnly)

	live := s.ComponentsOf(plugin.KindHook)
	if len(live) != 2 || live[0].Name != "mixed:PreToolUse" || len(live[0].Hook.Matchers[0].Hooks) != 3 || live[1].Name != "mixed:Stop" {
		t.Fatalf("live hooks %+v", live)
	}
	types := map[string][]string{}
	for _, sk := range s.Skipped() {
		var pe *plugin.Error
		if !errors.As(sk.Err, &pe) {
			t.Fatalf("%v", sk.Err)
		}
		types[pe.Type] = append(types[pe.Type], sk.Err.Error())
	}
	nr := types[agent.TypeHookNotRunnable]
	if len(nr) != 2 || !strings.Contains(strings.Join(nr, "\n"), "hooks.PreToolUse[0].hooks[5].url: url \"\" is not an http(s) URL") ||
		!strings.Contains(strings.Join(nr, "\n"), "hooks.PreToolUse[0].hooks[4].type: unknown hook type \"webhook\"") {
		t.Fatalf("not runnable: %q", nr)
	}
	if u := types[agent.TypeHookURLRefused]; len(u) != 1 || !strings.Contains(u[0], "hooks.PreToolUse[0].hooks[3].url") {
		t.Fatalf("url refused: %q", u)
	}
	if u := types[agent.TypeHookEventUnknown]; len(u) != 1 || !strings.Contains(u[0], `unknown hook event "BeforeLunch"`) {
		t.Fatalf("unknown event: %q", u)
	}
	if strings.Contains(strings.Join(s.Warnings(), "\n"), ".if:") {
		t.Fatalf("a warning for an if rule wharf evaluates: %q", s.Warnings())
	}
	if !strings.Contains(strings.Join(s.Warnings(), "\n"), "BeforeLunch") {
		t.Fatalf("no warning for the unknown event: %q", s.Warnings())
	}
	st, _ := s.Plugin(plugin.MustParseID("mixed@corp"))
	if len(st.Skipped) != 4 || st.Components != 2 {
		t.Fatalf("plugin status %+v", st)
	}
	// The live command hook runs; the prompt and agent hooks are reported
	// as not run; the others are not there to run.
	res := runPre(t, s, w.Project)
	if !res.Blocked() || res.Reason != "cmd" || len(res.Hooks) != 1 || len(res.NotRun) != 2 {
		t.Fatalf("%+v", res)
	}
}

// An "if" rule wharf cannot evaluate as Claude Code does is a load warning
// naming file, field and what happens instead.
func TestIfWarnings(t *testing.T) {
	for _, c := range []struct{ event, rule, want string }{
		{"PreToolUse", `"Bash(git *)"`, ""},
		{"PreToolUse", `"Skill(deploy)"`, "field hooks.PreToolUse[0].hooks[0].if: wharf evaluates patterns only for Bash"},
		{"PreToolUse", `"Bash(git *"`, "without closing"},
		{"PreToolUse", `7`, "must be a string permission rule"},
		{"Stop", `"Bash"`, "Stop has no tool call"},
	} {
		w := worldtest.New(t)
		w.Install("f@corp", "1.0.0", map[string]string{
			".claude-plugin/plugin.json": `{"name": "f", "version": "1.0.0"}`,
			"hooks/hooks.json":           `{"hooks": {"` + c.event + `": [{"hooks": [{"type": "command", "command": "true", "if": ` + c.rule + `}]}]}}`,
		})
		s := w.Load(w.Runtime(w.Options()), agent.CacheOnly)
		got := strings.Join(s.Warnings(), "\n")
		if c.want == "" && strings.Contains(got, ".if:") || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s if %s: warnings %q, want %q", c.event, c.rule, got, c.want)
		}
	}
}

// An mcp_tool hook loads live; one without its server or tool is a
// component failure naming the field, while the event's other hooks load.
func TestMCPToolHookComponents(t *testing.T) {
	w := worldtest.New(t)
	w.Install("m@corp", "1.0.0", map[string]string{
		".claude-plugin/plugin.json": `{"name": "m", "version": "1.0.0"}`,
		"hooks/hooks.json": `{"hooks": {"Stop": [{"hooks": [
			{"type": "mcp_tool", "server": "mem", "tool": "save", "input": {"s": "${session_id}"}},
			{"type": "mcp_tool", "server": "mem"},
			{"type": "mcp_tool", "server": "mem", "tool": "save", "input": [1]}]}]}}`,
	})
	s := w.Load(w.Runtime(w.Options()), agent.CacheOnly)
	live := s.ComponentsOf(plugin.KindHook)
	if len(live) != 1 || len(live[0].Hook.Matchers[0].Hooks) != 1 {
		t.Fatalf("live hooks %+v", live)
	}
	var msgs []string
	for _, sk := range s.Skipped() {
		msgs = append(msgs, sk.Err.Error())
	}
	all := strings.Join(msgs, "\n")
	if len(msgs) != 2 || !strings.Contains(all, `field hooks.Stop[0].hooks[1].tool: an mcp_tool hook needs "tool"`) ||
		!strings.Contains(all, "field hooks.Stop[0].hooks[2].input: input must be an object") || strings.Contains(all, "unknown hook type") {
		t.Fatalf("skipped: %q", msgs)
	}
	hs := FromSet(s, plugin.HookStop, w.Project)
	if len(hs) != 1 || hs[0].Type != "mcp_tool" || hs[0].MCPServer != "mem" || hs[0].MCPTool != "save" || hs[0].Namespace != "m" {
		t.Fatalf("hooks %s", dump(hs))
	}
}

func TestMCPArgs(t *testing.T) {
	ev := []byte(`{"session_id":"s1","tool_input":{"file_path":"/a.go","n":3},"cwd":"/p"}`)
	args, err := mcpArgs([]byte(`{"path":"${tool_input.file_path}","all":"${tool_input}","deep":[{"c":"in ${cwd}"}],"missing":"[${nope.x}]","num":5}`), ev)
	if err != nil {
		t.Fatal(err)
	}
	got := dump(args)
	want := `{"all":"{\"file_path\":\"/a.go\",\"n\":3}","deep":[{"c":"in /p"}],"missing":"[]","num":5,"path":"/a.go"}`
	if got != want {
		t.Errorf("args = %s, want %s", got, want)
	}
	if _, err := mcpArgs([]byte(`[1]`), ev); err == nil || !strings.Contains(err.Error(), "must be an object") {
		t.Errorf("array input: %v", err)
	}
}
