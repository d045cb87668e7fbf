package protocol

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/internal/worldtest"
	"github.com/wharfhq/wharf/agent/mcp"
)

// An mcp_tool hook calls a tool of a running MCP server (the plugin's own
// server by its local name), with ${...} in its input taken from the event;
// the tool's text answers as a command hook's stdout. A server that is not
// there is a non-blocking error naming the hook.
func TestMCPToolHook(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "testserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../mcp/internal/testserver").CombinedOutput(); err != nil {
		t.Fatalf("building the test MCP server: %v\n%s", err, out)
	}
	w := worldtest.New(t)
	w.Install("db@corp", "1.0.0", map[string]string{
		".claude-plugin/plugin.json": `{"name": "db", "version": "1.0.0"}`,
		".mcp.json":                  `{"mcpServers": {"pg": {"command": "` + bin + `", "env": {"TESTSERVER_NAME": "pg"}}}}`,
		"hooks/hooks.json": `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
			{"type": "mcp_tool", "server": "pg", "tool": "echo",
			 "input": {"text": "{\"decision\":\"block\",\"reason\":\"no ${tool_input.command} in ${session_id}\"}"}},
			{"type": "mcp_tool", "server": "gone", "tool": "echo", "input": {"text": "x"}}]}]}}`,
	})
	sup := mcp.New(mcp.Options{ProjectDir: w.Project, StartTimeout: 20 * time.Second, StopGrace: time.Second})
	t.Cleanup(func() { sup.Close() })
	o := w.Options()
	o.Activator = sup.Activator(nil)
	rt := w.Runtime(o)
	w.Load(rt, agent.CacheOnly)
	b := &Runtime{Runtime: rt, Project: w.Project, MCP: sup}
	res, err := b.RunHook(context.Background(), RunHookRequest{Event: "PreToolUse",
		Input: []byte(`{"session_id":"s9","tool_name":"Bash","tool_input":{"command":"rm -rf /"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Blocked() || res.Reason != "no rm -rf / in s9" || !strings.HasSuffix(res.BlockedBy, "PreToolUse[0][0]") {
		t.Fatalf("want the mcp_tool hook to block with the echoed reason: %+v", res)
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "PreToolUse[0][1]: mcp_tool echo of gone:") {
		t.Fatalf("errors = %q", res.Errors)
	}
	// Without MCP servers, mcp_tool hooks are listed as not run.
	b2 := &Runtime{Runtime: rt, Project: w.Project}
	res, err = b2.RunHook(context.Background(), RunHookRequest{Event: "PreToolUse", Input: []byte(`{"tool_name":"Bash","tool_input":{}}`)})
	if err != nil || res.Blocked() || len(res.NotRun) != 2 || !strings.Contains(res.NotRun[0], "no MCP servers") {
		t.Fatalf("without MCP: %v %+v", err, res)
	}
}
