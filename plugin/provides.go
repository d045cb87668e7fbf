package plugin

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Provides is what a plugin adds to a session, as `claude plugin validate`
// prints it: each hook with its event, matcher, type and command (or
// prompt, or URL), each MCP and LSP server with what it runs or reaches,
// and the skills, commands, agents and output styles by the names a
// session gives them. Hosts says which hosts the plugin names and which of
// its parts run processes whose hosts cannot be read.
type Provides struct {
	Plugin       string           `json:"plugin"`
	Hooks        []ProvidedHook   `json:"hooks"`
	MCPServers   []ProvidedServer `json:"mcpServers"`
	LSPServers   []ProvidedServer `json:"lspServers"`
	Skills       []string         `json:"skills"`
	Commands     []string         `json:"commands"`
	Agents       []string         `json:"agents"`
	OutputStyles []string         `json:"outputStyles"`
	Hosts        Hosts            `json:"hosts"`
}

// ProvidedHook is one hook action.
type ProvidedHook struct {
	Event   string `json:"event"`
	Matcher string `json:"matcher,omitempty"`
	Type    string `json:"type"`
	Command string `json:"command,omitempty"`
	Prompt  string `json:"prompt,omitempty"`
	URL     string `json:"url,omitempty"`
}

// ProvidedServer is one MCP or LSP server: Target is the command it runs
// or the URL it reaches.
type ProvidedServer struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Target string   `json:"target"`
	Args   []string `json:"args,omitempty"`
}

// Hosts is the network picture of a plugin. Declared is plugin.json's
// network.hosts (nil when the plugin declares none); Named lists every host
// the plugin declares or whose URL it carries (remote MCP servers, HTTP
// hooks), each marked declared or not; Unread lists the parts that run a
// process (command hooks, stdio MCP servers, LSP servers, skills and
// commands) whose hosts cannot be read from the plugin's files.
type Hosts struct {
	Declared []string     `json:"declared"`
	Named    []NamedHost  `json:"named"`
	Unread   []UnreadPart `json:"unread"`
}

// NamedHost is a host and where the plugin names it.
type NamedHost struct {
	Host     string       `json:"host"`
	Declared bool         `json:"declared"`
	Sources  []HostSource `json:"sources"`
}

// HostSource is one place a host is named: "declared" (network.hosts),
// "mcp" (Name is the server) or "hook" (Event is the hook's event).
type HostSource struct {
	Type  string `json:"type"`
	Name  string `json:"name,omitempty"`
	Event string `json:"event,omitempty"`
}

// UnreadPart is a part whose hosts cannot be read, and why ("process").
type UnreadPart struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Undeclared returns the named hosts network.hosts does not list.
func (h Hosts) Undeclared() []string {
	var out []string
	for _, n := range h.Named {
		if !n.Declared {
			out = append(out, n.Host)
		}
	}
	return out
}

