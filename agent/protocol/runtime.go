package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/hooks"
	"github.com/wharfhq/wharf/agent/mcp"
)

// Runtime is the Backend over a live agent.Runtime.
type Runtime struct {
	// Runtime holds the current set; required. Load it before serving (the
	// startup load) or let a client's reload do it.
	Runtime *agent.Runtime
	// Project is CLAUDE_PROJECT_DIR for hooks.
	Project string
	// Hooks runs hooks (a zero Runner when nil).
	Hooks *hooks.Runner
	// MCP is the supervisor that the Runtime's Activator starts servers
	// with; nil when MCP servers are not started.
	MCP *mcp.Supervisor

	hooksOnce sync.Once
}

// ErrNotLoaded: a request that needs the set before any load succeeded.
var ErrNotLoaded = errors.New("no plugin set is loaded yet; send a reload request first")

func (b *Runtime) set() (*agent.Set, error) {
	s := b.Runtime.Current()
	if s == nil {
		return nil, ErrNotLoaded
	}
	return s, nil
}

// Mode is the loader of the current set.
func (b *Runtime) Mode() string {
	if s := b.Runtime.Current(); s != nil {
		return s.Mode().String()
	}
	return ""
}

func componentOf(c agent.Component) Component {
	out := Component{Kind: string(c.Kind), Name: c.Name, Source: c.Source, Path: c.Path, Description: c.Description}
	if !c.Plugin.IsZero() {
		out.Plugin = c.Plugin.String()
	}
	return out
}

// ListComponents lists the current set's components.
func (b *Runtime) ListComponents(ctx context.Context, req ListComponentsRequest) (*ListComponentsResponse, error) {
	s, err := b.set()
	if err != nil {
		return nil, err
	}
	out := &ListComponentsResponse{Mode: s.Mode().String(), Components: []Component{}}
	for _, c := range s.Components() {
		if req.Kind != "" && string(c.Kind) != req.Kind {
			continue
		}
		if req.Plugin != "" && (c.Plugin.IsZero() || c.Plugin.String() != req.Plugin) {
			continue
		}
		out.Components = append(out.Components, componentOf(c))
	}
	return out, nil
}

// Status reports every plugin's state.
func (b *Runtime) Status(ctx context.Context, _ StatusRequest) (*StatusResponse, error) {
	s, err := b.set()
	if err != nil {
		return nil, err
	}
	out := &StatusResponse{Mode: s.Mode().String(), PolicyVersion: s.PolicyVersion(), SettingsHash: s.SettingsHash(),
		Plugins: s.Plugins(), Skipped: []Skipped{}, Warnings: s.Warnings(), MCPServers: []mcp.Status{}}
	if pt := s.ProjectTrust(); pt.Folder != "" {
		out.Project = &pt
	}
	if out.Plugins == nil {
		out.Plugins = []agent.PluginStatus{}
	}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	for _, sk := range s.Skipped() {
		out.Skipped = append(out.Skipped, Skipped{Component: componentOf(sk.Component), Error: sk.Err.Error()})
	}
	if b.MCP != nil {
		out.MCPServers = append(out.MCPServers, b.MCP.Status()...)
	}
	return out, nil
}

// Reload loads the set again and reports what changed.
func (b *Runtime) Reload(ctx context.Context, req ReloadRequest) (*ReloadResponse, error) {
	mode := agent.CacheOnly
	switch req.Mode {
	case "", agent.CacheOnly.String():
	case agent.Full.String():
		mode = agent.Full
	default:
		return nil, fmt.Errorf("reload mode %q: use %q or %q", req.Mode, agent.CacheOnly, agent.Full)
	}
	before := map[string]bool{}
	if old := b.Runtime.Current(); old != nil {
		for _, c := range old.Components() {
			before[string(c.Kind)+" "+c.Name] = true
		}
	}
	s, err := b.Runtime.Load(ctx, mode)
	if err != nil {
		return nil, err
	}
	out := &ReloadResponse{Mode: s.Mode().String(), Added: []string{}, Removed: []string{}, Warnings: s.Warnings()}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	after := map[string]bool{}
	for _, c := range s.Components() {
		k := string(c.Kind) + " " + c.Name
		after[k] = true
		out.Components++
		if !before[k] {
			out.Added = append(out.Added, k)
		}
	}
	for k := range before {
		if !after[k] {
			out.Removed = append(out.Removed, k)
		}
	}
	sort.Strings(out.Added)
	sort.Strings(out.Removed)
	return out, nil
}

