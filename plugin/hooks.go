package plugin

import (
	"encoding/json"
	"math"
	"regexp"
)

// HookEvent names when a hook runs.
type HookEvent string

// The hook events of Claude Code, as its hooks reference lists them.
const (
	HookPreToolUse          HookEvent = "PreToolUse"
	HookPostToolUse         HookEvent = "PostToolUse"
	HookPostToolUseFailure  HookEvent = "PostToolUseFailure"
	HookPostToolBatch       HookEvent = "PostToolBatch"
	HookPermissionRequest   HookEvent = "PermissionRequest"
	HookPermissionDenied    HookEvent = "PermissionDenied"
	HookNotification        HookEvent = "Notification"
	HookUserPromptSubmit    HookEvent = "UserPromptSubmit"
	HookUserPromptExpansion HookEvent = "UserPromptExpansion"
	HookStop                HookEvent = "Stop"
	HookStopFailure         HookEvent = "StopFailure"
	HookSubagentStart       HookEvent = "SubagentStart"
	HookSubagentStop        HookEvent = "SubagentStop"
	HookPreCompact          HookEvent = "PreCompact"
	HookPostCompact         HookEvent = "PostCompact"
	HookSessionStart        HookEvent = "SessionStart"
	HookSessionEnd          HookEvent = "SessionEnd"
	HookSetup               HookEvent = "Setup"
	HookTaskCreated         HookEvent = "TaskCreated"
	HookTaskCompleted       HookEvent = "TaskCompleted"
	HookTeammateIdle        HookEvent = "TeammateIdle"
	HookElicitation         HookEvent = "Elicitation"
	HookElicitationResult   HookEvent = "ElicitationResult"
	HookConfigChange        HookEvent = "ConfigChange"
	HookInstructionsLoaded  HookEvent = "InstructionsLoaded"
	HookCwdChanged          HookEvent = "CwdChanged"
	HookFileChanged         HookEvent = "FileChanged"
	HookWorktreeCreate      HookEvent = "WorktreeCreate"
	HookWorktreeRemove      HookEvent = "WorktreeRemove"
)

// HookEvents lists the known events in a stable order.
var HookEvents = []HookEvent{HookPreToolUse, HookPostToolUse, HookUserPromptSubmit, HookStop, HookSubagentStop, HookSessionStart, HookSessionEnd, HookNotification, HookPreCompact,
	HookPostToolUseFailure, HookPostToolBatch, HookPermissionRequest, HookPermissionDenied, HookUserPromptExpansion, HookStopFailure, HookSubagentStart,
	HookPostCompact, HookSetup, HookTaskCreated, HookTaskCompleted, HookTeammateIdle, HookElicitation, HookElicitationResult, HookConfigChange,
	HookInstructionsLoaded, HookCwdChanged, HookFileChanged, HookWorktreeCreate, HookWorktreeRemove}

// IsKnown reports whether e is one of HookEvents.
func (e HookEvent) IsKnown() bool {
	for _, k := range HookEvents {
		if e == k {
			return true
		}
	}
	return false
}

// HooksConfig is a hooks file ({"hooks": {event: [...]}}) or the inline
// "hooks" object of a manifest ({event: [...]}).
type HooksConfig struct {
	Description string                      `json:"description,omitempty"`
	Hooks       map[HookEvent][]HookMatcher `json:"hooks"`
}

// HookMatcher selects tool calls by a regular expression over the tool name
// (empty matches every call) and lists the hooks to run.
type HookMatcher struct {
	Matcher string `json:"matcher,omitempty"`
	Hooks   []Hook `json:"hooks"`
}

// Hook is one hook action. Type is "command" (run Command) or "prompt"
// (ask a model with Prompt). Timeout is in seconds; 0 means the default.
// Keys Claude Code defines beyond these (if, async, asyncRewake, ...) are
// kept in Extra.
type Hook struct {
	Type    string                     `json:"type"`
	Command string                     `json:"command,omitempty"`
	Prompt  string                     `json:"prompt,omitempty"`
	Timeout int                        `json:"timeout,omitempty"`
	Extra   map[string]json.RawMessage `json:"-"`
}

// hookExtraKeys are hook keys Claude Code defines that wharf passes through.
var hookExtraKeys = map[string]bool{"if": true, "async": true, "asyncRewake": true, "rewakeMessage": true,
	"rewakeSummary": true, "statusMessage": true, "model": true, "once": true,
	"url": true, "headers": true, "allowedEnvVars": true,
	"server": true, "tool": true, "input": true}

