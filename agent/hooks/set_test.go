package hooks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/internal/worldtest"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

func readScript(t testing.TB, name string) string {
	b, err := os.ReadFile(script(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// guardPlugin has a PreToolUse hook on Bash that runs scriptName from the
// plugin's own hooks/ dir through ${CLAUDE_PLUGIN_ROOT}.
func guardPlugin(t testing.TB, name, scriptName string) map[string]string {
	return map[string]string{
		".claude-plugin/plugin.json": `{"name": "` + name + `", "version": "1.0.0"}`,
		"hooks/hooks.json":           `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks/run.sh", "timeout": 10}]}]}}`,
		"hooks/run.sh*":              readScript(t, scriptName),
	}
}

func runSet(t *testing.T, s *agent.Set, project, tool string) *Result {
	t.Helper()
	cmds := FromSet(s, plugin.HookPreToolUse, project)
	return (&Runner{}).Run(context.Background(), preToolUse(t, tool), cmds)
}

func TestFromSetRunsPluginHooks(t *testing.T) {
	w := worldtest.New(t)
	w.Install("guard@corp", "1.0.0", guardPlugin(t, "guard", "block_exit.sh"))
	w.Install("ok@corp", "1.0.0", guardPlugin(t, "ok", "allow.sh"))
	rt := w.Runtime(w.Options())
	s := w.Load(rt, agent.CacheOnly)

	res := runSet(t, s, w.Project, "Bash")
	if !res.Blocked() || res.BlockedBy != "plugin:guard@corp:PreToolUse[0][0]" || res.Reason != "rm -rf is not allowed here" {
		t.Fatalf("want guard to block: %s", dump(res))
	}
	if len(res.Hooks) != 2 {
		t.Fatalf("want both plugin hooks: %s", dump(res))
	}
	for _, o := range res.Hooks {
		if !strings.HasPrefix(o.Command, w.Home) || !strings.HasSuffix(o.Command, "/hooks/run.sh") {
			t.Errorf("command %q: ${CLAUDE_PLUGIN_ROOT} not substituted with the cache dir", o.Command)
		}
	}
	// The matcher is Bash: Write runs nothing.
	if res := runSet(t, s, w.Project, "Write"); len(res.Hooks) != 0 || res.Blocked() {
		t.Fatalf("Write: %s", dump(res))
	}
}

func TestPluginHookEnvironmentFromSet(t *testing.T) {
	w := worldtest.New(t)
	rec := w.Install("env@corp", "1.0.0", guardPlugin(t, "env", "echo_event.sh"))
	out := filepath.Join(t.TempDir(), "out")
	t.Setenv("HOOK_OUT", out)
	s := w.Load(w.Runtime(w.Options()), agent.CacheOnly)
	res := runSet(t, s, w.Project, "Bash")
	if len(res.Errors) != 0 {
		t.Fatal(res.Errors)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{"CLAUDE_PLUGIN_ROOT=" + rec.InstallPath, "WHARF_PLUGIN_ROOT=" + rec.InstallPath, "CLAUDE_PROJECT_DIR=" + w.Project, "CLAUDE_PLUGIN_DATA=" + w.Home} {
		if !strings.Contains(got, want) {
			t.Errorf("hook environment %q lacks %q", got, want)
		}
	}
}

// userBlockHook is a user-settings hook that blocks every Bash call.
func userBlockHook(t testing.TB) map[string]any {
	return map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "Bash", "hooks": []any{map[string]any{"type": "command", "command": script(t, "block_json.sh")}}}}}}
}

