package policy

import (
	"bytes"
	"encoding/json"

	"github.com/wharfhq/wharf/internal/core/toolpin"
)

// addPins reads the mcpToolPins key (toolpin.ManagedKey) of one settings
// document of a policy layer into the state's pins and returns what could
// not be read. Every policy layer may pin: a pin only tightens.
func (st *state) addPins(file string, data []byte) []string {
	if !bytes.Contains(data, []byte(toolpin.ManagedKey)) {
		return nil // the common case costs no decoding
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(data, &doc) != nil {
		return nil // a document that is not an object is reported by the settings reader
	}
	raw, ok := doc[toolpin.ManagedKey]
	if !ok {
		return nil
	}
	s, problems := toolpin.ParseManaged(file, raw)
	st.pins.Merge(s)
	return problems
}

// WithToolPins sets the tool pins of the policy bundles the engine's
// server layers came from.
func WithToolPins(pins []toolpin.Pin) Option {
	return func(e *Engine) { e.SetToolPins(pins) }
}

// SetToolPins replaces the bundles' tool pins (a reload that pulled a new
// bundle sets them again).
func (e *Engine) SetToolPins(pins []toolpin.Pin) {
	c := append([]toolpin.Pin(nil), pins...)
	e.pins.Store(&c)
}

// ToolPins returns the pinned tool definitions of plugin MCP servers in
// force: those of the policy bundles pulled from the policy servers and the
// mcpToolPins of every policy layer. Where several pin one server, its
// definitions must match all of them.
func (e *Engine) ToolPins() toolpin.Set {
	var s toolpin.Set
	if e == nil {
		return s
	}
	s.Merge(e.cur.Load().pins)
	if p := e.pins.Load(); p != nil {
		s.Add(*p...)
	}
	return s
}
