package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/hooks"
	"github.com/wharfhq/wharf/plugin"
)

// typeHookBlocked is the error type of a blocking hook decision (exit 2).
const typeHookBlocked = "hook-blocked"

func newAgentHookCmd(a *app, opts *agentOptions) *cobra.Command {
	var parallel int
	cmd := &cobra.Command{
		Use:   "hook <Event>",
		Short: "Run the active set's hooks for one event (event JSON on stdin) and print the combined decision",
		Long: `Reads the event JSON on stdin, runs every hook of the active plugin set (and
of user, project and managed settings) that matches the event and its matcher
field (tool_name for tool events, source, trigger, agent_type... as Claude
Code documents per event), in parallel, each with its own timeout, and prints
the combined decision as JSON on stdout. Command hooks run as sh -c; http
hooks POST the event to their URL. Exit 2 when the combined decision blocks
(the reason on stderr; for PostToolUse and PostToolUseFailure the reason is
feedback for the model), 0 otherwise; a hook that fails, crashes or times
out, or exits 2 for an event that cannot be blocked, is reported and does not
block. Hooks of an untrusted project folder do not run (see wharf agent
trust). Events: ` + fmt.Sprint(plugin.HookEvents),
		Args: exactArgs(1, "an event name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ev, err := hooks.ReadEvent(args[0], cmd.InOrStdin(), 0)
			if err != nil {
				// Exit 1, never 2: a malformed event must not read as a block.
				return fmt.Errorf("%w; send the event object on stdin, e.g. echo '{\"tool_name\":\"Bash\"}' | wharf agent hook PreToolUse", err)
			}
			r, err := a.agentRuntime(cmd.Context(), opts, agent.Options{})
			if err != nil {
				return err
			}
			defer r.Close()
			set, err := r.Load(cmd.Context(), opts.mode())
			if err != nil {
				return err
			}
			cmds := hooks.FromSet(set, ev.Name, a.agentProject(opts))
			res := (&hooks.Runner{Parallel: parallel}).Run(cmd.Context(), ev, cmds)
			if err := a.printJSON(res); err != nil {
				return err
			}
			if !a.cfg.JSON {
				for _, e := range res.Errors {
					a.warnf("hook %s", e)
				}
			}
			if res.Blocked() {
				return &plugin.Error{Layer: plugin.LayerIntent, Type: typeHookBlocked, Object: string(ev.Name),
					Err: errors.New(res.Reason), Hint: "blocked by hook " + res.BlockedBy}
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&parallel, "parallel", 8, "hooks run at once at most")
	return cmd
}

// agentProject is CLAUDE_PROJECT_DIR for hooks and servers: the project
// directory the runtime loads from (--project, else the nearest directory
// with .wharf or .git).
func (a *app) agentProject(opts *agentOptions) string {
	if opts.project != "" {
		if abs, err := filepath.Abs(opts.project); err == nil {
			return abs
		}
		return opts.project
	}
	return a.settingsPaths().Project
}
