package hooks

import (
	"github.com/wharfhq/wharf/plugin"
)

// What exit code 2 (or a JSON "decision": "block") of a hook does, per
// event, as Claude Code's hooks reference documents it.
const (
	// Exit2Block: the action is blocked (a tool call, a prompt, a stop...);
	// stderr is the reason given to the model.
	Exit2Block = "block"
	// Exit2Feedback: the action already happened; stderr (or the JSON
	// reason) is fed back to the model. The combined decision is still
	// "block", so an agent that relays it gives the reason to the model.
	Exit2Feedback = "feedback"
	// Exit2User: the event cannot be blocked; stderr is shown to the user
	// only, as a non-blocking error.
	Exit2User = "user"
	// Exit2Ignored: the exit code and output are ignored.
	Exit2Ignored = "ignored"
)

// Field is one documented field of an event's input.
type Field struct {
	Name string `json:"name"`
	// Type is the JSON type: string, boolean, number, object, array, or
	// "any".
	Type string `json:"type"`
}

// EventSpec is one hook event as Claude Code documents it: the field its
// matchers select on, its input fields, and what a blocking answer does.
type EventSpec struct {
	Name plugin.HookEvent `json:"name"`
	// Matcher is the input field matchers are compared with; "" for events
	// whose hooks always run (a matcher there is ignored, as in Claude
	// Code).
	Matcher string `json:"matcher,omitempty"`
	// Fields are the event-specific input fields, besides the common ones
	// (CommonFields).
	Fields []Field `json:"fields"`
	// Exit2 is what exit code 2 does: block, feedback, user or ignored.
	Exit2 string `json:"exit2"`
	// Effect says, for block and feedback events, what a block means.
	Effect string `json:"effect,omitempty"`
	// AnyNonZeroBlocks: any non-zero exit blocks, not only 2
	// (WorktreeCreate: a failed hook fails the worktree's creation).
	AnyNonZeroBlocks bool `json:"anyNonZeroBlocks,omitempty"`
}

// CommonFields are sent with every event.
var CommonFields = []Field{
	{"session_id", "string"}, {"transcript_path", "string"}, {"cwd", "string"},
	{"permission_mode", "string"}, {"hook_event_name", "string"},
	{"agent_id", "string"}, {"agent_type", "string"},
}

func f(pairs ...string) []Field {
	out := make([]Field, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, Field{pairs[i], pairs[i+1]})
	}
	return out
}

var toolFields = []string{"tool_name", "string", "tool_input", "object", "tool_use_id", "string"}

func tool(extra ...string) []Field {
	return f(append(append([]string(nil), toolFields...), extra...)...)
}

