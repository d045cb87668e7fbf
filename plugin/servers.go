package plugin

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// MCPConfig is a .mcp.json file: {"mcpServers": {name: server}} or, as many
// plugins write it, the bare map {name: server}.
type MCPConfig struct {
	Servers map[string]MCPServer `json:"mcpServers"`
	// Failed lists the entries that cannot be used (a bad name, a missing
	// command or url, an unknown type). They are not in Servers; the other
	// servers of the file still load.
	Failed []FailedComponent `json:"-"`
}

// Names returns the server names in sorted order.
func (c *MCPConfig) Names() []string { return sortedKeys(c.Servers) }

// MCPServer is one MCP server: a local process (Type "" or "stdio" with
// Command) or a remote endpoint (Type "http", "sse" or "ws" with URL).
type MCPServer struct {
	Type    string                     `json:"type,omitempty"`
	Command string                     `json:"command,omitempty"`
	Args    []string                   `json:"args,omitempty"`
	Env     map[string]string          `json:"env,omitempty"`
	Cwd     string                     `json:"cwd,omitempty"`
	URL     string                     `json:"url,omitempty"`
	Headers map[string]string          `json:"headers,omitempty"`
	Extra   map[string]json.RawMessage `json:"-"`
}

// OAuth returns the server's "oauth" object as written (Claude Code's
// OAuth settings for a remote server, such as a pre-registered clientId),
// or nil. It travels with the server configuration to the MCP client.
func (s MCPServer) OAuth() json.RawMessage { return s.Extra["oauth"] }

// IsRemote reports whether the server is reached over the network.
func (s MCPServer) IsRemote() bool { return s.Type == "http" || s.Type == "sse" || s.Type == "ws" }

// LSPConfig is a .lsp.json file: {"lspServers": {name: server}} or the bare
// map {name: server}.
type LSPConfig struct {
	Servers map[string]LSPServer `json:"lspServers"`
	// Failed lists the entries that cannot be used, as for MCPConfig.
	Failed []FailedComponent `json:"-"`
}

// Names returns the server names in sorted order.
func (c *LSPConfig) Names() []string { return sortedKeys(c.Servers) }

// LSPServer is one language server process.
type LSPServer struct {
	Command               string                     `json:"command"`
	Args                  []string                   `json:"args,omitempty"`
	Env                   map[string]string          `json:"env,omitempty"`
	Transport             string                     `json:"transport,omitempty"` // stdio (default) or socket
	ExtensionToLanguage   map[string]string          `json:"extensionToLanguage,omitempty"`
	InitializationOptions json.RawMessage            `json:"initializationOptions,omitempty"`
	Settings              json.RawMessage            `json:"settings,omitempty"`
	Extra                 map[string]json.RawMessage `json:"-"`
}

// ParseMCPServers parses a .mcp.json file or a manifest's inline mcpServers
// object. Errors are *Error{Type: TypeManifestParse} wrapping *SyntaxError,
// *FieldError or *SizeError.
func ParseMCPServers(data []byte, file string) (*MCPConfig, []Diagnostic, error) {
	return parseDocument(data, file, func(d *decoder, n *node) *MCPConfig { return d.mcpFile(n, "") })
}

// ParseLSPServers parses a .lsp.json file or a manifest's inline lspServers
// object, with the same errors as ParseMCPServers.
func ParseLSPServers(data []byte, file string) (*LSPConfig, []Diagnostic, error) {
	return parseDocument(data, file, func(d *decoder, n *node) *LSPConfig { return d.lspFile(n, "") })
}

func (d *decoder) mcpInline(n *node, f string) { d.mcpFile(n, f) }
func (d *decoder) lspInline(n *node, f string) { d.lspFile(n, f) }

// serverMap returns the object holding the servers: the value of wrapKey
// when present, else n itself (the bare form).
func (d *decoder) serverMap(n *node, f, wrapKey string) (*node, string) {
	if !d.object(n, f) {
		return nil, f
	}
	if inner := n.get(wrapKey); inner != nil {
		for _, m := range n.members {
			if m.key != wrapKey {
				d.unknown(m, f)
			}
		}
		wf := key(f, wrapKey)
		if !d.object(inner, wf) {
			return nil, wf
		}
		return inner, wf
	}
	return n, f
}

