package toolpin

import (
	"bytes"
	"sort"
)

// Kinds of a Change.
const (
	Added       = "added"       // a tool the approved definitions do not have
	Removed     = "removed"     // an approved tool the new definitions lack
	Description = "description" // a tool's description changed
	Schema      = "schema"      // a tool's input schema changed (in canonical form)
)

// Change is one difference between two sets of tool definitions. Old and
// New are the description or the canonical schema, as the kind says (for
// Added and Removed, the tool's description).
type Change struct {
	Tool string `json:"tool"`
	Kind string `json:"kind"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
}

// Diff says how next differs from approved, tool by tool (by name), in
// name order: tools added and removed, and for a tool in both a change of
// its description and one of its schema (compared in canonical form, so a
// reordering of keys is no change). A schema that is not valid JSON is
// compared as written. Tools listed twice under one name are compared by
// their last listing.
func Diff(approved, next []Tool) []Change {
	index := func(ts []Tool) map[string]Tool {
		m := make(map[string]Tool, len(ts))
		for _, t := range ts {
			m[t.Name] = t
		}
		return m
	}
	a, n := index(approved), index(next)
	names := make([]string, 0, len(a)+len(n))
	for k := range a {
		names = append(names, k)
	}
	for k := range n {
		if _, ok := a[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var out []Change
	for _, name := range names {
		old, inOld := a[name]
		cur, inNew := n[name]
		switch {
		case !inOld:
			out = append(out, Change{Tool: name, Kind: Added, New: cur.Description})
		case !inNew:
			out = append(out, Change{Tool: name, Kind: Removed, Old: old.Description})
		default:
			if old.Description != cur.Description {
				out = append(out, Change{Tool: name, Kind: Description, Old: old.Description, New: cur.Description})
			}
			if os, ns := schemaText(old.InputSchema), schemaText(cur.InputSchema); os != ns {
				out = append(out, Change{Tool: name, Kind: Schema, Old: os, New: ns})
			}
		}
	}
	return out
}

// schemaText is a schema in canonical form ("null" when absent).
func schemaText(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "null"
	}
	c, err := CanonicalJSON(raw)
	if err != nil {
		return string(raw)
	}
	return string(c)
}
