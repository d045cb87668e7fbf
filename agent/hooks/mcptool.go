package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/lazyre"
	"github.com/wharfhq/wharf/plugin"
)

// MCPCaller calls a tool of a running MCP server by the server's
// namespaced name (plugin:<plugin>:<server>, or the bare name of a settings
// server) and the tool's own name. It returns the tool's text content and
// whether the tool reported an error. ErrNoSuchServer (wrapped) means no
// running server has that name.
type MCPCaller interface {
	CallServerTool(ctx context.Context, server, tool string, args map[string]any) (text string, isError bool, err error)
}

// ErrNoSuchServer is an MCP server name no running server has.
var ErrNoSuchServer = errors.New("no running MCP server of that name")

// runMCPTool calls an mcp_tool hook's tool and reads its text as a command
// hook's stdout with exit code 0; a tool error or a server that is not
// there is a non-blocking error, as in Claude Code.
func (r *Runner) runMCPTool(ctx context.Context, ev Event, o *Outcome) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = r.DefaultTimeout
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	args, err := mcpArgs(o.MCPInput, ev.Raw)
	if err != nil {
		o.Error = err.Error()
		return
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	var candidates []string
	if o.Namespace != "" && !strings.HasPrefix(o.MCPServer, "plugin:") {
		candidates = append(candidates, plugin.ComponentName(plugin.KindMCPServer, o.Namespace, o.MCPServer))
	}
	candidates = append(candidates, o.MCPServer)
	var text string
	var isErr bool
	for _, srv := range candidates {
		text, isErr, err = r.MCP.CallServerTool(tctx, srv, o.MCPTool, args)
		if !errors.Is(err, ErrNoSuchServer) {
			break
		}
	}
	o.DurationMS = time.Since(start).Milliseconds()
	switch {
	case tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil:
		o.TimedOut, o.ExitCode = true, -1
		o.Error = fmt.Sprintf("mcp_tool %s of %s timed out after %s", o.MCPTool, o.MCPServer, timeout)
		return
	case err != nil:
		o.Error = fmt.Sprintf("mcp_tool %s of %s: %v", o.MCPTool, o.MCPServer, err)
		return
	}
	o.Ran = true
	if isErr {
		o.ExitCode = 1
		o.Error = fmt.Sprintf("mcp_tool %s of %s answered with an error%s", o.MCPTool, o.MCPServer, stderrNote(text))
		return
	}
	spec, _ := SpecOf(ev.Name)
	parseOutput(o, spec, []byte(text))
}

var mcpRef = lazyre.New(`\$\{([A-Za-z0-9_.\-]+)\}`)

// mcpArgs substitutes "${path}" in the string values of input (at any
// depth) with the value at that dotted path of the event: a string as is,
// anything else as JSON, a missing path as "".
func mcpArgs(input, event json.RawMessage) (map[string]any, error) {
	args := map[string]any{}
	if len(input) == 0 || string(input) == "null" {
		return args, nil
	}
	if err := json.Unmarshal(input, &args); err != nil {
		return nil, fmt.Errorf("mcp_tool input must be an object of the tool's arguments: %v", err)
	}
	var evm map[string]any
	_ = json.Unmarshal(event, &evm)
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return mcpRef.ReplaceAllStringFunc(x, func(m string) string {
				return lookupPath(evm, mcpRef.FindStringSubmatch(m)[1])
			})
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	for k, v := range args {
		args[k] = walk(v)
	}
	return args, nil
}

func lookupPath(m map[string]any, p string) string {
	var cur any = m
	for _, part := range strings.Split(p, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		if cur, ok = obj[part]; !ok {
			return ""
		}
	}
	switch v := cur.(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}
