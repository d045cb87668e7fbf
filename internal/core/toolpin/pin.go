package toolpin

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/plugin"
)

// ManagedKey is the managed settings key that pins tool definitions on a
// machine without a policy server (or on top of one):
//
//	"mcpToolPins": {"<plugin>@<marketplace>": {"<server>": "mcp1:<hex>"}}
//
// It is read from policy layers only (the managed directories, --policy
// layers, a policy server's layers); in user, project or local settings it
// means nothing.
const ManagedKey = "mcpToolPins"

// MaxServerName bounds a server's name in a pin.
const MaxServerName = 256

// Pin is the approved hash of one plugin MCP server's tool definitions.
type Pin struct {
	Plugin string `json:"plugin"` // name@marketplace
	Server string `json:"server"` // the server's name in the plugin's .mcp.json
	Hash   string `json:"hash"`
	// Origin says where the pin comes from (a managed file, a policy
	// server's bundle), for messages; it is not part of the bundle.
	Origin string `json:"-"`
}

// Validate checks a pin read from outside.
func (p Pin) Validate() error {
	id, err := plugin.ParseID(p.Plugin)
	if err != nil || id.String() != p.Plugin {
		return fmt.Errorf("plugin %q is not a plugin id (name@marketplace)", p.Plugin)
	}
	if err := ValidServer(p.Server); err != nil {
		return err
	}
	if !ValidHash(p.Hash) {
		return fmt.Errorf("hash %q of %s server %q is not %s and 64 hex digits", p.Hash, p.Plugin, p.Server, Prefix)
	}
	return nil
}

// ValidServer checks a server name as pins carry it.
func ValidServer(s string) error {
	if s == "" || s == "*" || len(s) > MaxServerName || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) || !utf8Valid(s) {
		return fmt.Errorf("server name %q is not a server name (1 to %d printable characters, not \"*\")", s, MaxServerName)
	}
	return nil
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// Set is the pins in force. The zero Set pins nothing. Pins only tighten:
// when several sources pin one server, the definitions must match every one
// of them, so no source can loosen or remove another's pin.
type Set struct {
	pins map[string][]Pin
	// broken names sources whose pins could not be read at all: while
	// there is one, no plugin server's definitions are accepted.
	broken []string
}

func key(pluginID, server string) string { return pluginID + "\x00" + server }

// Add adds pins.
func (s *Set) Add(pins ...Pin) {
	if s.pins == nil {
		s.pins = map[string][]Pin{}
	}
	for _, p := range pins {
		k := key(p.Plugin, p.Server)
		s.pins[k] = append(s.pins[k], p)
	}
}

// AddBroken records a source whose pins cannot be read (fail closed).
func (s *Set) AddBroken(origin string) { s.broken = append(s.broken, origin) }

// Merge adds every pin of o.
func (s *Set) Merge(o Set) {
	for _, ps := range o.pins {
		s.Add(ps...)
	}
	s.broken = append(s.broken, o.broken...)
}

// Len is the number of pins.
func (s Set) Len() int {
	n := 0
	for _, ps := range s.pins {
		n += len(ps)
	}
	return n
}

// Pins returns the pins of one server, in the order they were added.
func (s Set) Pins(pluginID, server string) []Pin {
	return append([]Pin(nil), s.pins[key(pluginID, server)]...)
}

// All returns every pin, sorted by plugin, server and hash.
func (s Set) All() []Pin {
	var out []Pin
	for _, ps := range s.pins {
		out = append(out, ps...)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Plugin != b.Plugin {
			return a.Plugin < b.Plugin
		}
		if a.Server != b.Server {
			return a.Server < b.Server
		}
		return a.Hash < b.Hash
	})
	return out
}

// Pinned reports whether any pin names the server (or a broken source
// makes every server pinned).
func (s Set) Pinned(pluginID, server string) bool {
	return len(s.broken) > 0 || len(s.pins[key(pluginID, server)]) > 0 || len(s.wildcard(pluginID)) > 0
}

