package main

import (
	"context"
	"errors"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/hooks"
	"github.com/wharfhq/wharf/agent/mcp"
	"github.com/wharfhq/wharf/agent/protocol"
)

func newAgentServeCmd(a *app, opts *agentOptions) *cobra.Command {
	var stdio, noMCP bool
	var maxLine int
	cmd := &cobra.Command{
		Use:   "serve --stdio",
		Short: "Serve the agent runtime over newline-delimited JSON on stdin/stdout (see docs/protocol.md)",
		Long: `Loads the approved plugin set (starting its MCP servers) and answers control
requests, one JSON object per line, on stdin; responses go to stdout, one
per line, and nothing else does: logs go to stderr. Ends when stdin closes,
after stopping every MCP server. The protocol is in docs/protocol.md and
docs/protocol.schema.json.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !stdio {
				return usageError(errors.New("wharf agent serve needs --stdio (the only transport)"))
			}
			// The policy is opened (and its warnings printed) before
			// anything starts; policy_check asks the session's runtime.
			if _, err := a.Policy(); err != nil {
				return err
			}
			aopts := a.agentOpts(opts)
			project := aopts.projectDir()
			var sup *mcp.Supervisor
			// Each load that made a set current may start a background
			// inventory report (at most once per inventory.interval).
			o := agent.Options{AfterLoad: func(*agent.Set) {
				if sup != nil {
					// A reload may have pulled new tool pins.
					a.afterMCPLoad(cmd.Context(), sup)
				}
				a.maybeReport(opts.pluginDirs, true)
			}}
			if !noMCP {
				sup = mcp.New(mcp.Options{ProjectDir: project, Stderr: a.stderr, Authorize: mcpSignIn(a.stderr), Pins: toolPins(a.h)})
				defer sup.Close()
				o.Activator = sup.Activator(nil)
			}
			r, err := a.agentSessionRuntime(cmd.Context(), opts, o)
			if err != nil {
				return err
			}
			defer r.Close()
			// The startup load; if it fails the session still starts, and
			// a reload request can load once the problem is fixed.
			if _, err := r.Load(cmd.Context(), opts.mode()); err != nil {
				a.warnf("startup load failed: %v; requests that need the set fail until a reload succeeds", err)
			}
			srv := &protocol.Server{
				Backend: &protocol.Runtime{Runtime: r, Project: project, Hooks: &hooks.Runner{}, MCP: sup},
				MaxLine: maxLine,
				Log:     a.stderr,
				Info:    protocol.Implementation{Name: "wharf", Version: buildVersion()},
			}
			return srv.Serve(cmd.Context(), cmd.InOrStdin(), a.stdout)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&stdio, "stdio", false, "serve on stdin/stdout (required)")
	f.BoolVar(&noMCP, "no-mcp", false, "do not start the set's MCP servers")
	f.IntVar(&maxLine, "max-line", protocol.DefaultMaxLine, "longest request line accepted, in bytes")
	return cmd
}

// buildVersion is the main module's version from the build info ("dev" for
// a build from a work tree).
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// agentSessionRuntime is AgentOptions.openRuntime for a long-lived session: its
// registry opens state.db for each read and closes it after (see
// home.RuntimeOptions.Session).
func (a *app) agentSessionRuntime(ctx context.Context, opts *agentOptions, o agent.Options) (*agent.Runtime, error) {
	return a.h.Runtime(ctx, opts.runtime(o, true))
}
