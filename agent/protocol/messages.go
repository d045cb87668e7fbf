package protocol

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/hooks"
	"github.com/wharfhq/wharf/agent/mcp"
)

// Version is the protocol version this package speaks; initialize returns
// it. It changes only when a change would break an existing client.
const Version = 1

// Message types on the wire.
const (
	TypeControlRequest       = "control_request"
	TypeControlResponse      = "control_response"
	TypeControlCancelRequest = "control_cancel_request"
)

// Response subtypes.
const (
	SubtypeSuccess = "success"
	SubtypeError   = "error"
)

// ControlRequest is one request line: {"type":"control_request",
// "request_id":"r1","request":{"subtype":"status",...}}.
type ControlRequest struct {
	Type      string `json:"type" doc:"always control_request"`
	RequestID string `json:"request_id" doc:"chosen by the client; echoed in the response; must not equal the id of a request still in flight"`
	Request   any    `json:"request" doc:"the request object: subtype plus the subtype's fields"`
}

// CancelRequest asks the server to stop an in-flight request; that request
// is then answered with an error. The cancel itself gets no response.
type CancelRequest struct {
	Type      string `json:"type" doc:"always control_cancel_request"`
	RequestID string `json:"request_id" doc:"the id of the request to cancel"`
}

// ControlResponse is one response line.
type ControlResponse struct {
	Type     string       `json:"type" doc:"always control_response"`
	Response ResponseBody `json:"response"`
}

// ResponseBody is a success (with Response) or an error (with Error).
type ResponseBody struct {
	Subtype string `json:"subtype" doc:"success or error"`
	// RequestID is nil only when the line could not be parsed far enough to
	// find one.
	RequestID *string `json:"request_id" doc:"the id of the request answered; null when the line was not parseable"`
	Response  any     `json:"response,omitempty" doc:"the subtype's response object (success only)"`
	Error     string  `json:"error,omitempty" doc:"what went wrong and what to do (error only)"`
}

// Implementation names a client or server.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// InitializeRequest opens a session. It is optional: every other request
// works without it.
type InitializeRequest struct {
	ProtocolVersion int             `json:"protocolVersion,omitempty" doc:"the protocol version the client speaks (default: this server's)"`
	Client          *Implementation `json:"client,omitempty"`
}

// InitializeResponse says what the server speaks.
type InitializeResponse struct {
	ProtocolVersion int            `json:"protocolVersion"`
	Server          Implementation `json:"server"`
	Subtypes        []string       `json:"subtypes" doc:"the request subtypes this server answers"`
	MaxLineBytes    int            `json:"maxLineBytes" doc:"longer request lines are refused"`
	Mode            string         `json:"mode,omitempty" doc:"the loader of the current set (cache-only or full); empty before the first load"`
}

// ListComponentsRequest filters the live components; empty fields match all.
type ListComponentsRequest struct {
	Kind   string `json:"kind,omitempty" doc:"command, skill, agent, hook, mcp-server, lsp-server or output-style"`
	Plugin string `json:"plugin,omitempty" doc:"only this plugin's components (name@marketplace)"`
}

// Component is one live component, as `wharf agent components --json`
// prints it.
type Component struct {
	Kind        string `json:"kind"`
	Name        string `json:"name" doc:"the namespaced name the agent registers"`
	Plugin      string `json:"plugin,omitempty"`
	Source      string `json:"source" doc:"plugin, builtin, user, project or managed"`
	Path        string `json:"path,omitempty"`
	Description string `json:"description,omitempty"`
}

// ListComponentsResponse lists the live components of the current set.
type ListComponentsResponse struct {
	Mode       string      `json:"mode"`
	Components []Component `json:"components"`
}

// StatusRequest has no fields.
type StatusRequest struct{}

// Skipped is a component that was found but not loaded.
type Skipped struct {
	Component
	Error string `json:"error"`
}

// StatusResponse is every plugin's state, as `wharf agent status --json`,
// plus the MCP servers' states.
type StatusResponse struct {
	Mode          string               `json:"mode"`
	Project       *agent.FolderTrust   `json:"project,omitempty" doc:"the project folder's trust: hooks and servers from it load only when trusted"`
	PolicyVersion string               `json:"policyVersion,omitempty"`
	SettingsHash  string               `json:"settingsHash,omitempty"`
	Plugins       []agent.PluginStatus `json:"plugins"`
	Skipped       []Skipped            `json:"skipped"`
	Warnings      []string             `json:"warnings"`
	MCPServers    []mcp.Status         `json:"mcpServers"`
}

// ReloadRequest reloads the set from the settings, registry and cache as
// they are now.
type ReloadRequest struct {
	Mode string `json:"mode,omitempty" doc:"cache-only (default) or full (re-hash every plugin)"`
}