func TestManagedHooksOnly(t *testing.T) {
	w := worldtest.New(t)
	w.Install("forced@corp", "1.0.0", guardPlugin(t, "forced", "block_exit.sh"))
	w.Install("free@corp", "1.0.0", guardPlugin(t, "free", "block_exit.sh"))
	user := userBlockHook(t)
	user["enabledPlugins"] = map[string]any{"forced@corp": true, "free@corp": true}
	w.WriteSettings(settings.ScopeUser, user)

	// Without managed policy: the user hook and both plugins' hooks run.
	all := w.Load(w.Runtime(w.Options()), agent.CacheOnly)
	if res := runSet(t, all, w.Project, "Bash"); len(res.Hooks) != 3 {
		t.Fatalf("without policy want 3 hooks: %s", dump(res))
	}

	w.WriteManaged(map[string]any{"allowManagedHooksOnly": true, "enabledPlugins": map[string]any{"forced@corp": true}})
	o := w.Options()
	o.Policy = w.AgentPolicy()
	s := w.Load(w.Runtime(o), agent.CacheOnly)
	res := runSet(t, s, w.Project, "Bash")
	if len(res.Hooks) != 1 || res.Hooks[0].Plugin != "forced@corp" {
		t.Fatalf("allowManagedHooksOnly: want only the forced plugin's hook, got %s", dump(res))
	}
	if !res.Blocked() || res.BlockedBy != "plugin:forced@corp:PreToolUse[0][0]" {
		t.Fatalf("%s", dump(res))
	}
	// The same policy as a Gate refuses hooks handed to the runner
	// directly (here those of the set loaded before the policy).
	cmds := FromSet(all, plugin.HookPreToolUse, w.Project)
	res = (&Runner{Gate: w.Policy()}).Run(context.Background(), preToolUse(t, "Bash"), cmds)
	if len(res.Hooks) != 1 || res.Hooks[0].Plugin != "forced@corp" || len(res.Refused) != 2 {
		t.Fatalf("Gate: %s", dump(res))
	}
}

func TestStrictPluginOnlyCustomizationSkipsUserHooks(t *testing.T) {
	w := worldtest.New(t)
	w.Install("guard@corp", "1.0.0", guardPlugin(t, "guard", "allow.sh"))
	user := userBlockHook(t)
	user["enabledPlugins"] = map[string]any{"guard@corp": true}
	w.WriteSettings(settings.ScopeUser, user)
	w.WriteSettings(settings.ScopeProject, userBlockHook(t))
	w.WriteManaged(map[string]any{"strictPluginOnlyCustomization": []string{"hooks"}})
	o := w.Options()
	o.Policy = w.AgentPolicy()
	s := w.Load(w.Runtime(o), agent.CacheOnly)
	res := runSet(t, s, w.Project, "Bash")
	if res.Blocked() || len(res.Hooks) != 1 || res.Hooks[0].Plugin != "guard@corp" {
		t.Fatalf("hooks surface locked: user/project hooks must not run: %s", dump(res))
	}
}

// A prompt hook is live and listed, as in Claude Code lists it (an agent
// with a model runs it); wharf's runner reports it as not run and runs the
// command hook next to it under its own position in the file.
func TestPromptHooksAreListed(t *testing.T) {
	w := worldtest.New(t)
	w.Install("mixed@corp", "1.0.0", map[string]string{
		".claude-plugin/plugin.json": `{"name": "mixed", "version": "1.0.0"}`,
		"hooks/hooks.json":           `{"hooks": {"PreToolUse": [{"hooks": [{"type": "prompt", "prompt": "Is this safe?"}, {"type": "command", "command": "` + script(t, "approve_json.sh") + `"}]}]}}`,
	})
	s := w.Load(w.Runtime(w.Options()), agent.CacheOnly)
	live := s.ComponentsOf(plugin.KindHook)
	if len(live) != 1 || len(live[0].Hook.Matchers[0].Hooks) != 2 || live[0].Hook.Matchers[0].Hooks[0].Type != "prompt" {
		t.Fatalf("live hooks %+v", live)
	}
	if sk := s.Skipped(); len(sk) != 0 {
		t.Fatalf("skipped = %v", sk)
	}
	res := runSet(t, s, w.Project, "Bash")
	if len(res.Hooks) != 1 || res.Decision != "approve" || res.Hooks[0].ID != "plugin:mixed@corp:PreToolUse[0][1]" ||
		len(res.NotRun) != 1 || !strings.Contains(res.NotRun[0], "PreToolUse[0][0]: prompt hook; wharf has no model to run it") {
		t.Fatalf("%s", dump(res))
	}
}

// A Runtime gates hooks with the session's policy.
var _ Gate = (*agent.Runtime)(nil)
