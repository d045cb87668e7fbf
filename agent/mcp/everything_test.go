package mcp

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/plugin"
)

// TestEverythingServer runs the reference server of the MCP project through
// npx when npx can fetch it; the arm is skipped when it cannot.
func TestEverythingServer(t *testing.T) {
	if testing.Short() {
		t.Skip("fetches a package with npx")
	}
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("npx not installed")
	}
	sup := New(Options{StartTimeout: 120 * time.Second, StopGrace: 2 * time.Second})
	defer sup.Close()
	comp := agent.Component{Kind: plugin.KindMCPServer, Name: "plugin:everything:everything", Local: "everything",
		Plugin: plugin.MustParseID("everything@ref"), Source: agent.SourcePlugin,
		MCP: &plugin.MCPServer{Command: npx, Args: []string{"-y", "@modelcontextprotocol/server-everything"}}}
	undo, err := sup.Start(context.Background(), comp)
	if err != nil {
		undo()
		t.Skipf("server-everything not available here: %v", err)
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
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if alive(st.PID) {
		t.Fatalf("npx process %d still running after undo", st.PID)
	}
}
