// Package inventory is what a client reports about the plugins installed on
// its machine, and what the server keeps of those reports: one current
// inventory per machine, queried by plugin ("who has X") without scanning
// the fleet.
package inventory

import (
	"encoding/json"
	"time"

	"github.com/wharfhq/wharf/internal/core/toolpin"
)

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
	// Tools are the definitions ToolsHash is the hash of, so that an
	// administrator can read what is approved and what changed; absent
	// when they exceed the bounds below (the hash alone is reported).
	Tools []Tool `json:"tools,omitempty"`
}

// Tool is one tool definition as a server listed it.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// Bounds on the tool definitions a report carries.
const (
	MaxToolsPerServer    = 256       // tools of one server
	MaxToolNameBytes     = 128       // a tool's name
	MaxToolDescription   = 8 << 10   // bytes of a tool's description
	MaxToolSchemaBytes   = 32 << 10  // bytes of a tool's input schema
	MaxToolDefinitionsIn = 512 << 10 // bytes of every server's definitions in one report
)

// ToolDefinitions are ts as package toolpin hashes them.
func ToolDefinitions(ts []Tool) []toolpin.Tool {
	out := make([]toolpin.Tool, len(ts))
	for i, t := range ts {
		out[i] = toolpin.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	return out
}

// ToolsOf is defs as a report carries them.
func ToolsOf(defs []toolpin.Tool) []Tool {
	out := make([]Tool, len(defs))
	for i, d := range defs {
		out[i] = Tool{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema}
	}
	return out
}

// DefinitionBytes is what ts count against MaxToolDefinitionsIn.
func DefinitionBytes(ts []Tool) int {
	n := 0
	for _, t := range ts {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return n
}

// FitTools reports whether ts may be carried in a report: within the
// bounds on one server's definitions (MaxToolsPerServer and the bounds of
// each tool). A client reports the hash alone for a server whose
// definitions do not fit.
func FitTools(ts []Tool) bool {
	if len(ts) > MaxToolsPerServer {
		return false
	}
	for _, t := range ts {
		if len(t.Name) > MaxToolNameBytes || len(t.Description) > MaxToolDescription || len(t.InputSchema) > MaxToolSchemaBytes {
			return false
		}
	}
	return true
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
