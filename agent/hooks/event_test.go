package hooks

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

func TestParseEvent(t *testing.T) {
	cases := []struct {
		name, event, in string
		target          string
		err             string
	}{
		{"tool event", "PreToolUse", `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}}`, "Bash", ""},
		{"empty input", "Stop", ``, "", ""},
		{"session start source", "SessionStart", `{"source":"resume"}`, "resume", ""},
		{"unknown event", "BeforeLunch", `{}`, "", "unknown event; use one of PreToolUse"},
		{"not json", "PreToolUse", `{"tool_name": Bash}`, "", "stdin is not a JSON object: line 1: invalid character 'B'"},
		{"array", "PreToolUse", `[1,2]`, "", "got a JSON array"},
		{"null", "PreToolUse", `null`, "", "stdin is null"},
		{"two values", "PreToolUse", `{} {}`, "", "more than one JSON value"},
		{"event name mismatch", "PreToolUse", `{"hook_event_name":"Stop"}`, "", `hook_event_name is "Stop", not "PreToolUse"`},
		{"tool_name not a string", "PostToolUse", `{"tool_name":42}`, "", "field tool_name must be a string, got 42"},
		{"invalid utf8", "Stop", "{\"a\":\"\xff\"}", "", "not valid UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, err := ParseEvent(c.event, []byte(c.in))
			if c.err != "" {
				var ee *EventError
				if !errors.As(err, &ee) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want *EventError containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.Target != c.target || ev.Name != plugin.HookEvent(c.event) || !json.Valid(ev.Raw) {
				t.Fatalf("%+v", ev)
			}
		})
	}
}

func TestReadEventBounded(t *testing.T) {
	big := `{"tool_name":"Bash","x":"` + strings.Repeat("a", 100) + `"}`
	if _, err := ReadEvent("PreToolUse", strings.NewReader(big), 50); err == nil || !strings.Contains(err.Error(), "larger than 50 bytes") {
		t.Fatalf("err = %v", err)
	}
	if ev, err := ReadEvent("PreToolUse", strings.NewReader(big), 0); err != nil || ev.Target != "Bash" {
		t.Fatalf("%v %v", ev, err)
	}
}

func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"tool_name":"Bash"}`, `{"hook_event_name":"PreToolUse","tool_name":"Edit","tool_input":{"file_path":"/a"}}`, `[`, `{"tool_name":1}`, "\xff", `{"source":"startup"}`, `null`, `{} x`} {
		f.Add("PreToolUse", s)
		f.Add("SessionStart", s)
	}
	f.Fuzz(func(t *testing.T, name string, in string) {
		ev, err := ParseEvent(name, []byte(in))
		if err != nil {
			var ee *EventError
			if !errors.As(err, &ee) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if !ev.Name.IsKnown() || !json.Valid(ev.Raw) || ev.Raw[0] != '{' {
			t.Fatalf("accepted %q as %+v", in, ev)
		}
		// Reparsing the compacted event gives the same target.
		ev2, err := ParseEvent(name, ev.Raw)
		if err != nil || ev2.Target != ev.Target {
			t.Fatalf("reparse: %v %+v", err, ev2)
		}
	})
}
