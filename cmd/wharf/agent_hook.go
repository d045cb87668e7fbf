package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/hooks"
	"github.com/wharfhq/wharf/plugin"
)

// typeHookBlocked is the error type of a blocking hook decision (exit 2).
const typeHookBlocked = "hook-blocked"

func newAgentHookCmd(a *app, flags *agentOptions) *cobra.Command {
	opts := &AgentHookOptions{}
	cmd := &cobra.Command{
		Use:   "hook <Event>",
		Short: "Run the active set's hooks for one event (event JSON on stdin) and print the combined decision",
		Long: `Reads the event JSON on stdin, runs every hook of the active plugin set (and
of user, project and managed settings) that matches the event and its matcher
field (tool_name for tool events, source, trigger, agent_type... as Claude
Code documents per event), in parallel, each with its own timeout, and prints
the combined decision on stdout (as JSON with --json). Command hooks run as sh -c; http
hooks POST the event to their URL. Exit 2 when the combined decision blocks
(the reason on stderr; for PostToolUse and PostToolUseFailure the reason is
feedback for the model), 0 otherwise; a hook that fails, crashes or times
out, or exits 2 for an event that cannot be blocked, is reported and does not
block. Hooks of an untrusted project folder do not run (see wharf agent
trust). Events: ` + fmt.Sprint(plugin.HookEvents),
		Args: exactArgs(1, "an event name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.AgentOptions, opts.Event, opts.Stdin = a.agentOpts(flags), args[0], cmd.InOrStdin()
			return runAgentHook(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.Parallel, "parallel", 8, "hooks run at once at most")
	return cmd
}

// AgentHookOptions are wharf agent hook's inputs.
type AgentHookOptions struct {
	AgentOptions
	// Event is the event's name (PreToolUse, ...).
	Event string
	// Stdin holds the event's JSON object.
	Stdin io.Reader
	// Parallel is how many hooks run at once at most.
	Parallel int
}

// runAgentHook runs the active set's hooks for one event and prints the
// combined decision; a block is an error of type hook-blocked (exit 2).
func runAgentHook(ctx context.Context, opts *AgentHookOptions) error {
	out := opts.IO
	ev, err := hooks.ReadEvent(opts.Event, opts.Stdin, 0)
	if err != nil {
		// Exit 1, never 2: a malformed event must not read as a block.
		return fmt.Errorf("%w; send the event object on stdin, e.g. echo '{\"tool_name\":\"Bash\"}' | wharf agent hook PreToolUse", err)
	}
	r, err := opts.openRuntime(ctx, agent.Options{})
	if err != nil {
		return err
	}
	defer r.Close()
	set, err := r.Load(ctx, opts.mode())
	if err != nil {
		return err
	}
	cmds := hooks.FromSet(set, ev.Name, opts.projectDir())
	// Each invocation is a new runner: once hooks are remembered per
	// session under WHARF_HOME.
	res := (&hooks.Runner{Parallel: opts.Parallel, OnceDir: opts.Home.Paths().HooksOnce()}).Run(ctx, ev, cmds)
	if out.JSON {
		if err := out.printJSON(res); err != nil {
			return err
		}
	} else {
		printHookResult(out, res)
	}
	if res.Blocked() {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeHookBlocked, Object: string(ev.Name),
			Err: errors.New(res.Reason), Hint: "blocked by hook " + res.BlockedBy}
	}
	return nil
}

// printHookResult writes the combined decision for a person: the decision
// and its reason, what the hooks asked of the agent, and the hooks that
// failed or did not run (as warnings). --json prints the whole result.
func printHookResult(a streams, res *hooks.Result) {
	ran := 0
	for _, o := range res.Hooks {
		if o.Ran {
			ran++
		}
	}
	switch res.Decision {
	case hooks.DecisionBlock:
		a.printf("blocked by %s: %s\n", res.BlockedBy, res.Reason)
	case "":
		a.printf("no decision: %d of %d matching hook(s) ran; the agent goes on as usual\n", ran, len(res.Hooks))
	default:
		if res.Reason != "" {
			a.printf("%s: %s\n", res.Decision, res.Reason)
		} else {
			a.printf("%s\n", res.Decision)
		}
	}
	if res.Continue != nil && !*res.Continue {
		a.printf("stop the agent: %s\n", res.StopReason)
	}
	if res.SystemMessage != "" {
		a.printf("message: %s\n", res.SystemMessage)
	}
	keys := make([]string, 0, len(res.HookSpecificOutput))
	for k := range res.HookSpecificOutput {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := res.HookSpecificOutput[k]
		if s, ok := v.(string); ok {
			a.printf("%s: %s\n", k, s)
		} else if b, err := json.Marshal(v); err == nil {
			a.printf("%s: %s\n", k, b)
		}
	}
	for _, e := range res.Errors {
		a.warnf("hook %s", e)
	}
	for _, r := range res.Refused {
		a.warnf("hook refused: %s", r)
	}
	for _, n := range res.NotRun {
		a.warnf("hook not run: %s", n)
	}
}