// ReloadResponse says what changed.
type ReloadResponse struct {
	Mode       string   `json:"mode"`
	Components int      `json:"components" doc:"live components after the reload"`
	Added      []string `json:"added" doc:"kind and name of each component that is new"`
	Removed    []string `json:"removed" doc:"kind and name of each component that is gone"`
	Warnings   []string `json:"warnings"`
}

// RunHookRequest runs the hooks of the current set for one event.
type RunHookRequest struct {
	Event string          `json:"event" doc:"any hook event Claude Code documents: PreToolUse, PostToolUse, PostToolUseFailure, PostToolBatch, PermissionRequest, PermissionDenied, Notification, UserPromptSubmit, UserPromptExpansion, Stop, StopFailure, SubagentStart, SubagentStop, PreCompact, PostCompact, SessionStart, SessionEnd, Setup, TaskCreated, TaskCompleted, TeammateIdle, Elicitation, ElicitationResult, ConfigChange, InstructionsLoaded, CwdChanged, FileChanged, WorktreeCreate or WorktreeRemove"`
	Input json.RawMessage `json:"input,omitempty" doc:"the event object the hooks get on stdin (or as an http hook's body); the event's matcher field (tool_name, source, trigger, agent_type...) selects matchers"`
}

// TrustFolderRequest trusts (or forgets) a project folder.
type TrustFolderRequest struct {
	Path   string `json:"path,omitempty" doc:"the folder (default: the session's project folder)"`
	Revoke bool   `json:"revoke,omitempty" doc:"forget the folder's trust instead"`
}

// TrustFolderResponse says what is remembered now.
type TrustFolderResponse struct {
	Folder  string `json:"folder" doc:"the canonical path (absolute, symlinks resolved) trust is remembered under"`
	Trusted bool   `json:"trusted" doc:"the folder itself is remembered as trusted"`
	Removed bool   `json:"removed,omitempty" doc:"revoke: the folder was trusted itself and is no longer"`
	Reload  bool   `json:"reloadNeeded" doc:"the current set does not reflect the change yet: send a reload"`
}

// PolicyCheckRequest asks policy one question. Its fields are those of
// `wharf policy eval --input`.
type PolicyCheckRequest struct {
	Action        string        `json:"action" doc:"add_marketplace, update_marketplace, install, enable, disable, uninstall, load, load_component, run_hook, sideload or cross_dependency"`
	Plugin        string        `json:"plugin,omitempty" doc:"name@marketplace"`
	Marketplace   *PolicyMarket `json:"marketplace,omitempty"`
	RequiredBy    string        `json:"requiredBy,omitempty"`
	DeclaredCross []string      `json:"declaredCross,omitempty"`
	Signatures    []string      `json:"signatures,omitempty"`
	Surface       string        `json:"surface,omitempty"`
	From          string        `json:"from,omitempty"`
	Path          string        `json:"path,omitempty"`
}

// PolicyMarket names a marketplace and, when known, its source object.
type PolicyMarket struct {
	Name   string          `json:"name"`
	Source json.RawMessage `json:"source,omitempty" doc:"a marketplace source object, as in extraKnownMarketplaces"`
}

// PolicyCheckResponse is policy's decision.
type PolicyCheckResponse struct {
	agent.PolicyDecision
}

// MCPListToolsRequest lists the tools of the running MCP servers.
type MCPListToolsRequest struct {
	Server string `json:"server,omitempty" doc:"only this server (plugin:<plugin>:<server>)"`
}

// MCPListToolsResponse lists tools and every server's state.
type MCPListToolsResponse struct {
	Tools   []mcp.Tool   `json:"tools"`
	Servers []mcp.Status `json:"servers"`
}

// MCPCallToolRequest calls one tool of a running MCP server.
type MCPCallToolRequest struct {
	Name      string          `json:"name" doc:"the tool's namespaced name, mcp__plugin_<plugin>_<server>__<tool>"`
	Arguments json.RawMessage `json:"arguments,omitempty" doc:"the tool's arguments, a JSON object"`
}

// MCPCallToolResponse is the tool's result as its MCP server sent it.
type MCPCallToolResponse struct {
	Content           []json.RawMessage `json:"content" doc:"MCP content blocks: text, image, audio, resource links, embedded resources"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty" doc:"the tool's structured result, when it has one"`
	IsError           bool              `json:"isError,omitempty" doc:"the tool reported an error (the call itself succeeded)"`
}

// MCPRestartRequest restarts one MCP server.
type MCPRestartRequest struct {
	Server string `json:"server" doc:"the server's namespaced name, plugin:<plugin>:<server>"`
}

// MCPRestartResponse is the server's state after the restart.
type MCPRestartResponse struct {
	Server mcp.Status `json:"server"`
}

