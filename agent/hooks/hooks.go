// Package hooks runs the command and http hooks of the active plugin set
// for one event and combines their answers the way Claude Code does.
//
// Every event of Claude Code's hooks reference is known (Specs): its
// matcher field, its documented input fields and what exit code 2 does for
// it. Every matching command hook runs as `sh -c <command>` with the event
// JSON on its stdin and the plugin's environment (CLAUDE_PLUGIN_ROOT,
// WHARF_PLUGIN_ROOT, CLAUDE_PLUGIN_DATA, CLAUDE_PROJECT_DIR), in its own
// process group, under a timeout (the hook's own, else 60 s) after which the
// whole group is killed; an http hook POSTs the event JSON to its URL.
// Before a hook runs, the scripts it names are checked against the digests
// taken when the set was loaded: a changed script is refused until the next
// reload. Hooks run in parallel, bounded; their results are combined in the
// deterministic order of the hooks, not in the order they finish:
//
//   - exit 2 blocks, with stderr as the reason, for events that can block;
//     for the others it is feedback or a non-blocking error (EventSpec.Exit2);
//   - exit 0 with stdout JSON {"decision":"block"} blocks with its reason,
//     {"decision":"approve"} approves; PreToolUse's permissionDecision and
//     PermissionRequest's decision.behavior deny or allow;
//   - any other exit code, a crash (signal), a timeout or a hook that cannot
//     start is a non-blocking error reported with the hook's identity;
//   - hookSpecificOutput objects are merged and passed through.
//
// One broken hook never stops the others.
//
// A hook's "if" permission rule (plugin.HookIf) selects the tool calls it
// runs for; an "async" command hook starts in the background and decides
// nothing; a "once" hook runs at most once per session (Runner.OnceDir keeps
// that across processes). An mcp_tool hook calls a tool of a running MCP
// server through Runner.MCP, its text read as a command's stdout.
package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/internal/proctree"
	"github.com/wharfhq/wharf/plugin"
)

// DefaultTimeout is a hook's timeout when it sets none, as in Claude Code.
const DefaultTimeout = 60 * time.Second

// maxOutput bounds what is kept of a hook's stdout and stderr.
const maxOutput = 1 << 20

// Decisions of a combined Result.
const (
	DecisionBlock   = "block"
	DecisionApprove = "approve"
)

// Hook is one command to run for an event.
type Hook struct {
	// ID identifies the hook in reports: "<source>:<event>[i][j]" for
	// settings hooks, "plugin:<p@m>:<event>[i][j]" for plugin hooks, where i
	// is the matcher's index and j the hook's index within it.
	ID string `json:"id"`
	// Source is plugin, user, project or managed; Plugin the plugin ID for
	// plugin hooks.
	Source string `json:"source"`
	Plugin string `json:"plugin,omitempty"`
	// Path is the file that defines the hook.
	Path    string           `json:"path,omitempty"`
	Event   plugin.HookEvent `json:"event"`
	Matcher string           `json:"matcher,omitempty"`
	// Type is "" for a command hook, "http" for an http hook; other types
	// (prompt, agent: they need a model) are not run.
	Type    string `json:"type,omitempty"`
	Command string `json:"command"`
	// URL, Headers and AllowedEnvVars configure an http hook: the event
	// JSON is POSTed to URL; $VAR and ${VAR} in header values are
	// substituted only for the variables AllowedEnvVars names.
	URL            string            `json:"url,omitempty"`
	Headers        map[string]string `json:"-"`
	AllowedEnvVars []string          `json:"-"`
	// MCPServer, MCPTool and MCPInput configure an mcp_tool hook: Tool of
	// the MCP server named MCPServer (for a plugin hook, the plugin's own
	// server of that name first) is called with MCPInput, whose "${path}"
	// strings are replaced by the event's values (${tool_input.file_path},
	// ${session_id}, ${cwd}...); its text answers as a command's stdout.
	MCPServer string          `json:"server,omitempty"`
	MCPTool   string          `json:"tool,omitempty"`
	MCPInput  json.RawMessage `json:"-"`
	// Namespace is the plugin's namespace (its plugin.json name), for
	// resolving MCPServer to plugin:<namespace>:<server>.
	Namespace string `json:"-"`
	// Pins are the hook's scripts as the set loaded them; a hook whose
	// script changed since is refused (agent.ScriptChangedError).
	Pins []agent.ScriptPin `json:"-"`
	// Timeout is 0 for DefaultTimeout.
	Timeout time.Duration `json:"-"`
	// Env is added to the runner's base environment.
	Env []string `json:"-"`
	// Dir is the working directory; "" for the runner's.
	Dir string `json:"-"`
	// If is the hook's permission-rule filter ("Bash(git *)"): on tool
	// events the hook runs only for a tool call the rule matches; on other
	// events a hook with If never runs, as in Claude Code
	// (plugin.HookIf documents the rules wharf evaluates).
	If string `json:"if,omitempty"`
	// Async runs a command hook in the background: the event does not wait
	// for it and its exit code and output decide nothing.
	Async bool `json:"async,omitempty"`
	// Once runs the hook at most once per session (the event's session_id)
	// for the life of the Runner.
	Once bool `json:"once,omitempty"`

	ifSet  bool
	plugin plugin.ID
}