func (d *decoder) mcpFile(n *node, f string) *MCPConfig {
	c := &MCPConfig{Servers: map[string]MCPServer{}}
	c.Failed = d.eachServer(n, f, "mcpServers", KindMCPServer, func(m member, mf string) {
		var s MCPServer
		for _, k := range m.val.members {
			kf := key(mf, k.key)
			switch k.key {
			case "type":
				s.Type = d.str(k.val, kf)
			case "command":
				s.Command = d.str(k.val, kf)
			case "args":
				s.Args = d.strList(k.val, kf, false)
			case "env":
				s.Env = d.strMap(k.val, kf)
			case "cwd":
				s.Cwd = d.str(k.val, kf)
			case "url":
				s.URL = d.str(k.val, kf)
			case "headers":
				s.Headers = d.strMap(k.val, kf)
			case "oauth":
				// Claude Code's OAuth settings for a remote server (a
				// pre-registered clientId, callbackPort, ...): kept as
				// written for the MCP client, see MCPServer.OAuth.
				if d.object(k.val, kf) {
					s.Extra = d.keep(s.Extra, k)
				}
			default:
				d.unknown(k, mf)
				s.Extra = d.keep(s.Extra, k)
			}
		}
		// References are checked as Claude Code uses them: after
		// substitution. Only defaults resolve here; a URL that needs the
		// environment is checked when an agent loads the plugin.
		x, _ := Vars{}.ExpandMCP(s)
		if field, reason := CheckMCPServer(x); reason != "" {
			n := m.val.get(field)
			if n == nil {
				n = m.val
			}
			if field == "url" && x.URL == "" && n.kind == kindString {
				// "url": "" (a placeholder to fill in): Claude Code lists
				// the server and it fails when started; so does wharf.
				d.warnf(n, key(mf, field), "%s; the server is listed but cannot start", reason)
			} else {
				d.errorf(n, key(mf, field), "%s", reason)
			}
		} else if x.IsRemote() && len(References(x.URL)) == 0 {
			if msg, warn := checkRemoteURL(x.URL); warn {
				d.warnf(m.val.get("url"), key(mf, "url"), "%s", msg)
			}
		}
		c.Servers[m.key] = s
	})
	for _, fc := range c.Failed {
		delete(c.Servers, fc.Name)
	}
	return c
}

// checkRemoteURL accepts https:// and wss://; http:// and ws:// with a
// warning (a local server is common in development).
func checkRemoteURL(s string) (string, bool) {
	if len(s) >= 6 && (s[:6] == "wss://") {
		return "", false
	}
	if len(s) >= 5 && s[:5] == "ws://" {
		return s + " is not encrypted", true
	}
	return checkHTTPURL(s)
}

func (d *decoder) lspFile(n *node, f string) *LSPConfig {
	c := &LSPConfig{Servers: map[string]LSPServer{}}
	c.Failed = d.eachServer(n, f, "lspServers", KindLSPServer, func(m member, mf string) {
		var s LSPServer
		for _, k := range m.val.members {
			kf := key(mf, k.key)
			switch k.key {
			case "command":
				s.Command = d.str(k.val, kf)
			case "args":
				s.Args = d.strList(k.val, kf, false)
			case "env":
				s.Env = d.strMap(k.val, kf)
			case "transport":
				s.Transport = d.str(k.val, kf)
				if s.Transport != "" && s.Transport != "stdio" && s.Transport != "socket" {
					d.errorf(k.val, kf, "unknown transport %q; expected stdio or socket", s.Transport)
				}
			case "extensionToLanguage":
				s.ExtensionToLanguage = d.strMap(k.val, kf)
			case "initializationOptions":
				s.InitializationOptions = d.raw(k.val)
			case "settings":
				s.Settings = d.raw(k.val)
			default:
				d.unknown(k, mf)
				s.Extra = d.keep(s.Extra, k)
			}
		}
		if s.Command == "" {
			d.errorf(m.val, key(mf, "command"), "required field is missing")
		}
		c.Servers[m.key] = s
	})
	for _, fc := range c.Failed {
		delete(c.Servers, fc.Name)
	}
	return c
}

// eachServer calls fn for every entry of a server map (the wrapped
// {"<wrapKey>": {...}} form or the bare map). An entry that cannot be used
// (an invalid name, a value that is not an object, or an error fn reports)
// fails alone, as in Claude Code: its problems are reported as warnings and
// it is returned in the failed list; the other entries still load. Only a
// map that is not an object fails the file.
func (d *decoder) eachServer(n *node, f, wrapKey string, kind ComponentKind, fn func(m member, mf string)) []FailedComponent {
	servers, sf := d.serverMap(n, f, wrapKey)
	if servers == nil {
		return nil
	}
	var failed []FailedComponent
	what := "MCP server"
	if kind == KindLSPServer {
		what = "LSP server"
	}
	for _, m := range servers.members {
		mf := key(sf, m.key)
		d.soft, d.softMsgs = true, nil
		d.softSuffix = fmt.Sprintf(" (the %s %q cannot be used and is skipped; the rest of the plugin loads)", what, m.key)
		if err := checkServerName(m.key); err != nil {
			d.errorf(&node{off: m.keyOff}, mf, "server name: %v", err)
		} else if d.object(m.val, mf) {
			fn(m, mf)
		}
		if len(d.softMsgs) > 0 {
			failed = append(failed, FailedComponent{Kind: kind, Name: m.key, Field: mf, Reason: strings.Join(d.softMsgs, "; ")})
		}
		d.soft, d.softMsgs, d.softSuffix = false, nil, ""
	}
	return failed
}

// keep stores a key wharf does not interpret in an Extra map, so that
// nothing a manifest declares is silently dropped.
func (d *decoder) keep(x map[string]json.RawMessage, k member) map[string]json.RawMessage {
	if x == nil {
		x = map[string]json.RawMessage{}
	}
	x[k.key] = d.raw(k.val)
	return x
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkServerName accepts the server names Claude Code lists, spaces
// included ("google calendar"): a server's name only labels it, and tool
// names made from it replace every character but letters, digits, '_' and
// '-'. A name may not be empty or long, hold a control character, or hold
// ':', '/' or '\\', which would make "plugin:<plugin>:<server>" ambiguous.
func checkServerName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty")
	case len(name) > 128:
		return fmt.Errorf("longer than 128 bytes")
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("%q starts or ends with a space", name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == ':' || r == '/' || r == '\\' {
			return fmt.Errorf("%q contains %q", name, r)
		}
	}
	return nil
}