// Backend answers the requests. Implementations must be safe for concurrent
// use: the server handles requests concurrently.
type Backend interface {
	ListComponents(context.Context, ListComponentsRequest) (*ListComponentsResponse, error)
	Status(context.Context, StatusRequest) (*StatusResponse, error)
	Reload(context.Context, ReloadRequest) (*ReloadResponse, error)
	RunHook(context.Context, RunHookRequest) (*hooks.Result, error)
	TrustFolder(context.Context, TrustFolderRequest) (*TrustFolderResponse, error)
	PolicyCheck(context.Context, PolicyCheckRequest) (*PolicyCheckResponse, error)
	MCPListTools(context.Context, MCPListToolsRequest) (*MCPListToolsResponse, error)
	MCPCallTool(context.Context, MCPCallToolRequest) (*MCPCallToolResponse, error)
	MCPRestart(context.Context, MCPRestartRequest) (*MCPRestartResponse, error)
	// Mode is the loader of the current set, "" before the first load.
	Mode() string
}

// method is one request subtype: its types (for decoding and for the
// schema) and its handler. The methods table below is the one list of
// subtypes: dispatch, initialize's subtypes and the JSON Schema come from it.
type method struct {
	subtype string
	doc     string
	req     reflect.Type
	resp    reflect.Type
	call    func(ctx context.Context, s *Server, raw json.RawMessage) (any, error)
}

func def[Req, Resp any](subtype, doc string, f func(ctx context.Context, s *Server, req Req) (Resp, error)) method {
	return method{
		subtype: subtype,
		doc:     doc,
		req:     reflect.TypeFor[Req](),
		resp:    reflect.TypeFor[Resp](),
		call: func(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
			var req Req
			if err := decodeRequest(raw, &req); err != nil {
				return nil, err
			}
			return f(ctx, s, req)
		},
	}
}

// methods lists the subtypes in the order the documentation shows them. It
// is filled in init because initialize's handler lists the subtypes, which
// would otherwise make the table refer to itself.
var methods []method

func init() { methods = methodTable() }

func methodTable() []method {
	return []method{
		def("initialize", "Opens a session: the protocol version and the subtypes the server answers. Optional.",
			func(ctx context.Context, s *Server, req InitializeRequest) (*InitializeResponse, error) {
				return s.initialize(req)
			}),
		def("list_components", "The live components of the current set, namespaced.",
			func(ctx context.Context, s *Server, req ListComponentsRequest) (*ListComponentsResponse, error) {
				return s.Backend.ListComponents(ctx, req)
			}),
		def("status", "Every plugin's state (active, demoted, failed, disabled) and why, skipped components, warnings, MCP servers.",
			func(ctx context.Context, s *Server, req StatusRequest) (*StatusResponse, error) {
				return s.Backend.Status(ctx, req)
			}),
		def("reload", "Reloads the set atomically; requests answered before it see the old set, after it the new one.",
			func(ctx context.Context, s *Server, req ReloadRequest) (*ReloadResponse, error) {
				return s.Backend.Reload(ctx, req)
			}),
		def("run_hook", "Runs the matching hooks of the current set for one event and returns the combined decision.",
			func(ctx context.Context, s *Server, req RunHookRequest) (*hooks.Result, error) {
				return s.Backend.RunHook(ctx, req)
			}),
		def("trust_folder", "Trusts a project folder (or forgets it): its hooks and MCP servers load at the next reload. Remembered per path in WHARF_HOME; managed settings may pre-trust or forbid.",
			func(ctx context.Context, s *Server, req TrustFolderRequest) (*TrustFolderResponse, error) {
				return s.Backend.TrustFolder(ctx, req)
			}),
		def("policy_check", "Asks policy one question; the decision says which layer and rule decided.",
			func(ctx context.Context, s *Server, req PolicyCheckRequest) (*PolicyCheckResponse, error) {
				return s.Backend.PolicyCheck(ctx, req)
			}),
		def("mcp_list_tools", "The tools of the running MCP servers under their namespaced names, and every server's state.",
			func(ctx context.Context, s *Server, req MCPListToolsRequest) (*MCPListToolsResponse, error) {
				return s.Backend.MCPListTools(ctx, req)
			}),
		def("mcp_call_tool", "Calls a tool of a running MCP server by its namespaced name; a tool that fails answers with isError, a server that is not running with an error.",
			func(ctx context.Context, s *Server, req MCPCallToolRequest) (*MCPCallToolResponse, error) {
				return s.Backend.MCPCallTool(ctx, req)
			}),
		def("mcp_restart", "Stops an MCP server whatever its state and starts it again as a new process, with a fresh restart budget.",
			func(ctx context.Context, s *Server, req MCPRestartRequest) (*MCPRestartResponse, error) {
				return s.Backend.MCPRestart(ctx, req)
			}),
	}
}

// Subtypes lists the request subtypes, in documentation order.
func Subtypes() []string {
	out := make([]string, len(methods))
	for i, m := range methods {
		out[i] = m.subtype
	}
	return out
}

func lookupMethod(subtype string) (method, bool) {
	for _, m := range methods {
		if m.subtype == subtype {
			return m, true
		}
	}
	return method{}, false
}