// MatchesEveryTool reports whether a hook matcher selects everything: empty,
// "*" or "**", as Claude Code's hooks reference defines them (the last two
// are not regular expressions).
func MatchesEveryTool(matcher string) bool {
	return matcher == "" || matcher == "*" || matcher == "**"
}

// maxHookTimeout bounds a hook's timeout so that it fits a time.Duration.
// Claude Code sets no upper bound (any positive number of seconds); a
// larger value is read as this one, about 68 years.
const maxHookTimeout = 1<<31 - 1

// ParseHooks parses a hooks.json file, or a manifest's inline hooks object.
// Errors are *Error{Type: TypeManifestParse} wrapping *SyntaxError,
// *FieldError or *SizeError.
func ParseHooks(data []byte, file string) (*HooksConfig, []Diagnostic, error) {
	return parseDocument(data, file, (*decoder).hooksFile)
}

// hooksFile decodes either form: with a top-level "hooks" object it is the
// file form, otherwise every key is an event.
func (d *decoder) hooksFile(n *node) *HooksConfig {
	h := &HooksConfig{Hooks: map[HookEvent][]HookMatcher{}}
	if !d.object(n, "") {
		return h
	}
	if inner := n.get("hooks"); inner != nil {
		for _, m := range n.members {
			switch m.key {
			case "hooks":
				d.hookEvents(m.val, "hooks", h)
			case "description":
				h.Description = d.str(m.val, "description")
			default:
				d.unknown(m, "")
			}
		}
		return h
	}
	d.hookEvents(n, "", h)
	return h
}

// hooksInline checks a manifest's inline hooks value.
func (d *decoder) hooksInline(n *node, f string) {
	h := &HooksConfig{Hooks: map[HookEvent][]HookMatcher{}}
	if inner := n.get("hooks"); inner != nil && inner.kind == kindObject {
		d.hookEvents(inner, key(f, "hooks"), h)
		return
	}
	d.hookEvents(n, f, h)
}

func (d *decoder) hookEvents(n *node, f string, h *HooksConfig) {
	if !d.object(n, f) {
		return
	}
	for _, m := range n.members {
		ef := key(f, m.key)
		ev := HookEvent(m.key)
		if !ev.IsKnown() {
			d.warnf(&node{off: m.keyOff}, ef, "unknown hook event %q (kept; wharf never fires it)", m.key)
		}
		if m.val.kind != kindArray {
			d.typeError(m.val, ef, "array of {matcher?, hooks}")
			continue
		}
		for i, e := range m.val.elems {
			mf := index(ef, i)
			if guardEvent(ev) {
				if hm, ok := d.hookMatcher(e, mf, false); ok {
					h.Hooks[ev] = append(h.Hooks[ev], hm)
				}
				continue
			}
			// As Claude Code: outside the guard events an unusable
			// matcher group or hook is left out, with a warning, and the
			// rest of the file loads.
			var hm HookMatcher
			var ok bool
			if msgs := d.softly(" (left out: it cannot be used; the plugin's other hooks load)", func() { hm, ok = d.hookMatcher(e, mf, true) }); len(msgs) == 0 && ok {
				h.Hooks[ev] = append(h.Hooks[ev], hm)
			}
		}
	}
}

// guardEvent reports whether hooks of ev may guard permissions
// (PreToolUse, PermissionRequest). Claude Code refuses a plugin with a
// guard hook it cannot load, rather than run without the guard; a broken
// hook of any other event is only left out. wharf does the same.
func guardEvent(ev HookEvent) bool { return ev == HookPreToolUse || ev == HookPermissionRequest }

// softly runs fn with errors turned into warnings ending in suffix and
// returns their messages; an outer soft state is restored unchanged (what
// an inner call left out does not make the outer part unusable).
func (d *decoder) softly(suffix string, fn func()) []string {
	soft, msgs, sfx := d.soft, d.softMsgs, d.softSuffix
	d.soft, d.softMsgs, d.softSuffix = true, nil, suffix
	fn()
	got := d.softMsgs
	d.soft, d.softMsgs, d.softSuffix = soft, msgs, sfx
	return got
}

