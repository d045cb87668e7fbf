package policy

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/internal/core/settings"
)

// merged is the layers' merged settings, a layer that could not be read
// counting as locked down, as ExportClaude merges them.
func (st *state) merged() settings.LayerMerge {
	layers := make([]*settings.Settings, len(st.layers))
	for i, l := range st.layers {
		layers[i] = l.Settings
		if l.Lockdown {
			layers[i] = lockedDown(l.Settings)
		}
	}
	return settings.MergeLayers(layers)
}

// agentRules warns about each admin Rego module: no agent but wharf
// evaluates them.
func (x *exporter) agentRules(st *state, agent string) {
	for _, l := range st.layers {
		for k := range st.modules {
			if rest, ok := strings.CutPrefix(k, l.Name+"/"); ok && rest != "" {
				x.warn("layer %s has admin Rego rules (%s); %s cannot enforce them, only wharf does", l.Name, rest, agent)
			}
		}
	}
}

// mcpLists is the layers' allowedMcpServers and deniedMcpServers (Claude
// Code's managed keys, which wharf keeps as written): the denylists'
// union, and the entries every layer that sets an allowlist lists (equal
// as JSON). A list that is not an array of objects, or a layer that could
// not be read, allows no server (fail closed). allowed is nil when no
// layer sets an allowlist.
func (st *state) mcpLists(warn func(string, ...any)) (allowed, denied []json.RawMessage) {
	setLayers := 0
	var inter map[string]json.RawMessage
	var order []string
	closed := false
	seenDenied := map[string]bool{}
	for _, l := range st.layers {
		if l.Lockdown {
			closed = true
			warn("layer %s cannot be read: exported allowedMcpServers: [] (no server allowed), as wharf fails closed", l.Name)
			continue
		}
		if raw, ok := l.Settings.Unknown["deniedMcpServers"]; ok {
			entries, err := mcpEntries(raw)
			if err != nil {
				closed = true
				warn("layer %s: deniedMcpServers is not a list of objects (%v): exported allowedMcpServers: [] (no server allowed)", l.Name, err)
			}
			for _, e := range entries {
				k := canonicalJSON(e)
				if !seenDenied[k] {
					seenDenied[k] = true
					denied = append(denied, json.RawMessage(k))
				}
			}
		}
		raw, ok := l.Settings.Unknown["allowedMcpServers"]
		if !ok {
			continue
		}
		setLayers++
		entries, err := mcpEntries(raw)
		if err != nil {
			closed = true
			warn("layer %s: allowedMcpServers is not a list of objects (%v): exported allowedMcpServers: [] (no server allowed)", l.Name, err)
			continue
		}
		here := map[string]json.RawMessage{}
		for _, e := range entries {
			k := canonicalJSON(e)
			if _, dup := here[k]; !dup {
				here[k] = json.RawMessage(k)
				if inter == nil || setLayers == 1 {
					order = append(order, k)
				}
			}
		}
		if setLayers == 1 {
			inter = here
			continue
		}
		for k := range inter {
			if _, ok := here[k]; !ok {
				delete(inter, k)
			}
		}
	}
	if setLayers > 1 && !closed {
		warn("allowedMcpServers is set by %d layers; exported the entries all of them list (%d)", setLayers, len(inter))
	}
	switch {
	case closed:
		return []json.RawMessage{}, denied
	case setLayers == 0:
		return nil, denied
	}
	allowed = []json.RawMessage{}
	for _, k := range order {
		if v, ok := inter[k]; ok {
			allowed = append(allowed, v)
		}
	}
	return allowed, denied
}

func mcpEntries(raw json.RawMessage) ([]json.RawMessage, error) {
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, err
	}
	for _, e := range entries {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(e, &obj); err != nil || obj == nil {
			return nil, errNotObject
		}
	}
	return entries, nil
}

type exportError string

func (e exportError) Error() string { return string(e) }

const errNotObject = exportError("an entry is not a JSON object")

// canonicalJSON is v re-encoded with sorted keys and no spaces.
func canonicalJSON(v json.RawMessage) string {
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return string(bytes.TrimSpace(v))
	}
	b, _ := json.Marshal(x) // maps marshal with sorted keys
	return string(b)
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
