package hooks

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// sampleValue is a value of a documented field's type.
func sampleValue(f Field) any {
	switch f.Type {
	case "string":
		return "v-" + f.Name
	case "boolean":
		return true
	case "number":
		return 1
	case "object":
		return map[string]any{"k": f.Name}
	case "array":
		return []any{f.Name}
	}
	return map[string]any{"any": f.Name}
}

// Every event Claude Code documents: its input reaches a real hook process
// with hook_event_name added, its matcher selects on its documented field
// (or is ignored where the event has none), and exit 2 has the documented
// effect: block, feedback to the model (a block decision too), a
// non-blocking error shown to the user, or nothing.
func TestEveryEventInputMatcherAndExit2(t *testing.T) {
	if len(Specs) != len(plugin.HookEvents) {
		t.Fatalf("%d specs for %d events", len(Specs), len(plugin.HookEvents))
	}
	for i, ev := range plugin.HookEvents {
		if Specs[i].Name != ev {
			t.Fatalf("Specs[%d] is %s, HookEvents[%d] is %s", i, Specs[i].Name, i, ev)
		}
	}
	for _, spec := range Specs {
		t.Run(string(spec.Name), func(t *testing.T) {
			dir := t.TempDir()
			in := map[string]any{"session_id": "s1", "cwd": dir}
			for _, f := range spec.Fields {
				in[f.Name] = sampleValue(f)
			}
			target := ""
			if spec.Matcher != "" {
				target = "Target_1"
				if spec.Name == plugin.HookFileChanged {
					target = "/repo/sub/.envrc"
				}
				in[spec.Matcher] = target
			}
			raw, _ := json.Marshal(in)
			ev, err := ParseEvent(string(spec.Name), raw)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Target != target {
				t.Fatalf("target %q, want %q", ev.Target, target)
			}
			rec := filepath.Join(dir, "in.json")
			blocker := Hook{ID: "b", Event: spec.Name, Matcher: "Target_1", Command: "cat > " + rec + "; echo 'stop here' >&2; exit 2"}
			if spec.Name == plugin.HookFileChanged {
				blocker.Matcher = ".envrc|.env"
			}
			other := Hook{ID: "o", Event: spec.Name, Matcher: "Other_2", Command: "touch " + filepath.Join(dir, "other")}
			res := (&Runner{}).Run(context.Background(), ev, []Hook{blocker, other})

			var got map[string]any
			b, err := os.ReadFile(rec)
			if err != nil {
				t.Fatalf("the matching hook did not run: %v (%+v)", err, res)
			}
			if err := json.Unmarshal(b, &got); err != nil || got["hook_event_name"] != string(spec.Name) {
				t.Fatalf("hook input %s: %v", b, err)
			}
			for _, f := range spec.Fields {
				if _, ok := got[f.Name]; !ok {
					t.Errorf("field %s not passed: %s", f.Name, b)
				}
			}
			_, otherRan := os.Stat(filepath.Join(dir, "other"))
			if spec.Matcher != "" && otherRan == nil {
				t.Errorf("a hook whose matcher does not select %q ran", target)
			}
			if spec.Matcher == "" && otherRan != nil {
				t.Errorf("%s has no matcher field, yet a hook with a matcher did not run", spec.Name)
			}

			switch spec.Exit2 {
			case Exit2Block, Exit2Feedback:
				if !res.Blocked() || res.Reason != "stop here" || res.BlockedBy != "b" || res.Effect != spec.Effect || res.Effect == "" {
					t.Errorf("exit 2: %+v", res)
				}
			case Exit2User:
				if res.Blocked() || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "cannot be blocked") || !strings.Contains(res.Errors[0], "stop here") {
					t.Errorf("exit 2: %+v", res)
				}
			case Exit2Ignored:
				if res.Blocked() || len(res.Errors) != 0 {
					t.Errorf("exit 2: %+v", res)
				}
			default:
				t.Fatalf("exit2 %q", spec.Exit2)
			}

			// A JSON block decision counts only where the event can block.
			res = (&Runner{}).Run(context.Background(), ev, []Hook{{ID: "j", Event: spec.Name, Command: `echo '{"decision":"block","reason":"json says no"}'`}})
			if spec.Blocking() != res.Blocked() {
				t.Errorf("JSON block: blocked=%v, want %v (%+v)", res.Blocked(), spec.Blocking(), res)
			}
			// WorktreeCreate fails on any non-zero exit.
			res = (&Runner{}).Run(context.Background(), ev, []Hook{{ID: "f", Event: spec.Name, Command: "exit 1"}})
			if res.Blocked() != spec.AnyNonZeroBlocks {
				t.Errorf("exit 1: blocked=%v (%+v)", res.Blocked(), res)
			}
		})
	}
}

