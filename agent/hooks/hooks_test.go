package hooks

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testutil/processtest"
	"github.com/wharfhq/wharf/plugin"
)

func script(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "hooks", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func hk(t testing.TB, id, name string, env ...string) Hook {
	return Hook{ID: id, Source: "plugin", Plugin: "guard@corp", Event: plugin.HookPreToolUse, Command: script(t, name), Env: env}
}

func preToolUse(t testing.TB, tool string) Event {
	t.Helper()
	ev, err := ParseEvent("PreToolUse", []byte(`{"hook_event_name":"PreToolUse","tool_name":"`+tool+`","tool_input":{"command":"rm -rf /"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestRunCombinesMixes(t *testing.T) {
	type want struct {
		decision, reason, blockedBy string
		errors                      []string // hook ids with a non-blocking error
		timedOut                    []string
	}
	cases := []struct {
		name  string
		hooks func(t *testing.T) []Hook
		want  want
	}{
		{"none", func(t *testing.T) []Hook { return nil }, want{}},
		{"allow only", func(t *testing.T) []Hook { return []Hook{hk(t, "a", "allow.sh"), hk(t, "b", "allow.sh")} }, want{}},
		{"block by exit code", func(t *testing.T) []Hook {
			return []Hook{hk(t, "a", "allow.sh"), hk(t, "b", "block_exit.sh")}
		}, want{decision: "block", reason: "rm -rf is not allowed here", blockedBy: "b"}},
		{"block by json", func(t *testing.T) []Hook {
			return []Hook{hk(t, "a", "block_json.sh"), hk(t, "b", "allow.sh")}
		}, want{decision: "block", reason: "json policy says no", blockedBy: "a"}},
		{"first block in hook order wins, not first to finish", func(t *testing.T) []Hook {
			slow := hk(t, "slow", "block_json.sh")
			slow.Command = "sleep 0.3; " + slow.Command
			return []Hook{slow, hk(t, "fast", "block_exit.sh")}
		}, want{decision: "block", reason: "json policy says no", blockedBy: "slow"}},
		{"approve", func(t *testing.T) []Hook {
			return []Hook{hk(t, "a", "allow.sh"), hk(t, "b", "approve_json.sh")}
		}, want{decision: "approve", reason: "safe read-only tool"}},
		{"block beats approve", func(t *testing.T) []Hook {
			return []Hook{hk(t, "a", "approve_json.sh"), hk(t, "b", "block_exit.sh")}
		}, want{decision: "block", reason: "rm -rf is not allowed here", blockedBy: "b"}},
		{"crash is a non-blocking error", func(t *testing.T) []Hook {
			return []Hook{hk(t, "c", "crash.sh"), hk(t, "a", "allow.sh")}
		}, want{errors: []string{"c"}}},
		{"exit 1 is a non-blocking error", func(t *testing.T) []Hook {
			return []Hook{hk(t, "f", "fail.sh")}
		}, want{errors: []string{"f"}}},
		{"timeout is a non-blocking error", func(t *testing.T) []Hook {
			h := hk(t, "t", "timeout.sh")
			h.Timeout = 300 * time.Millisecond
			return []Hook{h, hk(t, "a", "approve_json.sh")}
		}, want{decision: "approve", reason: "safe read-only tool", errors: []string{"t"}, timedOut: []string{"t"}}},
		{"broken hooks never stop a block", func(t *testing.T) []Hook {
			h := hk(t, "t", "timeout.sh")
			h.Timeout = 300 * time.Millisecond
			return []Hook{hk(t, "c", "crash.sh"), h, hk(t, "bj", "bad_json.sh"), hk(t, "b", "block_exit.sh"), hk(t, "missing", "no-such-hook.sh")}
		}, want{decision: "block", reason: "rm -rf is not allowed here", blockedBy: "b", errors: []string{"c", "t", "bj", "missing"}, timedOut: []string{"t"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &Runner{}
			res := r.Run(context.Background(), preToolUse(t, "Bash"), tc.hooks(t))
			if res.Decision != tc.want.decision || res.Reason != tc.want.reason || res.BlockedBy != tc.want.blockedBy {
				t.Errorf("decision=%q reason=%q blockedBy=%q; want %q %q %q", res.Decision, res.Reason, res.BlockedBy, tc.want.decision, tc.want.reason, tc.want.blockedBy)
			}
			var errs, timed []string
			for _, o := range res.Hooks {
				if o.Error != "" {
					errs = append(errs, o.ID)
				}
				if o.TimedOut {
					timed = append(timed, o.ID)
				}
			}
			if strings.Join(errs, ",") != strings.Join(tc.want.errors, ",") {
				t.Errorf("hooks with errors = %v, want %v (%s)", errs, tc.want.errors, dump(res))
			}
			if strings.Join(timed, ",") != strings.Join(tc.want.timedOut, ",") {
				t.Errorf("timed out = %v, want %v", timed, tc.want.timedOut)
			}
			if len(res.Errors) != len(tc.want.errors) {
				t.Errorf("Errors = %q", res.Errors)
			}
			for _, e := range res.Errors {
				// Every error names the hook it came from.
				id, _, _ := strings.Cut(e, ": ")
				found := false
				for _, w := range tc.want.errors {
					found = found || w == id
				}
				if !found {
					t.Errorf("error %q does not start with a hook id", e)
				}
			}
		})
	}
}

func dump(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestRunErrorMessages(t *testing.T) {
	r := &Runner{}
	h := hk(t, "t", "timeout.sh")
	h.Timeout = 200 * time.Millisecond
	res := r.Run(context.Background(), preToolUse(t, "Bash"), []Hook{hk(t, "c", "crash.sh"), hk(t, "f", "fail.sh"), h, hk(t, "bj", "bad_json.sh")})
	want := map[string]string{
		"c":  "killed by signal segmentation fault",
		"f":  "exit code 1: linter not installed",
		"t":  "timed out after 200ms",
		"bj": "stdout looks like JSON but does not parse",
	}
	for _, o := range res.Hooks {
		if !strings.Contains(o.Error, want[o.ID]) {
			t.Errorf("%s: error %q, want it to contain %q", o.ID, o.Error, want[o.ID])
		}
	}
	if res.Decision != "" {
		t.Errorf("bad JSON must not block: %s", dump(res))
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	h := hk(t, "t", "timeout.sh", "HOOK_PIDFILE="+pidfile)
	h.Timeout = 500 * time.Millisecond
	res := (&Runner{}).Run(context.Background(), preToolUse(t, "Bash"), []Hook{h})
	if !res.Hooks[0].TimedOut {
		t.Fatalf("not timed out: %s", dump(res))
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// The grandchild was in the hook's process group: it must be gone
	// (reaped by init, or a zombie about to be). Poll briefly for reaping.
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d of the timed-out hook is still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool { return processtest.Alive(pid) }

func TestMatcher(t *testing.T) {
	cases := []struct {
		matcher, tool string
		want          bool
	}{
		{"", "Bash", true},
		{"*", "Bash", true},
		{"**", "Bash", true}, {"**", "mcp__memory__save", true},
		{"Bash", "Bash", true},
		{"Edit|Write", "Write", true},
		{"Edit|Write", "NotebookEdit", false},
		{"Notebook.*", "NotebookEdit", true},
		{"mcp__plugin_db_.*", "mcp__plugin_db_pg__query", true},
		{"Bash", "BashOutput", false},
	}
	for _, c := range cases {
		got, err := Matches(c.matcher, c.tool)
		if err != nil || got != c.want {
			t.Errorf("Matches(%q, %q) = %v, %v; want %v", c.matcher, c.tool, got, err, c.want)
		}
	}
	if _, err := Matches("(", "Bash"); err == nil {
		t.Error("invalid regex accepted")
	}
}

func TestRunSelectsByMatcher(t *testing.T) {
	edit := hk(t, "edit", "block_exit.sh")
	edit.Matcher = "Edit|Write"
	bash := hk(t, "bash", "block_json.sh")
	bash.Matcher = "Bash"
	bad := hk(t, "bad", "block_json.sh")
	bad.Matcher = "(["
	res := (&Runner{}).Run(context.Background(), preToolUse(t, "Write"), []Hook{bash, edit, bad})
	if res.BlockedBy != "edit" || len(res.Hooks) != 2 {
		t.Fatalf("want only edit to run and the bad matcher reported: %s", dump(res))
	}
	if res.Hooks[1].ID != "bad" || !strings.Contains(res.Hooks[1].Error, "not a valid regular expression") || res.Hooks[1].Ran {
		t.Fatalf("bad matcher: %+v", res.Hooks[1])
	}
	// Events without a matcher target run every hook.
	ev, err := ParseEvent("Stop", []byte(`{"hook_event_name":"Stop"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []*Hook{&edit, &bash} {
		h.Event = plugin.HookStop
	}
	res = (&Runner{}).Run(context.Background(), ev, []Hook{bash, edit})
	if len(res.Hooks) != 2 || res.BlockedBy != "bash" {
		t.Fatalf("Stop: %s", dump(res))
	}
}

func TestHookGetsEventAndEnvironment(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	h := hk(t, "e", "echo_event.sh", "HOOK_OUT="+out, "CLAUDE_PLUGIN_ROOT=/plugins/guard", "WHARF_PLUGIN_ROOT=/plugins/guard", "CLAUDE_PLUGIN_DATA=/data/guard", "CLAUDE_PROJECT_DIR=/proj")
	ev := preToolUse(t, "Bash")
	res := (&Runner{}).Run(context.Background(), ev, []Hook{h})
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, w := range []string{string(ev.Raw), "CLAUDE_PLUGIN_ROOT=/plugins/guard", "WHARF_PLUGIN_ROOT=/plugins/guard", "CLAUDE_PLUGIN_DATA=/data/guard", "CLAUDE_PROJECT_DIR=/proj"} {
		if !strings.Contains(got, w) {
			t.Errorf("hook saw %q, missing %q", got, w)
		}
	}
}

func TestHookSpecificOutputMerged(t *testing.T) {
	a := hk(t, "a", "context.sh", "PERM=allow", "CTX=first")
	d := hk(t, "d", "context.sh", "PERM=deny", "CTX=second")
	k := hk(t, "k", "context.sh", "PERM=ask", "CTX=third")
	res := (&Runner{}).Run(context.Background(), preToolUse(t, "Bash"), []Hook{a, d, k})
	h := res.HookSpecificOutput
	if h["permissionDecision"] != "deny" || h["permissionDecisionReason"] != "reason-deny" {
		t.Errorf("deny must win with its reason: %v", h)
	}
	if h["additionalContext"] != "first\nsecond\nthird" || h["hookEventName"] != "PreToolUse" {
		t.Errorf("context in hook order: %v", h)
	}
}

type refuseUser struct{}

func (refuseUser) AllowHook(_ context.Context, from string, id plugin.ID) error {
	if from != "plugin" && from != "managed" {
		return &plugin.Error{Layer: plugin.LayerPolicy, Type: "policy-denied", Object: from + " hooks", Err: os.ErrPermission}
	}
	return nil
}

func TestGateRefusesHooks(t *testing.T) {
	user := hk(t, "user:PreToolUse[0][0]", "block_exit.sh")
	user.Source, user.Plugin = "user", ""
	pl := hk(t, "p", "allow.sh")
	res := (&Runner{Gate: refuseUser{}}).Run(context.Background(), preToolUse(t, "Bash"), []Hook{user, pl})
	if res.Blocked() || len(res.Hooks) != 1 || res.Hooks[0].ID != "p" {
		t.Fatalf("refused user hook ran: %s", dump(res))
	}
	if len(res.Refused) != 1 || !strings.HasPrefix(res.Refused[0], "user:PreToolUse[0][0]: ") {
		t.Fatalf("Refused = %q", res.Refused)
	}
}

func TestCancelStopsHooks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := hk(t, "t", "timeout.sh")
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	res := (&Runner{}).Run(ctx, preToolUse(t, "Bash"), []Hook{h})
	if !strings.HasPrefix(res.Hooks[0].Error, "canceled") {
		t.Fatalf("%s", dump(res))
	}
}

func TestIdenticalCommandsRunOnce(t *testing.T) {
	out := filepath.Join(t.TempDir(), "count")
	h := Hook{ID: "user:PreToolUse[0][0]", Source: "user", Event: plugin.HookPreToolUse, Command: "cat > /dev/null; echo x >> " + out}
	p := h
	p.ID, p.Source = "project:PreToolUse[0][0]", "project"
	other := h
	other.ID, other.Env = "plugin:x@m:PreToolUse[0][0]", []string{"CLAUDE_PLUGIN_ROOT=/x"}
	res := (&Runner{}).Run(context.Background(), preToolUse(t, "Bash"), []Hook{h, p, other})
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), "x"); got != 2 {
		t.Fatalf("ran %d times, want 2 (the duplicate once, the other environment once)", got)
	}
	if len(res.NotRun) != 1 || !strings.Contains(res.NotRun[0], "project:PreToolUse[0][0]: same command and environment as user:PreToolUse[0][0]") {
		t.Fatalf("NotRun = %q", res.NotRun)
	}
}