// FromSet returns the hooks of the Set for event, in the Set's order (which
// is deterministic), with the environment of their component. Run runs the
// command, http and mcp_tool hooks and reports the others in
// Result.NotRun: prompt and agent hooks are in the Set, as Claude Code lists
// them, for an agent with a model to run; wharf has none.
func FromSet(s *agent.Set, event plugin.HookEvent, projectDir string) []Hook {
	if s == nil {
		return nil
	}
	var out []Hook
	for _, c := range s.ComponentsOf(plugin.KindHook) {
		if c.Hook == nil || c.Hook.Event != event {
			continue
		}
		base := c.Source
		if c.Source == agent.SourcePlugin {
			base = "plugin:" + c.Plugin.String()
		}
		env := c.Env(projectDir)
		for i, m := range c.Hook.Matchers {
			for j, h := range m.Hooks {
				oi, oj := c.Hook.Pos(i, j)
				hk := Hook{
					ID:      fmt.Sprintf("%s:%s[%d][%d]", base, event, oi, oj),
					Source:  c.Source,
					Path:    c.Path,
					Event:   event,
					Matcher: m.Matcher,
					Command: h.Command,
					Timeout: time.Duration(h.Timeout) * time.Second,
					Env:     env,
					Dir:     projectDir,
					plugin:  c.Plugin,
				}
				if !c.Plugin.IsZero() {
					hk.Plugin = c.Plugin.String()
				}
				if h.Type != "" && h.Type != "command" {
					hk.Type = h.Type
				}
				if h.Type == "http" {
					httpFields(&hk, h.Extra)
				}
				if h.Type == "mcp_tool" {
					_ = json.Unmarshal(h.Extra["server"], &hk.MCPServer)
					_ = json.Unmarshal(h.Extra["tool"], &hk.MCPTool)
					hk.MCPInput = h.Extra["input"]
					if c.Source == agent.SourcePlugin {
						hk.Namespace = strings.TrimSuffix(c.Name, ":"+string(event))
					}
				}
				if raw, ok := h.Extra["if"]; ok {
					// Set but empty or not a string: the hook never runs
					// (the loader warned).
					_ = json.Unmarshal(raw, &hk.If)
					hk.ifSet = true
				}
				_ = json.Unmarshal(h.Extra["async"], &hk.Async)
				_ = json.Unmarshal(h.Extra["once"], &hk.Once)
				hk.Pins = c.Hook.Scripts[h.Command]
				out = append(out, hk)
			}
		}
	}
	return out
}

// Gate decides whether a hook from a source kind may run; id is the plugin
// of a plugin hook (allowManagedHooksOnly, strictPluginOnlyCustomization).
// *agent.Runtime implements it with the session's policy. It must be safe
// for concurrent use.
type Gate interface {
	AllowHook(ctx context.Context, from string, id plugin.ID) error
}

