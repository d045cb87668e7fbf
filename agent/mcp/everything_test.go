package mcp

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/internal/core/toolpin"
	"github.com/wharfhq/wharf/plugin"
)

// TestEverythingServer runs the reference server of the MCP project,
// installed beforehand at a pinned version (bash .ci/run installs it and sets
// WHARF_MCP_EVERYTHING to its launcher). The test never fetches a package:
// without the launcher it skips, and under CI a missing launcher fails.
func TestEverythingServer(t *testing.T) {
	bin := os.Getenv("WHARF_MCP_EVERYTHING")
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("WHARF_MCP_EVERYTHING is not set: bash .ci/run installs @modelcontextprotocol/server-everything and sets it")
		}
		t.Skip("WHARF_MCP_EVERYTHING is not set (bash .ci/run installs the reference MCP server and sets it)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("WHARF_MCP_EVERYTHING is set but node is not installed: %v", err)
	}
	var pins pinBox
	sup := New(Options{StartTimeout: 60 * time.Second, StopGrace: 2 * time.Second, Pins: pins.get})
	defer sup.Close()
	comp := agent.Component{Kind: plugin.KindMCPServer, Name: "plugin:everything:everything", Local: "everything",
		Plugin: plugin.MustParseID("everything@ref"), Source: agent.SourcePlugin,
		MCP: &plugin.MCPServer{Command: node, Args: []string{bin, "stdio"}}}
	undo, err := sup.Start(context.Background(), comp)
	if err != nil {
		undo()
		t.Fatalf("start %s: %v", bin, err)
	}
	st, _ := status(sup, comp.Name)
	names := strings.Join(toolNames(sup.Tools()), " ")
	if !strings.Contains(names, "mcp__plugin_everything_everything__echo") {
		t.Fatalf("tools = %s", names)
	}
	res, err := sup.CallTool(context.Background(), "mcp__plugin_everything_everything__echo", map[string]any{"message": "hello"})
	if err != nil || !strings.Contains(text(t, res), "hello") {
		t.Fatalf("echo: %v %+v", err, res)
	}
	// Its definitions hash the same at every start: pinned to what it
	// listed, a new process of it is approved.
	if !toolpin.ValidHash(st.ToolsHash) {
		t.Fatalf("tools hash %q", st.ToolsHash)
	}
	pins.set(toolpin.Pin{Plugin: "everything@ref", Server: "everything", Hash: st.ToolsHash})
	st2, err := sup.Restart(context.Background(), comp.Name)
	if err != nil || st2.State != StateRunning || st2.Drift || st2.ToolsHash != st.ToolsHash {
		t.Fatalf("restart under its own pin: %v %+v", err, st2)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if alive(st.PID) || alive(st2.PID) {
		t.Fatalf("server process %d still running after undo", st.PID)
	}
}