// Provides lists what p adds to a session. Hook and server files that do
// not parse are left out (validate reports them).
func (p *Plugin) Provides() Provides {
	ns := p.Namespace()
	out := Provides{Plugin: ns, Hooks: []ProvidedHook{}, MCPServers: []ProvidedServer{}, LSPServers: []ProvidedServer{},
		Skills: []string{}, Commands: []string{}, Agents: []string{}, OutputStyles: []string{},
		Hosts: Hosts{Named: []NamedHost{}, Unread: []UnreadPart{}}}
	named := map[string]*NamedHost{}
	name := func(host string, src HostSource) {
		n := named[host]
		if n == nil {
			n = &NamedHost{Host: host}
			named[host] = n
		}
		if src.Type == "declared" {
			n.Declared = true
		}
		n.Sources = append(n.Sources, src)
	}
	if p.Manifest.Network != nil {
		out.Hosts.Declared = p.Manifest.Network.Hosts
		for _, h := range p.Manifest.Network.Hosts {
			name(h, HostSource{Type: "declared"})
		}
	}
	unread := map[string]bool{}
	addUnread := func(kind, n string) {
		if !unread[kind+"\x00"+n] {
			unread[kind+"\x00"+n] = true
			out.Hosts.Unread = append(out.Hosts.Unread, UnreadPart{Kind: kind, Name: n, Reason: "process"})
		}
	}
	seen := map[string]bool{}
	for _, c := range p.Components {
		switch c.Kind {
		case KindSkill:
			out.Skills = append(out.Skills, ns+":"+c.Name)
			addUnread("skills", ns+":"+c.Name)
		case KindCommand:
			out.Commands = append(out.Commands, ns+":"+c.Name)
			addUnread("commands", ns+":"+c.Name)
		case KindAgent:
			out.Agents = append(out.Agents, ns+":"+c.Name)
		case KindOutputStyle:
			out.OutputStyles = append(out.OutputStyles, ns+":"+c.Name)
		case KindHook, KindMCPServer, KindLSPServer:
			k := string(c.Kind) + "\x00" + c.Path
			if seen[k] {
				continue
			}
			seen[k] = true
			switch cfg := p.config(c).(type) {
			case *HooksConfig:
				for _, ev := range hookEventOrder(cfg) {
					for _, m := range cfg.Hooks[ev] {
						for _, h := range m.Hooks {
							ph := ProvidedHook{Event: string(ev), Matcher: m.Matcher, Type: h.Type, Command: h.Command, Prompt: h.Prompt}
							if h.Type == "http" {
								ph.URL = rawString(h.Extra["url"])
								if host := urlHost(ph.URL); host != "" {
									name(host, HostSource{Type: "hook", Event: string(ev)})
								}
							}
							if h.Type == "command" || h.Type == "" {
								addUnread("hooks", string(ev))
							}
							out.Hooks = append(out.Hooks, ph)
						}
					}
				}
			case *MCPConfig:
				for _, n := range cfg.Names() {
					s := cfg.Servers[n]
					ps := ProvidedServer{Name: n, Type: s.Type, Target: s.Command, Args: s.Args}
					if s.IsRemote() {
						ps.Target, ps.Args = s.URL, nil
						if host := urlHost(s.URL); host != "" {
							name(host, HostSource{Type: "mcp", Name: n})
						}
					} else {
						if ps.Type == "" {
							ps.Type = "stdio"
						}
						addUnread("mcpServers", n)
					}
					out.MCPServers = append(out.MCPServers, ps)
				}
			case *LSPConfig:
				for _, n := range cfg.Names() {
					s := cfg.Servers[n]
					out.LSPServers = append(out.LSPServers, ProvidedServer{Name: n, Type: "stdio", Target: s.Command, Args: s.Args})
					addUnread("lspServers", n)
				}
			}
		}
	}
	for _, n := range named {
		out.Hosts.Named = append(out.Hosts.Named, *n)
	}
	sort.Slice(out.Hosts.Named, func(i, j int) bool { return out.Hosts.Named[i].Host < out.Hosts.Named[j].Host })
	return out
}

// Config parses the file or inline object that defines a hook, MCP or LSP
// component: a *HooksConfig, *MCPConfig or *LSPConfig, or nil when it
// cannot be read (validate reports why).
func (p *Plugin) Config(c Component) any { return p.config(c) }

// config is Config.
func (p *Plugin) config(c Component) any {
	var data []byte
	file := c.Path
	if c.Path == "" || c.Path == manifestRel {
		switch c.Kind {
		case KindHook:
			data = p.Manifest.Hooks.Inline
		case KindMCPServer:
			data = p.Manifest.MCPServers.Inline
		case KindLSPServer:
			data = p.Manifest.LSPServers.Inline
		}
		if file == "" {
			file = "marketplace entry"
		}
	} else {
		file = filepath.Join(p.Root, filepath.FromSlash(c.Path))
		b, err := readManifestFile(file)
		if err != nil {
			return nil
		}
		data = b
	}
	if data == nil {
		return nil
	}
	switch c.Kind {
	case KindHook:
		if h, _, err := ParseHooks(data, file); err == nil {
			return h
		}
	case KindMCPServer:
		if m, _, err := ParseMCPServers(data, file); err == nil {
			return m
		}
	case KindLSPServer:
		if l, _, err := ParseLSPServers(data, file); err == nil {
			return l
		}
	}
	return nil
}

// hookEventOrder is cfg's events, known ones in Claude Code's order, then
// the rest sorted.
func hookEventOrder(cfg *HooksConfig) []HookEvent {
	var out []HookEvent
	for _, ev := range HookEvents {
		if len(cfg.Hooks[ev]) > 0 {
			out = append(out, ev)
		}
	}
	var unknown []string
	for ev := range cfg.Hooks {
		if !ev.IsKnown() {
			unknown = append(unknown, string(ev))
		}
	}
	sort.Strings(unknown)
	for _, ev := range unknown {
		out = append(out, HookEvent(ev))
	}
	return out
}

// urlHost is the host of an http(s)/ws(s) URL, lower-cased, with the port
// when it is not the scheme's default; "" for anything else (a URL built
// from a variable cannot be read).
func urlHost(raw string) string {
	if strings.Contains(raw, "${") {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	def := map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443"}[strings.ToLower(u.Scheme)]
	if port != "" && port != def {
		return net.JoinHostPort(host, port)
	}
	return host
}

// rawString is a JSON string value, or "".
func rawString(raw []byte) string {
	n, _, err := openDocument(raw, "")
	if err != nil || n.kind != kindString {
		return ""
	}
	return n.str
}

// fileExists reports a regular file (following symlinks).
func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