// TrustFolder trusts or forgets a project folder in the runtime's home.
func (b *Runtime) TrustFolder(ctx context.Context, req TrustFolderRequest) (*TrustFolderResponse, error) {
	dir := req.Path
	if dir == "" {
		dir = b.Runtime.Project()
	}
	if dir == "" {
		return nil, errors.New("trust_folder: the session has no project folder; pass path")
	}
	home := b.Runtime.Home()
	if req.Revoke {
		p, err := agent.CanonicalFolder(dir)
		if err != nil {
			return nil, err
		}
		found, err := agent.UntrustFolder(ctx, home, dir)
		if err != nil {
			return nil, err
		}
		return &TrustFolderResponse{Folder: p, Removed: found, Reload: found}, nil
	}
	p, err := agent.TrustFolder(ctx, home, dir)
	if err != nil {
		return nil, err
	}
	reload := true
	if s := b.Runtime.Current(); s != nil && s.ProjectTrust().Trusted {
		reload = false
	}
	return &TrustFolderResponse{Folder: p, Trusted: true, Reload: reload}, nil
}

// RunHook runs the current set's hooks for one event.
func (b *Runtime) RunHook(ctx context.Context, req RunHookRequest) (*hooks.Result, error) {
	ev, err := hooks.ParseEvent(req.Event, req.Input)
	if err != nil {
		return nil, err
	}
	s, err := b.set()
	if err != nil {
		return nil, err
	}
	cmds := hooks.FromSet(s, ev.Name, b.Project)
	b.hooksOnce.Do(func() {
		if b.Hooks == nil {
			b.Hooks = &hooks.Runner{}
		}
		if b.Hooks.MCP == nil && b.MCP != nil {
			b.Hooks.MCP = MCPCaller{b.MCP}
		}
	})
	return b.Hooks.Run(ctx, ev, cmds), nil
}

// MCPCaller lets mcp_tool hooks call the tools of a Supervisor's servers.
type MCPCaller struct{ Sup *mcp.Supervisor }

// CallServerTool implements hooks.MCPCaller.
func (c MCPCaller) CallServerTool(ctx context.Context, server, tool string, args map[string]any) (string, bool, error) {
	res, err := c.Sup.CallServerTool(ctx, server, tool, args)
	if errors.Is(err, mcp.ErrUnknownServer) {
		return "", false, fmt.Errorf("%w: %s", hooks.ErrNoSuchServer, server)
	}
	if err != nil {
		return "", false, err
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError, nil
}

// PolicyCheck asks the session's policy (Runtime.CheckPolicy): the
// machine's managed layers and the policy the Runtime was opened with.
func (b *Runtime) PolicyCheck(ctx context.Context, req PolicyCheckRequest) (*PolicyCheckResponse, error) {
	raw, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	d, err := b.Runtime.CheckPolicy(ctx, raw)
	if err != nil {
		return nil, err
	}
	return &PolicyCheckResponse{PolicyDecision: d}, nil
}

// MCPListTools lists the running servers' tools.
func (b *Runtime) MCPListTools(ctx context.Context, req MCPListToolsRequest) (*MCPListToolsResponse, error) {
	out := &MCPListToolsResponse{Tools: []mcp.Tool{}, Servers: []mcp.Status{}}
	if b.MCP == nil {
		return out, nil
	}
	for _, t := range b.MCP.Tools() {
		if req.Server == "" || t.Server == req.Server {
			out.Tools = append(out.Tools, t)
		}
	}
	for _, st := range b.MCP.Status() {
		if req.Server == "" || st.Server == req.Server {
			out.Servers = append(out.Servers, st)
		}
	}
	return out, nil
}

// errNoMCP answers MCP requests in a session that starts no MCP servers.
var errNoMCP = errors.New("this session starts no MCP servers (wharf agent serve --no-mcp); restart it without --no-mcp")

// MCPCallTool calls a tool of a running server.
func (b *Runtime) MCPCallTool(ctx context.Context, req MCPCallToolRequest) (*MCPCallToolResponse, error) {
	if b.MCP == nil {
		return nil, errNoMCP
	}
	if req.Name == "" {
		return nil, errors.New("name: the tool's namespaced name is required (see mcp_list_tools)")
	}
	var args map[string]any
	if t := bytes.TrimSpace(req.Arguments); len(t) > 0 && string(t) != "null" {
		if t[0] != '{' {
			return nil, errors.New("arguments: must be a JSON object")
		}
		if err := json.Unmarshal(t, &args); err != nil {
			return nil, fmt.Errorf("arguments: %v", err)
		}
	}
	res, err := b.MCP.CallTool(ctx, req.Name, args)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("the result of %s: %w", req.Name, err)
	}
	out := &MCPCallToolResponse{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("the result of %s: %w", req.Name, err)
	}
	if out.Content == nil {
		out.Content = []json.RawMessage{}
	}
	return out, nil
}

// MCPRestart restarts one server.
func (b *Runtime) MCPRestart(ctx context.Context, req MCPRestartRequest) (*MCPRestartResponse, error) {
	if b.MCP == nil {
		return nil, errNoMCP
	}
	if req.Server == "" {
		return nil, errors.New("server: the server's namespaced name is required (plugin:<plugin>:<server>, see status)")
	}
	st, err := b.MCP.Restart(ctx, req.Server)
	if err != nil {
		return nil, err
	}
	return &MCPRestartResponse{Server: st}, nil
}
