package hooks

import (
	"encoding/json"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// A hook's stdout (or an http hook's body) is hostile: reading it never
// panics, and what it decides is one of the documented decisions.
func FuzzHookOutput(f *testing.F) {
	for _, s := range []string{``, `plain text`, `{"decision":"block","reason":"r"}`, `{"decision":"approve"}`, `{"decision":"maybe"}`,
		`{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"x"}}`,
		`{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"m"}}}`, `{"hookSpecificOutput":{"decision":7}}`,
		`{"continue":false,"stopReason":"s","systemMessage":"m"}`, `{"hookSpecificOutput":{"additionalContext":["x"]}}`, `{`, `{"decision":1}`} {
		f.Add("PreToolUse", s)
		f.Add("PermissionRequest", s)
		f.Add("SessionStart", s)
	}
	f.Fuzz(func(t *testing.T, event, out string) {
		spec, ok := SpecOf(plugin.HookEvent(event))
		if !ok {
			return
		}
		res := &Result{Event: spec.Name, Hooks: []Outcome{{Hook: Hook{ID: "h"}}}}
		parseOutput(&res.Hooks[0], spec, []byte(out))
		combine(res)
		switch res.Decision {
		case "", DecisionApprove:
		case DecisionBlock:
			if !spec.Blocking() || res.Reason == "" {
				t.Fatalf("%s blocked by %q with reason %q", event, out, res.Reason)
			}
		default:
			t.Fatalf("decision %q from %q", res.Decision, out)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("result does not encode: %v", err)
		}
	})
}
