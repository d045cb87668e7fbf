package web

import "strconv"

// CapabilitiesView is a plugin version's capability set and content
// findings, as the plugin page shows them (package capability computes
// them from the tree; docs/capabilities.md).
type CapabilitiesView struct {
	Hooks       []HookRow
	MCPServers  []ServerRow
	LSPServers  []ServerRow
	Executables []ExecutableRow
	// Tools lists the commands, skills and agents that may use tools
	// without asking (allowed-tools; an agent's tools).
	Tools           []ToolsRow
	SensitiveConfig []string
	// Declares is set when plugin.json declares network.hosts
	// (DeclaredHosts, possibly empty).
	Declares      bool
	DeclaredHosts []string
	Hosts         []HostRow
	Findings      []FindingRow
	Digest        string
}

// Empty reports a set with nothing in it.
func (v *CapabilitiesView) Empty() bool {
	return len(v.Hooks)+len(v.MCPServers)+len(v.LSPServers)+len(v.Executables)+len(v.Tools)+len(v.SensitiveConfig)+len(v.Hosts) == 0
}

// HookRow is one hook action.
type HookRow struct {
	Event, Matcher, Type, Command, Interpreter, Source string
	Runs, NetworkTools, Fetches                        []string
	DownloadAndRun                                     bool
}

// ServerRow is one MCP or LSP server: what it runs (Command with its
// arguments) or where it connects (URL, Host), and the packages it
// fetches each time it starts.
type ServerRow struct {
	Name, Transport, Command, URL, Host, Source string
	Fetches, Runs                               []string
}

// ExecutableRow is a file the plugin ships that can run, and why it counts.
type ExecutableRow struct {
	Path string
	Why  []string
}

// ToolsRow is a command, skill or agent and the tools it may use.
type ToolsRow struct {
	Kind, Name, Path string
	Tools            []string
}

// HostRow is a host the hooks and servers reach.
type HostRow struct {
	Host     string
	Declared bool
	From     []string
}

// FindingRow is one content finding.
type FindingRow struct {
	Kind, File, Message string
	Line                int
}

// Where is "file:line" (the file alone when no line applies).
func (f FindingRow) Where() string {
	if f.Line > 0 {
		return f.File + ":" + strconv.Itoa(f.Line)
	}
	return f.File
}
