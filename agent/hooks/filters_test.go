package hooks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/internal/worldtest"
	"github.com/wharfhq/wharf/plugin"
)

func ranIDs(res *Result) []string {
	var out []string
	for _, o := range res.Hooks {
		if o.Ran {
			out = append(out, o.ID)
		}
	}
	return out
}

// A hook's "if" permission rule selects the tool calls it runs for; on an
// event without a tool call a hook with "if" never runs, as in Claude Code.
func TestIfFilter(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, rule, event, raw string
		run                    bool
		notRun                 string // substring of the NotRun entry, when one is expected
	}{
		{"bash prefix", "Bash(git *)", "PreToolUse", `{"tool_name":"Bash","tool_input":{"command":"git status"}}`, true, ""},
		{"bash other", "Bash(git *)", "PreToolUse", `{"tool_name":"Bash","tool_input":{"command":"rm -rf /"}}`, false, ""},
		{"bash legacy", "Bash(npm:*)", "PostToolUse", `{"tool_name":"Bash","tool_input":{"command":"npm test"}}`, true, ""},
		{"edit ts", "Edit(*.ts)", "PreToolUse", `{"tool_name":"Edit","tool_input":{"file_path":"` + dir + `/src/a.ts"}}`, true, ""},
		{"edit go", "Edit(*.ts)", "PreToolUse", `{"tool_name":"Edit","tool_input":{"file_path":"` + dir + `/src/a.go"}}`, false, ""},
		{"other tool", "Edit(*.ts)", "PreToolUse", `{"tool_name":"Write","tool_input":{"file_path":"` + dir + `/a.ts"}}`, false, ""},
		{"project path", "Write(src/**)", "PostToolUseFailure", `{"tool_name":"Write","tool_input":{"file_path":"` + dir + `/src/x/y.go"},"error":"e"}`, true, ""},
		{"bare tool", "Bash", "PermissionRequest", `{"tool_name":"Bash","tool_input":{"command":"ls"}}`, true, ""},
		{"webfetch", "WebFetch(domain:example.com)", "PreToolUse", `{"tool_name":"WebFetch","tool_input":{"url":"https://evil.test/example.com"}}`, false, ""},
		{"no tool call", "Bash", "Stop", `{}`, false, "never runs"},
		{"bad rule", "Bash(git *", "PreToolUse", `{"tool_name":"Bash","tool_input":{"command":"git x"}}`, false, "without closing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			h := Hook{ID: "h", Source: "plugin", Event: plugin.HookEvent(c.event), Command: "touch " + marker, Dir: dir, If: c.rule}
			res := (&Runner{}).Run(context.Background(), mustEvent(t, c.event, c.raw), []Hook{h})
			_, err := os.Stat(marker)
			if ran := err == nil; ran != c.run {
				t.Fatalf("ran = %v, want %v: %s", ran, c.run, dump(res))
			}
			if c.notRun != "" && (len(res.NotRun) != 1 || !strings.Contains(res.NotRun[0], c.notRun)) {
				t.Errorf("notRun = %q, want one with %q", res.NotRun, c.notRun)
			}
		})
	}
}

// A once hook runs at most once per session for the life of the Runner.
func TestOnce(t *testing.T) {
	count := filepath.Join(t.TempDir(), "count")
	h := Hook{ID: "setup", Source: "plugin", Event: plugin.HookSessionStart, Command: "echo x >> " + count, Once: true}
	plain := Hook{ID: "every", Source: "plugin", Event: plugin.HookSessionStart, Command: "echo y >> " + count}
	r := &Runner{}
	for _, c := range []struct {
		session string
		ran     []string
	}{
		{"s1", []string{"setup", "every"}},
		{"s1", []string{"every"}},
		{"s2", []string{"setup", "every"}},
		{"s2", []string{"every"}},
	} {
		res := r.Run(context.Background(), mustEvent(t, "SessionStart", `{"session_id":"`+c.session+`","source":"startup"}`), []Hook{h, plain})
		if got := strings.Join(ranIDs(res), " "); got != strings.Join(c.ran, " ") {
			t.Fatalf("session %s: ran %q, want %q: %s", c.session, got, c.ran, dump(res))
		}
	}
	b, _ := os.ReadFile(count)
	if got := strings.Count(string(b), "x"); got != 2 {
		t.Errorf("the once hook ran %d times, want 2 (one per session)", got)
	}
}