// hookMatcher decodes one matcher group. With soft (outside the guard
// events) a hook that cannot be used is left out of the group alone.
func (d *decoder) hookMatcher(n *node, f string, soft bool) (HookMatcher, bool) {
	var hm HookMatcher
	if !d.object(n, f) {
		return hm, false
	}
	for _, m := range n.members {
		mf := key(f, m.key)
		switch m.key {
		case "matcher":
			hm.Matcher = d.str(m.val, mf)
			if m.val.kind == kindString && !MatchesEveryTool(hm.Matcher) {
				if _, err := regexp.Compile(hm.Matcher); err != nil {
					d.errorf(m.val, mf, "invalid regular expression: %v", err)
				}
			}
		case "hooks":
			if m.val.kind != kindArray {
				d.typeError(m.val, mf, "array of hooks")
				continue
			}
			hm.Hooks = make([]Hook, 0, len(m.val.elems))
			for i, e := range m.val.elems {
				if !soft {
					if hk, ok := d.hook(e, index(mf, i)); ok {
						hm.Hooks = append(hm.Hooks, hk)
					}
					continue
				}
				var hk Hook
				var ok bool
				if msgs := d.softly(" (this hook is left out; the others load)", func() { hk, ok = d.hook(e, index(mf, i)) }); len(msgs) == 0 && ok {
					hm.Hooks = append(hm.Hooks, hk)
				}
			}
		default:
			d.unknown(m, f)
		}
	}
	if n.get("hooks") == nil {
		d.errorf(n, key(f, "hooks"), "required field is missing")
	}
	return hm, true
}

func (d *decoder) hook(n *node, f string) (Hook, bool) {
	var hk Hook
	if !d.object(n, f) {
		return hk, false
	}
	for _, m := range n.members {
		mf := key(f, m.key)
		switch m.key {
		case "type":
			hk.Type = d.str(m.val, mf)
		case "command":
			hk.Command = d.str(m.val, mf)
		case "prompt":
			hk.Prompt = d.str(m.val, mf)
		case "timeout":
			if m.val.kind != kindNumber {
				d.typeError(m.val, mf, "number of seconds")
				continue
			}
			// As Claude Code: any positive number of seconds; a fraction
			// is rounded up to the next whole second.
			var t float64
			if err := json.Unmarshal([]byte(m.val.str), &t); err != nil || !(t > 0) {
				d.errorf(m.val, mf, "timeout %s must be a positive number of seconds", m.val.str)
				continue
			}
			hk.Timeout = int(min(math.Ceil(t), maxHookTimeout))
		default:
			if !hookExtraKeys[m.key] {
				d.unknown(m, f)
			}
			hk.Extra = d.keep(hk.Extra, m)
		}
	}
	switch hk.Type {
	case "command":
		if hk.Command == "" {
			d.errorf(n, key(f, "command"), "required for a command hook")
		}
	case "prompt", "agent":
		if hk.Prompt == "" {
			d.errorf(n, key(f, "prompt"), "required for a %s hook", hk.Type)
		}
	case "http":
		if u, ok := hk.Extra["url"]; !ok || string(u) == `""` {
			// Kept: the agent lists the hook as a failed component.
			d.warnf(n, key(f, "url"), "required for an http hook; this hook cannot run")
		}
	case "mcp_tool":
		for _, k := range []string{"server", "tool"} {
			if v, ok := hk.Extra[k]; !ok || string(v) == `""` || len(v) == 0 || v[0] != '"' {
				// Kept: the agent lists the hook as a failed component.
				d.warnf(n, key(f, k), "required (a string) for an mcp_tool hook; this hook cannot run")
			}
		}
		if v, ok := hk.Extra["input"]; ok && (len(v) == 0 || v[0] != '{') {
			d.warnf(n, key(f, "input"), "must be an object of the tool's arguments; this hook cannot run")
		}
	case "":
		d.errorf(n, key(f, "type"), "required: command, http, mcp_tool, prompt or agent")
	default:
		d.warnf(n.get("type"), key(f, "type"), "unknown hook type %q (kept; wharf does not run it)", hk.Type)
	}
	if v, ok := hk.Extra["if"]; ok {
		var rule string
		if json.Unmarshal(v, &rule) != nil {
			d.warnf(n, key(f, "if"), "must be a permission rule string such as \"Bash(git *)\"; the hook never runs")
		} else if _, err := ParseHookIf(rule); err != nil {
			d.warnf(n, key(f, "if"), "%v; the hook never runs", err)
		}
	}
	return hk, true
}
