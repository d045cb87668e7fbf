package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/wharfhq/wharf/plugin"
)

// MaxEventSize bounds the event JSON read from stdin. A tool call's input
// (a file an agent is about to write) can be large, but not unbounded.
const MaxEventSize = 16 << 20

// Event is one hook event as the agent sends it: its name and its JSON
// object, passed unchanged to every hook on stdin.
type Event struct {
	Name plugin.HookEvent
	// Target is what matchers are matched against: the value of the
	// event's matcher field (EventSpec.Matcher: tool_name of tool events,
	// source of SessionStart, trigger of PreCompact...). Empty for events
	// without a matcher field.
	Target string
	// Raw is the event object, compacted.
	Raw json.RawMessage
}

// EventError is an event that cannot be parsed: it names what is wrong and
// what the input must look like.
type EventError struct {
	Event string
	Msg   string
}

func (e *EventError) Error() string {
	if e.Event == "" {
		return "hook event: " + e.Msg
	}
	return fmt.Sprintf("hook event %s: %s", e.Event, e.Msg)
}

// ReadEvent reads at most max bytes (MaxEventSize when max <= 0) of event
// JSON from r and parses it with ParseEvent.
func ReadEvent(name string, r io.Reader, max int64) (Event, error) {
	if max <= 0 {
		max = MaxEventSize
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return Event{}, &EventError{Event: name, Msg: "reading stdin: " + err.Error()}
	}
	if int64(len(data)) > max {
		return Event{}, &EventError{Event: name, Msg: fmt.Sprintf("event JSON is larger than %d bytes; send the event object alone on stdin", max)}
	}
	return ParseEvent(name, data)
}

// ParseEvent parses the event JSON of event name. The JSON must be one
// object; hook_event_name, when present, must agree with name (it is added
// when absent, so hooks always get it); a documented field, when present,
// must have its documented JSON type. Empty input is an event with no
// fields.
func ParseEvent(name string, data []byte) (Event, error) {
	ev := plugin.HookEvent(name)
	if !ev.IsKnown() {
		return Event{}, &EventError{Event: name, Msg: fmt.Sprintf("unknown event; use one of %s", knownEvents())}
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		data = []byte("{}")
	}
	if !utf8.Valid(data) {
		return Event{}, &EventError{Event: name, Msg: "stdin is not valid UTF-8 JSON"}
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&obj); err != nil {
		return Event{}, &EventError{Event: name, Msg: "stdin is not a JSON object: " + describeJSONErr(data, err)}
	}
	if obj == nil {
		return Event{}, &EventError{Event: name, Msg: "stdin is null; send the event as a JSON object"}
	}
	if _, err := dec.Token(); err != io.EOF {
		return Event{}, &EventError{Event: name, Msg: "stdin holds more than one JSON value; send one event object"}
	}
	if raw, ok := obj["hook_event_name"]; ok {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || s != name {
			return Event{}, &EventError{Event: name, Msg: fmt.Sprintf("hook_event_name is %s, not %q", raw, name)}
		}
	}
	out := Event{Name: ev}
	spec, _ := SpecOf(ev)
	for _, fs := range [][]Field{CommonFields, spec.Fields} {
		for _, fd := range fs {
			raw, ok := obj[fd.Name]
			if !ok || string(raw) == "null" || fd.Type == "any" {
				continue
			}
			if got := jsonType(raw); got != fd.Type {
				return Event{}, &EventError{Event: name, Msg: fmt.Sprintf("field %s must be a %s, got %s", fd.Name, fd.Type, truncate(string(raw), 80))}
			}
		}
	}
	if spec.Matcher != "" {
		if raw, ok := obj[spec.Matcher]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &out.Target); err != nil {
				return Event{}, &EventError{Event: name, Msg: fmt.Sprintf("field %s must be a string, got %s", spec.Matcher, truncate(string(raw), 80))}
			}
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return Event{}, &EventError{Event: name, Msg: "stdin is not valid JSON: " + err.Error()}
	}
	if _, ok := obj["hook_event_name"]; !ok {
		// Hooks read the event's name from their input, as Claude Code
		// sends it.
		b := buf.Bytes()
		nb, _ := json.Marshal(name)
		rest := b[1:]
		sep := ","
		if len(bytes.TrimSpace(rest)) == 1 { // "}"
			sep = ""
		}
		buf = *bytes.NewBuffer(append(append(append([]byte(`{"hook_event_name":`), nb...), sep...), rest...))
	}
	out.Raw = buf.Bytes()
	return out, nil
}

// jsonType names the JSON type of a valid JSON value.
func jsonType(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return ""
	}
	switch t[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func describeJSONErr(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Sprintf("line %d: %v", line, se)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("got a JSON %s", te.Value)
	}
	return err.Error()
}

func knownEvents() string {
	var b bytes.Buffer
	for i, e := range plugin.HookEvents {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(e))
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