// An async hook runs in the background: Run returns while it still runs,
// and its exit code 2 blocks nothing; the other hooks decide as usual.
func TestAsync(t *testing.T) {
	tmp := t.TempDir()
	gate, done := filepath.Join(tmp, "go"), filepath.Join(tmp, "done")
	bg := Hook{ID: "bg", Source: "plugin", Event: plugin.HookPreToolUse, Async: true,
		Command: `cat > ` + filepath.Join(tmp, "stdin") + `; while [ ! -f ` + gate + ` ]; do sleep 0.05; done; touch ` + done + `; echo no >&2; exit 2`}
	fg := Hook{ID: "fg", Source: "plugin", Event: plugin.HookPreToolUse, Command: "exit 0"}
	r := &Runner{}
	res := r.Run(context.Background(), preToolUse(t, "Bash"), []Hook{bg, fg})
	// Run returned although bg waits for the gate that only now opens.
	if _, err := os.Stat(done); err == nil {
		t.Fatal("the background hook finished before Run returned")
	}
	if res.Blocked() || len(res.Errors) != 0 {
		t.Fatalf("a background hook decided: %s", dump(res))
	}
	if len(res.Hooks) != 2 || !res.Hooks[0].Background || !res.Hooks[0].Ran || res.Hooks[1].Background {
		t.Fatalf("outcomes: %s", dump(res))
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.Wait()
	if _, err := os.Stat(done); err != nil {
		t.Fatalf("the background hook did not run to its end: %v", err)
	}
	in, _ := os.ReadFile(filepath.Join(tmp, "stdin"))
	if !strings.Contains(string(in), `"tool_name":"Bash"`) {
		t.Errorf("background hook stdin = %q, want the event", in)
	}
}

// A background hook that outlives its timeout is killed, with its group.
func TestAsyncTimeout(t *testing.T) {
	h := Hook{ID: "slow", Source: "plugin", Event: plugin.HookStop, Async: true, Command: "sleep 60", Timeout: time.Second}
	r := &Runner{}
	res := r.Run(context.Background(), mustEvent(t, "Stop", `{}`), []Hook{h})
	if len(res.Hooks) != 1 || !res.Hooks[0].Ran {
		t.Fatalf("%s", dump(res))
	}
	r.Wait() // returns only because the timeout killed it
}

// if, once and async written in a plugin's hooks.json reach the runner.
func TestFromSetFilterFields(t *testing.T) {
	w := worldtest.New(t)
	w.Install("ops@corp", "1.0.0", map[string]string{
		".claude-plugin/plugin.json": `{"name":"ops","version":"1.0.0"}`,
		"hooks/hooks.json": `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[
			{"type":"command","command":"echo git","if":"Bash(git *)"},
			{"type":"command","command":"echo once","once":true},
			{"type":"command","command":"echo bg","async":true}]}]}}`,
	})
	s := w.Load(w.Runtime(w.Options()), agent.CacheOnly)
	hs := FromSet(s, plugin.HookPreToolUse, w.Project)
	if len(hs) != 3 || hs[0].If != "Bash(git *)" || !hs[1].Once || !hs[2].Async || hs[0].Once || hs[0].Async {
		t.Fatalf("hooks: %s", dump(hs))
	}
	r := &Runner{}
	ev := mustEvent(t, "PreToolUse", `{"session_id":"s","tool_name":"Bash","tool_input":{"command":"ls"}}`)
	res := r.Run(context.Background(), ev, hs)
	r.Wait()
	if got := strings.Join(ranIDs(res), " "); got != hs[1].ID+" "+hs[2].ID {
		t.Fatalf("ran %q: %s", got, dump(res))
	}
	res = r.Run(context.Background(), ev, hs)
	r.Wait()
	if got := strings.Join(ranIDs(res), " "); got != hs[2].ID {
		t.Fatalf("second run: ran %q: %s", got, dump(res))
	}
}

// With OnceDir, a once hook runs once per session across Runners, as each
// wharf agent hook process is a new Runner.
func TestOnceAcrossRunners(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "once")
	h := Hook{ID: "setup", Source: "plugin", Event: plugin.HookSessionStart, Command: "true", Once: true}
	for i, c := range []struct {
		session string
		runs    bool
	}{{"s1", true}, {"s1", false}, {"s2", true}, {"", true}, {"", true}} {
		res := (&Runner{OnceDir: dir}).Run(context.Background(), mustEvent(t, "SessionStart", `{"session_id":"`+c.session+`"}`), []Hook{h})
		if got := len(ranIDs(res)) == 1; got != c.runs {
			t.Errorf("run %d (session %q): ran = %v, want %v: %s", i, c.session, got, c.runs, dump(res))
		}
	}
}
