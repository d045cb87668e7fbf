// Package inventory is what a client reports about the plugins installed on
// its machine, and what the server keeps of those reports: one current
// inventory per machine, queried by plugin ("who has X") without scanning
// the fleet.
package inventory

import "time"

// Client kinds.
const (
	KindWharf      = "wharf"       // the wharf CLI
	KindWharfAgent = "wharf-agent" // an agent embedding or driving wharf's runtime
	KindClaudeCode = "claude-code" // an unmodified Claude Code, read by wharf inventory report --from claude
	KindCopilot    = "copilot"     // an unmodified GitHub Copilot CLI, read by wharf inventory report --from copilot
	KindCodex      = "codex"       // an unmodified OpenAI Codex, read by wharf inventory report --from codex
	KindGemini     = "gemini"      // an unmodified Gemini CLI, read by wharf inventory report --from gemini
	KindOpenCode   = "opencode"    // an unmodified OpenCode
)

// How a plugin got onto the machine.
const (
	InstallUser       = "user"
	InstallDependency = "dependency"
	InstallManaged    = "managed" // forced on by managed policy
	InstallSideloaded = "sideloaded"
)

// A plugin's state at the client's last load.
const (
	StateActive   = "active"
	StateDisabled = "disabled"
	StateDemoted  = "demoted"
	StateFailed   = "failed"
	StateRevoked  = "revoked"
)

// Limits on one report, checked by the server before anything is stored.
const (
	MaxReportBytes = 1 << 20
	MaxPlugins     = 2000
)

// A Report is one machine's whole current inventory; it replaces the
// previous one. It is sent as JSON to PUT /v1/inventory/machines/{id}.
type Report struct {
	Machine Machine  `json:"machine"`
	Client  Client   `json:"client"`
	Plugins []Plugin `json:"plugins"`
	// MCPServers are the plugin MCP servers whose tool definitions the
	// client last listed, with the pin they were checked against.
	MCPServers []MCPServer `json:"mcpServers,omitempty"`
	Created    time.Time   `json:"created"` // when the client built it
}

// MaxMCPServers bounds a report's mcpServers.
const MaxMCPServers = 2000

// MCPServer is what a client observed of one plugin MCP server's tool
// definitions (package toolpin).
type MCPServer struct {
	Plugin    string `json:"plugin"`    // name@marketplace
	Server    string `json:"server"`    // its name in the plugin's .mcp.json
	ToolsHash string `json:"toolsHash"` // toolpin.Hash of what it listed
	// Pinned is the pin the definitions differ from, when Drift.
	Pinned string `json:"pinned,omitempty"`
	// Drift: the definitions differ from a pin; the server exposed no
	// tools ("tool definitions changed since approval").
	Drift bool `json:"drift,omitempty"`
}

// Machine identifies the reporting machine. ID is random, created once per
// home ("m-" and 32 lowercase hex digits) and kept; the rest are labels.
type Machine struct {
	ID       string `json:"id"`
	Hostname string `json:"hostname,omitempty"`
	User     string `json:"user,omitempty"`
	OS       string `json:"os,omitempty"` // GOOS/GOARCH
}

// Client is the program that reported.
type Client struct {
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

// Plugin is one installed plugin as the client sees it.
type Plugin struct {
	ID      string `json:"id"` // name@marketplace
	Version string `json:"version"`
	Digest  string `json:"digest"` // w1: digest of the tree as installed
	Scope   string `json:"scope"`  // user, project, local, managed
	Install string `json:"install"`
	Enabled bool   `json:"enabled"`
	State   string `json:"state"`
	Reason  string `json:"reason,omitempty"` // why demoted, failed or revoked
}