// Runner runs hooks. The zero value is ready to use; a Runner is safe for
// concurrent use.
type Runner struct {
	// Parallel bounds the hooks running at once (default 8).
	Parallel int
	// DefaultTimeout applies to hooks without their own (default 60 s).
	DefaultTimeout time.Duration
	// Gate, when set, is asked before each hook runs; a refused hook is
	// reported in Result.Refused and not run. The agent's loader already
	// leaves refused hooks out of the Set; Gate is for hooks from elsewhere.
	Gate Gate
	// Shell runs the command as Shell -c command (default "sh").
	Shell string
	// BaseEnv is the environment hooks start from (default os.Environ()).
	BaseEnv []string
	// HTTPClient sends http hooks' requests (default http.DefaultClient).
	HTTPClient *http.Client
	// Home is the user's home directory for "~/" file patterns of "if"
	// rules (default os.UserHomeDir).
	Home string
	// OnceDir, when set, remembers across Runners (and processes) which
	// once hooks ran in which session: one empty file per session and hook.
	// Without it, or for an event without session_id, a Runner remembers
	// for its own life only.
	OnceDir string
	// MCP calls the tools of mcp_tool hooks; without it they are not run
	// (Result.NotRun says so). *mcp.Supervisor implements it.
	MCP MCPCaller

	mu   sync.Mutex
	once map[string]bool // session and hook that ran, for Once hooks
	bg   sync.WaitGroup  // background (Async) hooks still running
}

// Outcome is what one hook did.
type Outcome struct {
	Hook
	// Ran is false for a hook that did not start (bad matcher, refused,
	// failed to start).
	Ran      bool   `json:"ran"`
	ExitCode int    `json:"exitCode"`
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Output is plain (non-JSON) stdout, bounded.
	Output string `json:"output,omitempty"`
	// Error is set for a non-blocking failure: another exit code, a signal,
	// a timeout, a hook that could not start, or invalid JSON output.
	Error    string `json:"error,omitempty"`
	TimedOut bool   `json:"timedOut,omitempty"`
	// DurationMS is the wall time of the run (0 for a background hook).
	DurationMS int64 `json:"durationMs"`
	// Background is set for an Async hook that was started in the
	// background: Run did not wait for it and its result decides nothing.
	Background bool `json:"background,omitempty"`

	// run is the command to run: Command with its pinned scripts
	// replaced by their verified copies (agent.PrepareCommand).
	run      string
	hso      map[string]json.RawMessage
	cont     *bool
	stop     string
	sysMsg   string
	suppress bool
}

