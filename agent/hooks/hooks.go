// Package hooks runs the command hooks of the active plugin set for one
// event and combines their answers the way Claude Code does.
//
// Every matching hook runs as `sh -c <command>` with the event JSON on its
// stdin and the plugin's environment (CLAUDE_PLUGIN_ROOT, WHARF_PLUGIN_ROOT,
// CLAUDE_PLUGIN_DATA, CLAUDE_PROJECT_DIR), in its own process group, under a
// timeout (the hook's own, else 60 s) after which the whole group is killed.
// Hooks run in parallel, bounded; their results are combined in the
// deterministic order of the hooks, not in the order they finish:
//
//   - exit 2 blocks, with stderr as the reason;
//   - exit 0 with stdout JSON {"decision":"block"} blocks with its reason,
//     {"decision":"approve"} approves;
//   - any other exit code, a crash (signal), a timeout or a hook that cannot
//     start is a non-blocking error reported with the hook's identity;
//   - hookSpecificOutput objects are merged and passed through.
//
// One broken hook never stops the others.
package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
	// Type is "" for a command hook; other types (prompt) are not run.
	Type    string `json:"type,omitempty"`
	Command string `json:"command"`
	// Timeout is 0 for DefaultTimeout.
	Timeout time.Duration `json:"-"`
	// Env is added to the runner's base environment.
	Env []string `json:"-"`
	// Dir is the working directory; "" for the runner's.
	Dir string `json:"-"`

	plugin plugin.ID
}

// FromSet returns the hooks of the Set for event, in the Set's order (which
// is deterministic), with the environment of their component. Run runs the
// command hooks and reports the others (prompt hooks need a model: the
// agent runs them) in Result.NotRun.
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
				hk := Hook{
					ID:      fmt.Sprintf("%s:%s[%d][%d]", base, event, i, j),
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
				out = append(out, hk)
			}
		}
	}
	return out
}

// Gate decides whether a hook from a source kind may run; id is the plugin
// of a plugin hook. *policy.Engine implements it (allowManagedHooksOnly,
// strictPluginOnlyCustomization). It must be safe for concurrent use.
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
	// DurationMS is the wall time of the run.
	DurationMS int64 `json:"durationMs"`

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
	// or a duplicate of an earlier hook's command and environment.
	NotRun []string `json:"notRun,omitempty"`
}

// Blocked reports whether the combined decision blocks.
func (r *Result) Blocked() bool { return r.Decision == DecisionBlock }

// Matches reports whether the hook's matcher selects target. An empty or
// "*" matcher selects everything, as does any matcher for events that have no
// matcher target (target ""); otherwise the matcher is a regular expression
// that must match the whole target ("Edit|Write" selects Edit and Write, not
// NotebookEdit).
func Matches(matcher, target string) (bool, error) {
	if matcher == "" || matcher == "*" {
		return true, nil
	}
	re, err := regexp.Compile("^(?:" + matcher + ")$")
	if err != nil {
		return false, fmt.Errorf("matcher %q is not a valid regular expression: %v", matcher, err)
	}
	return re.MatchString(target), nil
}

// Run runs the hooks of ev's event that match ev and combines their results.
// It never fails: every problem of a single hook is in its Outcome.
func (r *Runner) Run(ctx context.Context, ev Event, hooks []Hook) *Result {
	res := &Result{Event: ev.Name, Hooks: []Outcome{}}
	var todo []int
	// Identical commands with the same environment run once, as in Claude
	// Code (a user and a project settings file often repeat a hook).
	seen := map[string]string{}
	for _, h := range hooks {
		if h.Event != "" && h.Event != ev.Name {
			continue
		}
		o := Outcome{Hook: h}
		if _, ok := matcherField[ev.Name]; ok {
			ok, err := Matches(h.Matcher, ev.Target)
			if err != nil {
				o.Error = err.Error()
				res.Hooks = append(res.Hooks, o)
				continue
			}
			if !ok {
				continue
			}
		}
		if r.Gate != nil {
			if err := r.Gate.AllowHook(ctx, h.Source, h.pluginID()); err != nil {
				res.Refused = append(res.Refused, h.ID+": "+err.Error())
				continue
			}
		}
		if h.Type != "" && h.Type != "command" {
			res.NotRun = append(res.NotRun, h.ID+": "+h.Type+" hook; the agent runs it")
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
			r.runOne(ctx, ev, o)
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

// runOne runs one hook and fills o. It recovers from nothing but never
// panics on hostile output: every parse is checked.
func (r *Runner) runOne(ctx context.Context, ev Event, o *Outcome) {
	timeout := o.Timeout
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
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, shell, "-c", o.Command)
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
	switch o.ExitCode {
	case 0:
		parseOutput(o, stdout.Bytes())
	case 2:
		o.Decision = DecisionBlock
		o.Reason = strings.TrimSpace(stderr.String())
		if o.Reason == "" {
			o.Reason = "blocked by hook " + o.ID + " (exit code 2)"
		}
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

func parseOutput(o *Outcome, out []byte) {
	t := bytes.TrimSpace(out)
	if len(t) == 0 {
		return
	}
	if t[0] != '{' {
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
		o.Decision = ho.Decision
		o.Reason = ho.Reason
	default:
		o.Error = fmt.Sprintf("stdout decision %q is neither \"block\" nor \"approve\"; ignored", ho.Decision)
	}
	if ho.Decision == DecisionBlock && o.Reason == "" {
		o.Reason = "blocked by hook " + o.ID
	}
	o.hso = ho.HookSpecificOutput
	o.cont, o.stop, o.sysMsg, o.suppress = ho.Continue, ho.StopReason, ho.SystemMessage, ho.SuppressOutput
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
