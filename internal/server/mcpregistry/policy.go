package mcpregistry

import (
	"encoding/json"
	"slices"
	"strings"
)

// Lists are the policy's MCP server lists as the managed settings write
// them (allowedMcpServers, deniedMcpServers: objects with serverName,
// serverCommand or serverUrl). Allowed nil means no allowlist; an empty
// one allows nothing.
type Lists struct {
	Allowed []json.RawMessage
	Denied  []json.RawMessage
}

// Identity is what the lists can name of a server: its names (the name in
// its plugin's configuration and its registry name), the command and
// arguments of a stdio server, the URLs of a remote one.
type Identity struct {
	Names   []string
	Command []string
	URLs    []string
}

type listEntry struct {
	ServerName    *string  `json:"serverName"`
	ServerCommand []string `json:"serverCommand"`
	ServerURL     *string  `json:"serverUrl"`
}

// matches reports whether one list entry names id; ok is false for an
// entry that names nothing wharf can read.
func (id Identity) matches(raw json.RawMessage) (bool, bool) {
	var e listEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return false, false
	}
	switch {
	case e.ServerName != nil:
		return slices.Contains(id.Names, *e.ServerName), true
	case e.ServerCommand != nil:
		return len(id.Command) > 0 && slices.Equal(id.Command, e.ServerCommand), true
	case e.ServerURL != nil:
		for _, u := range id.URLs {
			if wildcard(*e.ServerURL, u) {
				return true, true
			}
		}
		return false, true
	}
	return false, false
}

// Permits reports whether the lists let id run: no denylist entry names
// it, and, with an allowlist, one of its entries does. A denylist entry
// that cannot be read denies every server (fail closed).
func (l Lists) Permits(id Identity) bool {
	for _, raw := range l.Denied {
		m, ok := id.matches(raw)
		if m || !ok {
			return false
		}
	}
	if l.Allowed == nil {
		return true
	}
	for _, raw := range l.Allowed {
		if m, ok := id.matches(raw); m && ok {
			return true
		}
	}
	return false
}

// wildcard matches s against pattern, where each '*' stands for any run
// of characters (Claude Code's serverUrl patterns).
func wildcard(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}