// Check compares the observed hash of a plugin server's definitions with
// its pins: nil when nothing pins it or every pin matches, else a
// *DriftError naming the first pin it differs from.
func (s Set) Check(pluginID, server, observed string) error {
	if len(s.broken) > 0 {
		return &DriftError{Plugin: pluginID, Server: server, Observed: observed,
			Origin: strings.Join(s.broken, ", "), Broken: true}
	}
	for _, p := range append(s.Pins(pluginID, server), s.wildcard(pluginID)...) {
		if p.Hash != observed {
			return &DriftError{Plugin: pluginID, Server: server, Observed: observed, Pinned: p.Hash, Origin: p.Origin}
		}
	}
	return nil
}

// DriftMessage is the one text of a drift, as the runtime, the inventory
// and the console show it.
const DriftMessage = "tool definitions changed since approval"

// DriftError is a server whose tool definitions differ from a pin.
type DriftError struct {
	Plugin, Server string
	Observed       string // the hash of what the server lists
	Pinned         string // the hash approved
	Origin         string // where the pin comes from
	// Broken: the pins of Origin cannot be read, so no definitions are
	// accepted until they are fixed.
	Broken bool
}

func (e *DriftError) Error() string {
	if e.Broken {
		return fmt.Sprintf("%s: MCP server %q of plugin %s: its definitions (%s) cannot be checked, because the tool pins of %s cannot be read; no tools are exposed until they are fixed",
			DriftMessage, e.Server, e.Plugin, e.Observed, e.Origin)
	}
	from := ""
	if e.Origin != "" {
		from = " by " + e.Origin
	}
	return fmt.Sprintf("%s: MCP server %q of plugin %s lists definitions %s, approved were %s (pinned%s); none of its tools are exposed",
		DriftMessage, e.Server, e.Plugin, e.Observed, e.Pinned, from)
}

// Hint is the next step for a drift.
func (e *DriftError) Hint() string {
	if e.Broken {
		return "an administrator must fix " + ManagedKey + " in " + e.Origin
	}
	return "an administrator reviews the new definitions and approves them (wharf-server console, Tool pins; or POST /v1/toolpins), then reload"
}

// ParseManaged reads the value of ManagedKey in the settings document file.
// A value that is not an object of objects makes the whole key broken (no
// definitions are accepted until it is fixed); one bad entry pins that
// server to a hash nothing matches. Each problem names the field.
func ParseManaged(file string, raw json.RawMessage) (Set, []string) {
	var s Set
	var problems []string
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		s.AddBroken(file)
		return s, []string{fmt.Sprintf("%s: %s must be an object {\"plugin@marketplace\": {\"server\": \"%s<hex>\"}}; no MCP server of a plugin exposes tools until it is fixed (fail closed)", file, ManagedKey, Prefix)}
	}
	for _, pid := range sortedKeys(top) {
		field := fmt.Sprintf("%s[%q]", ManagedKey, pid)
		var servers map[string]json.RawMessage
		if err := json.Unmarshal(top[pid], &servers); err != nil || servers == nil {
			problems = append(problems, fmt.Sprintf("%s: %s must be an object {\"server\": \"%s<hex>\"}; every server of that plugin is refused (fail closed)", file, field, Prefix))
			s.Add(Pin{Plugin: pid, Server: "*", Hash: "invalid", Origin: file})
			continue
		}
		for _, name := range sortedKeys(servers) {
			var h string
			p := Pin{Plugin: pid, Server: name, Origin: file}
			err := json.Unmarshal(servers[name], &h)
			p.Hash = h
			if err == nil {
				err = p.Validate()
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s[%q]: %v; that server exposes no tools until it is fixed (fail closed)", file, field, name, err))
				p.Hash = "invalid"
			}
			s.Add(p)
		}
	}
	return s, problems
}

// wildcard returns the pins of a plugin-wide broken entry (Server "*"),
// which pin every server of the plugin to a hash nothing matches.
func (s Set) wildcard(pluginID string) []Pin { return s.pins[key(pluginID, "*")] }

func sortedKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
