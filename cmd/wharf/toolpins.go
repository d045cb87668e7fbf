package main

import (
	"context"

	"github.com/wharfhq/wharf/agent/mcp"
	"github.com/wharfhq/wharf/internal/client/collect"
	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/toolpin"
)

// toolPins returns the pins in force for the MCP supervisor: the policy
// engine's, read at every check so a reload's pins apply.
func toolPins(h *home.Home) func() toolpin.Set {
	return func() toolpin.Set {
		pol, err := h.Policy()
		if err != nil {
			// No policy, no session: the runtime refuses to load first.
			return toolpin.Set{}
		}
		return pol.ToolPins()
	}
}

// afterMCPLoad applies the pins in force to the servers already running
// (a reload may have pulled new ones) and records what the servers listed
// for the next inventory report.
func afterMCPLoad(ctx context.Context, io streams, h *home.Home, sup *mcp.Supervisor) {
	if err := sup.Recheck(ctx); err != nil {
		io.warnf("%v", err)
	}
	recordMCP(io, h, sup.Status())
}

// recordMCP writes what the plugin servers listed (hash, definitions, pin,
// drift) to the home, where wharf inventory report reads it.
func recordMCP(io streams, h *home.Home, sts []mcp.Status) {
	if h.Paths().Home() == "" || h.ReadOnly() {
		return
	}
	var out []inventory.MCPServer
	budget := inventory.MaxToolDefinitionsIn
	for _, st := range sts {
		if st.Plugin == "" || st.ToolsHash == "" {
			continue
		}
		m := inventory.MCPServer{Plugin: st.Plugin, Server: st.Name, ToolsHash: st.ToolsHash}
		// The definitions go along while they fit; past the bounds the
		// hash alone is reported.
		if ts := inventory.ToolsOf(st.Definitions); st.Definitions != nil && inventory.FitTools(ts) && inventory.DefinitionBytes(ts) <= budget {
			m.Tools = ts
			budget -= inventory.DefinitionBytes(ts)
		}
		if st.Drift {
			m.Drift, m.Pinned = true, st.Pinned
		}
		out = append(out, m)
	}
	if err := collect.WriteMCP(h.Paths().MCPTools(), out); err != nil {
		io.warnf("MCP tool definitions not recorded for the inventory: %v", err)
	}
}

// reportedMCP is what the last agent session recorded, for a report.
func reportedMCP(io streams, paths layout.Paths) []inventory.MCPServer {
	ms, err := collect.ReadMCP(paths.MCPTools())
	if err != nil {
		io.warnf("%v", err)
		return nil
	}
	return ms
}