// Result is the combined answer of every matching hook.
type Result struct {
	Event plugin.HookEvent `json:"event"`
	// Decision is "block" when any hook blocked, else "approve" when any
	// approved, else "" (go on as usual).
	Decision string `json:"decision,omitempty"`
	// Reason is the reason of the first blocking hook in hook order (or of
	// the first approving one).
	Reason string `json:"reason,omitempty"`
	// BlockedBy is the ID of that first blocking hook.
	BlockedBy string `json:"blockedBy,omitempty"`
	// Effect says what the block means for this event, as Claude Code
	// documents it ("blocks the tool call", "denies the permission",
	// "the tool already ran; the reason goes to the model"...).
	Effect string `json:"effect,omitempty"`
	// Continue is false when a hook asked the agent to stop (continue:
	// false); StopReason is the first such hook's stopReason.
	Continue   *bool  `json:"continue,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
	// SystemMessage joins the hooks' systemMessage fields.
	SystemMessage  string `json:"systemMessage,omitempty"`
	SuppressOutput bool   `json:"suppressOutput,omitempty"`
	// HookSpecificOutput merges the hooks' hookSpecificOutput objects in
	// hook order: the first value of a key wins, except permissionDecision
	// (deny beats ask beats allow, with its permissionDecisionReason) and
	// additionalContext (joined with newlines).
	HookSpecificOutput map[string]any `json:"hookSpecificOutput,omitempty"`
	// Hooks lists every matching hook's outcome, in hook order.
	Hooks []Outcome `json:"hooks"`
	// Errors are the non-blocking failures, "<hook id>: <message>".
	Errors []string `json:"errors,omitempty"`
	// Refused are hooks the Gate refused.
	Refused []string `json:"refused,omitempty"`
	// NotRun are matching hooks that did not run, and why: a type this
	// runner does not run (prompt hooks need a model; the agent runs them),
	// a duplicate of an earlier hook's command and environment, a Once hook
	// that already ran in the session, or an If hook on an event without a
	// tool call.
	NotRun []string `json:"notRun,omitempty"`
}

// Blocked reports whether the combined decision blocks.
func (r *Result) Blocked() bool { return r.Decision == DecisionBlock }

// Matches reports whether the hook's matcher selects target, as Claude Code
// compares them: an empty, "*" or "**" matcher selects everything; a matcher of
// only letters, digits, "_" and "|" is an exact name or a "|"-separated list
// of exact names ("Edit|Write" selects Edit and Write, not NotebookEdit;
// "mcp__memory" selects no MCP tool); any other matcher is a regular
// expression searched in the target ("^mcp__" selects every MCP tool).
func Matches(matcher, target string) (bool, error) {
	if plugin.MatchesEveryTool(matcher) {
		return true, nil
	}
	if isPlainMatcher(matcher) {
		for _, alt := range strings.Split(matcher, "|") {
			if alt == target {
				return true, nil
			}
		}
		return false, nil
	}
	re, err := regexp.Compile(matcher)
	if err != nil {
		return false, fmt.Errorf("matcher %q is not a valid regular expression: %v", matcher, err)
	}
	return re.MatchString(target), nil
}

// MatchesEvent is Matches with the event's own rules: FileChanged matchers
// are "|"-separated file names compared with the base name of file_path.
func MatchesEvent(ev plugin.HookEvent, matcher, target string) (bool, error) {
	if ev == plugin.HookFileChanged && !plugin.MatchesEveryTool(matcher) {
		base := filepath.Base(target)
		for _, alt := range strings.Split(matcher, "|") {
			if alt == base || alt == target {
				return true, nil
			}
		}
		return false, nil
	}
	return Matches(matcher, target)
}

func isPlainMatcher(m string) bool {
	for _, c := range m {
		if !(c == '_' || c == '|' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Run runs the hooks of ev's event that match ev and combines their results.
// It never fails: every problem of a single hook is in its Outcome.
func (r *Runner) Run(ctx context.Context, ev Event, hooks []Hook) *Result {
	res := &Result{Event: ev.Name, Hooks: []Outcome{}}
	var todo []int
	// The verified copies of the scripts of the hooks run in the
	// foreground, removed once they have all exited.
	var prepared []*agent.PreparedCommand
	defer func() {
		for _, pc := range prepared {
			pc.Close()
		}
	}()
	// Identical commands with the same environment run once, as in Claude
	// Code (a user and a project settings file often repeat a hook).
	seen := map[string]string{}
	for _, h := range hooks {
		if h.Event != "" && h.Event != ev.Name {
			continue
		}
		o := Outcome{Hook: h}
		if spec, ok := SpecOf(ev.Name); ok && spec.Matcher != "" {
			ok, err := MatchesEvent(ev.Name, h.Matcher, ev.Target)
			if err != nil {
				o.Error = err.Error()
				res.Hooks = append(res.Hooks, o)
				continue
			}
			if !ok {
				continue
			}
		}
		if h.If != "" || h.ifSet {
			run, why := r.ifSelects(ev, h)
			if why != "" {
				res.NotRun = append(res.NotRun, h.ID+": "+why)
			}
			if !run {
				continue
			}
		}
		if r.Gate != nil {
			if err := r.Gate.AllowHook(ctx, h.Source, h.pluginID()); err != nil {
				res.Refused = append(res.Refused, h.ID+": "+err.Error())
				continue
			}
		}
		// The scripts are checked and copied at once: what runs is the
		// copy of what was checked, never the path again.
		pc, err := agent.PrepareCommand(h.Command, h.Pins)
		if err != nil {
			o.Error = err.Error()
			res.Refused = append(res.Refused, h.ID+": "+err.Error())
			res.Hooks = append(res.Hooks, o)
			continue
		}
		o.run = pc.Command
		prepared = append(prepared, pc)
		if h.Type == "http" {
			if strings.TrimSpace(h.URL) == "" {
				o.Error = "http hook has no url"
				res.Hooks = append(res.Hooks, o)
				continue
			}
			if h.Once && !r.firstRun(ev, h) {
				res.NotRun = append(res.NotRun, h.ID+": once, and it already ran in this session")
				continue
			}
			res.Hooks = append(res.Hooks, o)
			todo = append(todo, len(res.Hooks)-1)
			continue
		}
		if h.Type == "mcp_tool" {
			if r.MCP == nil {
				res.NotRun = append(res.NotRun, h.ID+": mcp_tool hook; this runner has no MCP servers (wharf agent serve runs them)")
				continue
			}
			if h.Once && !r.firstRun(ev, h) {
				res.NotRun = append(res.NotRun, h.ID+": once, and it already ran in this session")
				continue
			}
			res.Hooks = append(res.Hooks, o)
			todo = append(todo, len(res.Hooks)-1)
			continue
		}
		if h.Type != "" && h.Type != "command" {
			res.NotRun = append(res.NotRun, h.ID+": "+h.Type+" hook; wharf has no model to run it")
			continue
		}
		if strings.TrimSpace(h.Command) == "" {
			o.Error = "hook has no command"
			res.Hooks = append(res.Hooks, o)
			continue
		}
		key := h.Command + "\x00" + h.Dir + "\x00" + strings.Join(h.Env, "\x00")
		if first, dup := seen[key]; dup {
			res.NotRun = append(res.NotRun, h.ID+": same command and environment as "+first+", run once")
			continue
		}
		seen[key] = h.ID
		if h.Once && !r.firstRun(ev, h) {
			res.NotRun = append(res.NotRun, h.ID+": once, and it already ran in this session")
			continue
		}
		if h.Async {
			o.Background = true
			// The background run owns its copies from here.
			prepared = prepared[:len(prepared)-1]
			if err := r.startBackground(ev, h, pc); err != nil {
				o.Error = "cannot start in the background: " + err.Error()
			} else {
				o.Ran = true
			}
			res.Hooks = append(res.Hooks, o)
			continue
		}
		res.Hooks = append(res.Hooks, o)
		todo = append(todo, len(res.Hooks)-1)
	}

	par := r.Parallel
	if par <= 0 {
		par = 8
	}
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for _, i := range todo {
		wg.Add(1)
		sem <- struct{}{}
		go func(o *Outcome) {
			defer wg.Done()
			defer func() { <-sem }()
			if o.Type == "http" {
				r.runHTTP(ctx, ev, o)
			} else if o.Type == "mcp_tool" {
				r.runMCPTool(ctx, ev, o)
			} else {
				r.runOne(ctx, ev, o)
			}
		}(&res.Hooks[i])
	}
	wg.Wait()
	combine(res)
	return res
}

func (h Hook) pluginID() plugin.ID {
	if !h.plugin.IsZero() || h.Plugin == "" {
		return h.plugin
	}
	id, _ := plugin.ParseID(h.Plugin)
	return id
}

// procSettings is how a command hook runs: its timeout (the hook's, else
// the runner's, else DefaultTimeout), the shell, and the base environment.
func (r *Runner) procSettings(hookTimeout time.Duration) (time.Duration, string, []string) {
	timeout := hookTimeout
	if timeout <= 0 {
		timeout = r.DefaultTimeout
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	shell := r.Shell
	if shell == "" {
		shell = "sh"
	}
	env := r.BaseEnv
	if env == nil {
		env = os.Environ()
	}
	return timeout, shell, env
}

// runOne runs one hook and fills o. It recovers from nothing but never
// panics on hostile output: every parse is checked.
func (r *Runner) runOne(ctx context.Context, ev Event, o *Outcome) {
	timeout, shell, env := r.procSettings(o.Timeout)
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, shell, "-c", o.run)
	cmd.Env = append(append(append([]string(nil), env...), o.Env...), "WHARF_HOOK_EVENT="+string(ev.Name))
	cmd.Dir = o.Dir
	cmd.Stdin = bytes.NewReader(ev.Raw)
	var stdout, stderr capBuffer
	stdout.max, stderr.max = maxOutput, maxOutput
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Its own process group, so a timeout kills what the shell started too.
	tree := proctree.New(cmd)
	cmd.Cancel = tree.Kill
	// A grandchild that left the group may still hold the pipes open.
	cmd.WaitDelay = 2 * time.Second

	start := time.Now()
	err := tree.Run()
	o.DurationMS = time.Since(start).Milliseconds()
	if cmd.Process != nil {
		o.Ran = true
		// Whatever the shell left behind in its group goes with it.
		_ = tree.Kill()
	}
	if cmd.ProcessState != nil {
		o.ExitCode = cmd.ProcessState.ExitCode()
	}
	switch {
	case tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil:
		o.TimedOut = true
		o.ExitCode = -1
		o.Error = fmt.Sprintf("timed out after %s; its process group was killed", timeout)
		return
	case ctx.Err() != nil:
		o.ExitCode = -1
		o.Error = "canceled: " + ctx.Err().Error()
		return
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		if !o.Ran {
			o.Error = "cannot start: " + err.Error()
			return
		}
		if !errors.Is(err, exec.ErrWaitDelay) {
			o.Error = err.Error()
			return
		}
	}
	if ee != nil {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			o.Error = fmt.Sprintf("killed by signal %s%s", ws.Signal(), stderrNote(stderr.String()))
			return
		}
	}
	spec, _ := SpecOf(ev.Name)
	switch {
	case o.ExitCode == 0:
		parseOutput(o, spec, stdout.Bytes())
	case o.ExitCode == 2 || spec.AnyNonZeroBlocks:
		exit2(o, spec, stderr.String())
	default:
		o.Error = fmt.Sprintf("exit code %d%s%s", o.ExitCode, signalNote(o.ExitCode), stderrNote(stderr.String()))
	}
}

// signalNote explains the shell's 128+n exit codes: the command it ran was
// killed by signal n (a crash).
func signalNote(code int) string {
	if code > 128 && code < 128+65 {
		return fmt.Sprintf(" (killed by signal %s)", syscall.Signal(code-128))
	}
	return ""
}

func stderrNote(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	return ": " + truncate(s, 500)
}

// hookOutput is the JSON a hook may print on stdout with exit 0.
type hookOutput struct {
	Decision           string                     `json:"decision"`
	Reason             string                     `json:"reason"`
	Continue           *bool                      `json:"continue"`
	StopReason         string                     `json:"stopReason"`
	SystemMessage      string                     `json:"systemMessage"`
	SuppressOutput     bool                       `json:"suppressOutput"`
	HookSpecificOutput map[string]json.RawMessage `json:"hookSpecificOutput"`
}

// exit2 applies a blocking exit (2, or any non-zero exit of an event whose
// every failure blocks) as the event documents it.
func exit2(o *Outcome, spec EventSpec, stderr string) {
	switch spec.Exit2 {
	case Exit2Block, Exit2Feedback:
		o.Decision = DecisionBlock
		o.Reason = strings.TrimSpace(stderr)
		if o.Reason == "" {
			o.Reason = fmt.Sprintf("blocked by hook %s (exit code %d)", o.ID, o.ExitCode)
		}
	case Exit2User:
		o.Error = fmt.Sprintf("exit code 2, but %s cannot be blocked; shown to the user%s", spec.Name, stderrNote(stderr))
	case Exit2Ignored:
		// Claude Code ignores the exit code and output of these events.
	}
}

func parseOutput(o *Outcome, spec EventSpec, out []byte) {
	t := bytes.TrimSpace(out)
	if len(t) == 0 {
		return
	}
	if t[0] != '{' || spec.Exit2 == Exit2Ignored {
		o.Output = truncate(string(t), 64<<10)
		return
	}
	var ho hookOutput
	if err := json.Unmarshal(t, &ho); err != nil {
		o.Error = "stdout looks like JSON but does not parse: " + err.Error()
		o.Output = truncate(string(t), 64<<10)
		return
	}
	switch ho.Decision {
	case "":
	case DecisionBlock, DecisionApprove:
		if ho.Decision == DecisionBlock && !spec.Blocking() {
			o.Error = fmt.Sprintf("stdout decision \"block\" ignored: %s cannot be blocked", spec.Name)
			break
		}
		o.Decision = ho.Decision
		o.Reason = ho.Reason
	default:
		o.Error = fmt.Sprintf("stdout decision %q is neither \"block\" nor \"approve\"; ignored", ho.Decision)
	}
	if o.Decision == DecisionBlock && o.Reason == "" {
		o.Reason = "blocked by hook " + o.ID
	}
	o.hso = ho.HookSpecificOutput
	specificDecision(o, spec.Name)
	o.cont, o.stop, o.sysMsg, o.suppress = ho.Continue, ho.StopReason, ho.SystemMessage, ho.SuppressOutput
}

// specificDecision reads the decisions events carry in hookSpecificOutput:
// PreToolUse's permissionDecision (deny blocks the tool call, allow
// approves it) and PermissionRequest's decision.behavior (deny denies the
// permission, allow grants it). A top-level decision of the same hook wins.
func specificDecision(o *Outcome, ev plugin.HookEvent) {
	if o.Decision != "" || o.hso == nil {
		return
	}
	var decision, reason string
	switch ev {
	case plugin.HookPreToolUse:
		_ = json.Unmarshal(o.hso["permissionDecision"], &decision)
		_ = json.Unmarshal(o.hso["permissionDecisionReason"], &reason)
	case plugin.HookPermissionRequest:
		var d struct {
			Behavior string `json:"behavior"`
			Message  string `json:"message"`
		}
		_ = json.Unmarshal(o.hso["decision"], &d)
		decision, reason = d.Behavior, d.Message
	default:
		return
	}
	switch decision {
	case "deny":
		o.Decision, o.Reason = DecisionBlock, reason
		if reason == "" {
			o.Reason = "denied by hook " + o.ID
		}
	case "allow":
		o.Decision, o.Reason = DecisionApprove, reason
	}
}

// permissionRank orders PreToolUse permission decisions: the strictest wins.
var permissionRank = map[string]int{"allow": 1, "ask": 2, "deny": 3}

func combine(res *Result) {
	var approveReason string
	approved := false
	var msgs, ctxs []string
	permRank := 0
	for i := range res.Hooks {
		o := &res.Hooks[i]
		if o.Error != "" {
			res.Errors = append(res.Errors, o.ID+": "+o.Error)
		}
		switch o.Decision {
		case DecisionBlock:
			if res.Decision != DecisionBlock {
				res.Decision, res.Reason, res.BlockedBy = DecisionBlock, o.Reason, o.ID
			}
		case DecisionApprove:
			if !approved {
				approved, approveReason = true, o.Reason
			}
		}
		if o.cont != nil && !*o.cont && res.Continue == nil {
			f := false
			res.Continue, res.StopReason = &f, o.stop
		}
		if o.sysMsg != "" {
			msgs = append(msgs, o.sysMsg)
		}
		res.SuppressOutput = res.SuppressOutput || o.suppress
		for k, raw := range o.hso {
			var v any
			if json.Unmarshal(raw, &v) != nil {
				continue
			}
			if res.HookSpecificOutput == nil {
				res.HookSpecificOutput = map[string]any{}
			}
			switch k {
			case "additionalContext":
				if s, ok := v.(string); ok && s != "" {
					ctxs = append(ctxs, s)
				}
			case "permissionDecision":
				s, _ := v.(string)
				if rk := permissionRank[s]; rk > permRank {
					permRank = rk
					res.HookSpecificOutput[k] = s
					delete(res.HookSpecificOutput, "permissionDecisionReason")
					if rr, ok := o.hso["permissionDecisionReason"]; ok {
						var rs any
						if json.Unmarshal(rr, &rs) == nil {
							res.HookSpecificOutput["permissionDecisionReason"] = rs
						}
					}
				}
			case "permissionDecisionReason":
				// Goes with its permissionDecision.
			case "decision":
				// PermissionRequest: a denial beats a grant.
				prev, ok := res.HookSpecificOutput[k]
				if !ok || behavior(prev) != "deny" && behavior(v) == "deny" {
					res.HookSpecificOutput[k] = v
				}
			default:
				if _, ok := res.HookSpecificOutput[k]; !ok {
					res.HookSpecificOutput[k] = v
				}
			}
		}
	}
	if len(ctxs) > 0 {
		res.HookSpecificOutput["additionalContext"] = strings.Join(ctxs, "\n")
	}
	if res.HookSpecificOutput != nil {
		if _, ok := res.HookSpecificOutput["hookEventName"]; !ok {
			res.HookSpecificOutput["hookEventName"] = string(res.Event)
		}
	}
	res.SystemMessage = strings.Join(msgs, "\n")
	if res.Decision == DecisionBlock {
		if spec, ok := SpecOf(res.Event); ok {
			res.Effect = spec.Effect
		}
	}
	if res.Decision == "" && approved {
		res.Decision, res.Reason = DecisionApprove, approveReason
	}
}

// capBuffer keeps the first max bytes written and discards the rest, so a
// hook that floods its output cannot exhaust memory.
type capBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *capBuffer) Bytes() []byte  { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.Bytes() }
func (b *capBuffer) String() string { return string(b.Bytes()) }

func behavior(v any) string {
	if m, ok := v.(map[string]any); ok {
		s, _ := m["behavior"].(string)
		return s
	}
	return ""
}
