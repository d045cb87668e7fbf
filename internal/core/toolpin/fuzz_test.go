package toolpin

import (
	"encoding/json"
	"testing"
)

// FuzzHash: Hash never panics; the order of tools never matters; a schema
// that reads back the same (keys reordered, spaces) hashes the same; any
// change to a name or a description changes the hash.
func FuzzHash(f *testing.F) {
	f.Add("echo", "Echo the text back", []byte(`{"type":"object","properties":{"text":{"type":"string"}}}`), "env", "Read a variable", []byte(`{"type":"object"}`))
	f.Add("", "", []byte(``), "x", "\u202e hidden", []byte(`[1, 2.0, -0, "a\u00e9", null, true, {"b":1,"a":2}]`))
	f.Add("a", "b", []byte(`{"a":{"a":{"a":[[[]]]}}}`), "a", "b", []byte(`1e308`))
	f.Fuzz(func(t *testing.T, n1, d1 string, s1 []byte, n2, d2 string, s2 []byte) {
		tools := []Tool{{Name: n1, Description: d1, InputSchema: s1}, {Name: n2, Description: d2, InputSchema: s2}}
		h, err := Hash(tools)
		if err != nil {
			return
		}
		if !ValidHash(h) {
			t.Fatalf("hash %q is not valid", h)
		}
		if g, err := Hash([]Tool{tools[1], tools[0]}); err != nil || g != h {
			t.Fatalf("order changed the hash: %s %s %v", h, g, err)
		}
		// Re-encoded through Go's map (another key order), the schema hashes the same.
		var v any
		if len(s1) > 0 && json.Unmarshal(s1, &v) == nil {
			re, _ := json.Marshal(v)
			if g, err := Hash([]Tool{{Name: n1, Description: d1, InputSchema: re}, tools[1]}); err == nil && g != h {
				t.Fatalf("schema %s re-encoded as %s changed the hash", s1, re)
			}
		}
		for _, m := range []Tool{
			{Name: n1 + "x", Description: d1, InputSchema: s1},
			{Name: n1, Description: d1 + "x", InputSchema: s1},
			{Name: n1, Description: "x" + d1, InputSchema: s1},
		} {
			if m.Name == n2 && m.Description == d2 {
				continue // now equal to the other tool: a multiset change that may swap roles
			}
			if g, err := Hash([]Tool{m, tools[1]}); err != nil || g == h {
				t.Fatalf("changing tool %+v to %+v kept hash %s (%v)", tools[0], m, h, err)
			}
		}
		// A key added to an object schema changes the hash.
		var obj map[string]any
		if len(s1) > 0 && json.Unmarshal(s1, &obj) == nil && obj != nil {
			if _, has := obj["zz-added"]; !has {
				obj["zz-added"] = 1
				re, _ := json.Marshal(obj)
				if g, err := Hash([]Tool{{Name: n1, Description: d1, InputSchema: re}, tools[1]}); err == nil && g == h && (n1 != n2 || d1 != d2) {
					t.Fatalf("adding a schema key kept the hash")
				}
			}
		}
	})
}

// FuzzParseManaged: the managed key's reader never panics, and whatever it
// cannot read pins to nothing that matches (fail closed).
func FuzzParseManaged(f *testing.F) {
	f.Add([]byte(`{"deploy@corp": {"tools": "mcp1:0000000000000000000000000000000000000000000000000000000000000000"}}`))
	f.Add([]byte(`{"deploy@corp": []}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"": {"": ""}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, problems := ParseManaged("f.json", raw)
		any, _ := Hash(nil)
		for _, p := range s.All() {
			if p.Validate() != nil && s.Check(p.Plugin, p.Server, any) == nil && p.Server != "*" {
				t.Fatalf("an invalid pin %+v accepts definitions (problems %q)", p, problems)
			}
		}
	})
}