// Specs lists every event Claude Code documents, in plugin.HookEvents order.
var Specs = []EventSpec{
	{Name: plugin.HookPreToolUse, Matcher: "tool_name", Fields: tool(), Exit2: Exit2Block, Effect: "blocks the tool call; the reason goes to the model"},
	{Name: plugin.HookPostToolUse, Matcher: "tool_name", Fields: tool("tool_response", "any"), Exit2: Exit2Feedback, Effect: "the tool already ran; the reason goes to the model"},
	{Name: plugin.HookUserPromptSubmit, Fields: f("prompt", "string"), Exit2: Exit2Block, Effect: "blocks the prompt and erases it; the reason is shown to the user"},
	{Name: plugin.HookStop, Fields: f("stop_hook_active", "boolean", "last_assistant_message", "string"), Exit2: Exit2Block, Effect: "keeps the agent working; the reason goes to the model"},
	{Name: plugin.HookSubagentStop, Matcher: "agent_type", Fields: f("stop_hook_active", "boolean", "agent_transcript_path", "string", "last_assistant_message", "string"), Exit2: Exit2Block, Effect: "keeps the subagent working"},
	{Name: plugin.HookSessionStart, Matcher: "source", Fields: f("source", "string", "model", "string"), Exit2: Exit2User},
	{Name: plugin.HookSessionEnd, Matcher: "reason", Fields: f("reason", "string"), Exit2: Exit2User},
	{Name: plugin.HookNotification, Matcher: "notification_type", Fields: f("message", "string", "title", "string", "notification_type", "string"), Exit2: Exit2User},
	{Name: plugin.HookPreCompact, Matcher: "trigger", Fields: f("trigger", "string", "custom_instructions", "string"), Exit2: Exit2Block, Effect: "blocks the compaction"},
	{Name: plugin.HookPostToolUseFailure, Matcher: "tool_name", Fields: tool("error", "string", "is_interrupt", "boolean"), Exit2: Exit2Feedback, Effect: "the tool already failed; the reason goes to the model"},
	{Name: plugin.HookPostToolBatch, Exit2: Exit2Block, Effect: "stops the agentic loop before the next model call"},
	{Name: plugin.HookPermissionRequest, Matcher: "tool_name", Fields: f("tool_name", "string", "tool_input", "object", "permission_suggestions", "array"), Exit2: Exit2Block, Effect: "denies the permission"},
	{Name: plugin.HookPermissionDenied, Matcher: "tool_name", Fields: tool("reason", "string"), Exit2: Exit2User},
	{Name: plugin.HookUserPromptExpansion, Matcher: "command_name", Fields: f("command_name", "string", "command_args", "string"), Exit2: Exit2Block, Effect: "blocks the command's expansion"},
	{Name: plugin.HookStopFailure, Matcher: "error", Fields: f("error", "string", "error_details", "string", "last_assistant_message", "string"), Exit2: Exit2Ignored},
	{Name: plugin.HookSubagentStart, Matcher: "agent_type", Fields: nil, Exit2: Exit2User},
	{Name: plugin.HookPostCompact, Matcher: "trigger", Fields: f("trigger", "string", "compact_summary", "string"), Exit2: Exit2User},
	{Name: plugin.HookSetup, Matcher: "trigger", Fields: f("trigger", "string"), Exit2: Exit2User},
	{Name: plugin.HookTaskCreated, Fields: f("task_id", "string", "task_subject", "string", "task_description", "string", "teammate_name", "string", "team_name", "string"), Exit2: Exit2Block, Effect: "rolls back the task's creation"},
	{Name: plugin.HookTaskCompleted, Fields: f("task_id", "string", "task_subject", "string", "task_description", "string", "teammate_name", "string", "team_name", "string"), Exit2: Exit2Block, Effect: "keeps the task from being marked completed"},
	{Name: plugin.HookTeammateIdle, Fields: f("teammate_name", "string", "team_name", "string"), Exit2: Exit2Block, Effect: "keeps the teammate working"},
	{Name: plugin.HookElicitation, Matcher: "mcp_server_name", Fields: f("mcp_server_name", "string", "message", "string", "mode", "string", "url", "string", "elicitation_id", "string", "requested_schema", "object"), Exit2: Exit2Block, Effect: "declines the elicitation"},
	{Name: plugin.HookElicitationResult, Matcher: "mcp_server_name", Fields: f("mcp_server_name", "string", "action", "string", "content", "object", "mode", "string", "elicitation_id", "string"), Exit2: Exit2Block, Effect: "the response becomes a decline"},
	{Name: plugin.HookConfigChange, Matcher: "source", Fields: f("source", "string", "file_path", "string"), Exit2: Exit2Block, Effect: "the configuration change does not take effect (managed policy changes always do)"},
	{Name: plugin.HookInstructionsLoaded, Matcher: "load_reason", Fields: f("file_path", "string", "memory_type", "string", "load_reason", "string", "globs", "array", "trigger_file_path", "string", "parent_file_path", "string"), Exit2: Exit2Ignored},
	{Name: plugin.HookCwdChanged, Fields: f("old_cwd", "string", "new_cwd", "string"), Exit2: Exit2User},
	{Name: plugin.HookFileChanged, Matcher: "file_path", Fields: f("file_path", "string", "event", "string"), Exit2: Exit2User},
	{Name: plugin.HookWorktreeCreate, Fields: f("name", "string"), Exit2: Exit2Block, Effect: "the worktree is not created", AnyNonZeroBlocks: true},
	{Name: plugin.HookWorktreeRemove, Fields: f("worktree_path", "string"), Exit2: Exit2User},
}

var specByName = func() map[plugin.HookEvent]*EventSpec {
	m := make(map[plugin.HookEvent]*EventSpec, len(Specs))
	for i := range Specs {
		m[Specs[i].Name] = &Specs[i]
	}
	return m
}()

// SpecOf returns the spec of a known event.
func SpecOf(ev plugin.HookEvent) (EventSpec, bool) {
	s, ok := specByName[ev]
	if !ok {
		return EventSpec{}, false
	}
	return *s, true
}

// Blocking reports whether a block decision of ev means anything to the
// agent (Exit2Block or Exit2Feedback).
func (s EventSpec) Blocking() bool { return s.Exit2 == Exit2Block || s.Exit2 == Exit2Feedback }
