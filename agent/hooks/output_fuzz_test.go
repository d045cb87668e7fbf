package hooks

import (
	"encoding/json"
	"testing"
)

// FuzzParseOutput: whatever two hooks print on stdout, parsing and
// combining their outcomes never panics, the combined decision is one of
// the known ones, a block always carries a reason, and the result encodes.
func FuzzParseOutput(f *testing.F) {
	f.Add([]byte(`{"decision":"block","reason":"no"}`), []byte(`{"decision":"approve"}`))
	f.Add([]byte(`{"continue":false,"stopReason":"halt","systemMessage":"m","suppressOutput":true}`), []byte("plain text\n"))
	f.Add([]byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"r"}}`),
		[]byte(`{"hookSpecificOutput":{"permissionDecision":"allow","additionalContext":"ctx"}}`))
	f.Add([]byte(`{"hookSpecificOutput":{"additionalContext":"a"}}`), []byte(`{"hookSpecificOutput":{"additionalContext":"b","x":[1]}}`))
	f.Add([]byte(`{"decision":"maybe"}`), []byte(`{not json`))
	f.Add([]byte(`{"hookSpecificOutput":null,"continue":null}`), []byte(`   `))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		res := &Result{Event: "PreToolUse"}
		for i, out := range [][]byte{a, b} {
			o := Outcome{Ran: true}
			o.ID = []string{"h0", "h1"}[i]
			parseOutput(&o, out)
			if o.Decision != "" && o.Decision != DecisionBlock && o.Decision != DecisionApprove {
				t.Fatalf("outcome decision %q", o.Decision)
			}
			res.Hooks = append(res.Hooks, o)
		}
		combine(res)
		switch res.Decision {
		case "", DecisionApprove:
		case DecisionBlock:
			if res.Reason == "" || res.BlockedBy == "" {
				t.Fatalf("block without reason or hook: %+v", res)
			}
		default:
			t.Fatalf("combined decision %q", res.Decision)
		}
		if pd, ok := res.HookSpecificOutput["permissionDecision"]; ok {
			if s, _ := pd.(string); permissionRank[s] == 0 {
				t.Fatalf("permissionDecision %v passed through", pd)
			}
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("result does not encode: %v", err)
		}
	})
}