func TestEventFieldTypes(t *testing.T) {
	for _, c := range []struct{ ev, in, want string }{
		{"PostToolUseFailure", `{"is_interrupt":"yes"}`, "field is_interrupt must be a boolean"},
		{"Stop", `{"stop_hook_active":1}`, "field stop_hook_active must be a boolean"},
		{"PermissionRequest", `{"permission_suggestions":{}}`, "field permission_suggestions must be a array"},
		{"Elicitation", `{"mcp_server_name":["x"]}`, "field mcp_server_name must be a string"},
		{"SessionEnd", `{"session_id":7}`, "field session_id must be a string"},
	} {
		if _, err := ParseEvent(c.ev, []byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want %q", c.ev, c.in, err, c.want)
		}
	}
	ev, err := ParseEvent("PostToolUse", []byte(`{"tool_response":["any","type"],"tool_name":null}`))
	if err != nil || !strings.HasPrefix(string(ev.Raw), `{"hook_event_name":"PostToolUse",`) {
		t.Fatalf("%s %v", ev.Raw, err)
	}
}

func TestMatcherRules(t *testing.T) {
	for _, c := range []struct {
		m, target string
		want      bool
	}{
		{"", "Bash", true}, {"*", "x", true},
		{"Edit|Write", "Write", true}, {"Edit|Write", "NotebookEdit", false},
		{"mcp__memory", "mcp__memory__read", false}, {"mcp__memory__.*", "mcp__memory__read", true},
		{"^mcp__", "mcp__github__x", true}, {"^mcp__", "Bash", false},
		{"Notebook.*", "NotebookEdit", true},
	} {
		if got, err := Matches(c.m, c.target); err != nil || got != c.want {
			t.Errorf("Matches(%q, %q) = %v, %v", c.m, c.target, got, err)
		}
	}
	if _, err := Matches("(", "x"); err == nil {
		t.Error("a bad regular expression matched")
	}
}

// PreToolUse's permissionDecision and PermissionRequest's decision.behavior
// decide as Claude Code reads them: a deny blocks, whatever the order.
func TestSpecificDecisions(t *testing.T) {
	run := func(ev string, outs ...string) *Result {
		e, err := ParseEvent(ev, []byte(`{"tool_name":"Bash"}`))
		if err != nil {
			t.Fatal(err)
		}
		var hs []Hook
		for i, o := range outs {
			hs = append(hs, Hook{ID: string(rune('a' + i)), Event: plugin.HookEvent(ev), Command: "echo '" + o + "'"})
		}
		return (&Runner{}).Run(context.Background(), e, hs)
	}
	r := run("PreToolUse", `{"hookSpecificOutput":{"permissionDecision":"allow"}}`, `{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"not here"}}`)
	if !r.Blocked() || r.Reason != "not here" || r.HookSpecificOutput["permissionDecision"] != "deny" {
		t.Errorf("PreToolUse deny: %+v", r)
	}
	r = run("PermissionRequest", `{"hookSpecificOutput":{"decision":{"behavior":"allow"}}}`, `{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"ask a human"}}}`)
	if !r.Blocked() || r.Reason != "ask a human" || behavior(r.HookSpecificOutput["decision"]) != "deny" {
		t.Errorf("PermissionRequest deny: %+v", r)
	}
	r = run("PermissionRequest", `{"hookSpecificOutput":{"decision":{"behavior":"allow"}}}`)
	if r.Decision != DecisionApprove {
		t.Errorf("PermissionRequest allow: %+v", r)
	}
}

// An http hook POSTs the event JSON to its URL; a 2xx answer is read as a
// command hook's stdout; another status or an unreachable server is a
// non-blocking error; headers see only the variables allowedEnvVars lists.
func TestHTTPHook(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	var auth, leak []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		auth = append(auth, r.Header.Get("Authorization"))
		leak = append(leak, r.Header.Get("X-Leak"))
		mu.Unlock()
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request", 400)
			return
		}
		switch r.URL.Path {
		case "/block":
			io.WriteString(w, `{"decision":"block","reason":"the server says no"}`)
		case "/down":
			http.Error(w, "maintenance", 503)
		default:
			io.WriteString(w, "ok")
		}
	}))
	defer srv.Close()
	ev := preToolUse(t, "Bash")
	hk := func(id, path string) Hook {
		return Hook{ID: id, Event: plugin.HookPreToolUse, Type: "http", URL: srv.URL + path,
			Headers:        map[string]string{"Authorization": "Bearer $TOKEN", "X-Leak": "${SECRET}"},
			AllowedEnvVars: []string{"TOKEN"}}
	}
	runner := &Runner{BaseEnv: []string{"TOKEN=t0k", "SECRET=hunter2"}}
	res := runner.Run(context.Background(), ev, []Hook{hk("a", "/ok"), hk("b", "/block")})
	if !res.Blocked() || res.Reason != "the server says no" || res.BlockedBy != "b" {
		t.Fatalf("http block: %+v", res)
	}
	mu.Lock()
	if len(bodies) != 2 || !strings.Contains(bodies[0], `"tool_name":"Bash"`) || auth[0] != "Bearer t0k" || leak[0] != "" {
		t.Fatalf("bodies %q auth %q leak %q", bodies, auth, leak)
	}
	mu.Unlock()
	res = runner.Run(context.Background(), ev, []Hook{hk("d", "/down")})
	if res.Blocked() || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "503") {
		t.Fatalf("http 503: %+v", res)
	}
	dead := hk("x", "/")
	dead.URL = "http://127.0.0.1:1/"
	res = runner.Run(context.Background(), ev, []Hook{dead})
	if res.Blocked() || len(res.Errors) != 1 {
		t.Fatalf("unreachable http hook: %+v", res)
	}
}
