package main

import (
	"context"
	"errors"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/hooks"
	"github.com/wharfhq/wharf/agent/mcp"
	"github.com/wharfhq/wharf/agent/protocol"
)

// AgentServeOptions are wharf agent serve's inputs.
type AgentServeOptions struct {
	AgentOptions
	// Stdio must be set: stdin and stdout are the only transport.
	Stdio bool
	// NoMCP keeps the set's MCP servers from starting.
	NoMCP bool
	// MaxLine is the longest request line accepted, in bytes.
	MaxLine int
	// Stdin carries the requests, one JSON object a line; the responses go
	// to IO.Out, logs to IO.Err.
	Stdin io.Reader
	// AfterLoad, when set, runs after each load that made a set current
	// (the command starts a background inventory report from it).
	AfterLoad func()
}

func newAgentServeCmd(a *app, flags *agentOptions) *cobra.Command {
	opts := &AgentServeOptions{}
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
			opts.AgentOptions, opts.Stdin = a.agentOpts(flags), cmd.InOrStdin()
			// Each load that made a set current may start a background
			// inventory report (at most once per inventory.interval).
			opts.AfterLoad = func() { a.maybeReport(flags.pluginDirs, true) }
			return runAgentServe(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.Stdio, "stdio", false, "serve on stdin/stdout (required)")
	f.BoolVar(&opts.NoMCP, "no-mcp", false, "do not start the set's MCP servers")
	f.IntVar(&opts.MaxLine, "max-line", protocol.DefaultMaxLine, "longest request line accepted, in bytes")
	return cmd
}

// runAgentServe serves the agent runtime over opts.Stdin and opts.IO.Out
// until stdin closes, then stops every MCP server.
func runAgentServe(ctx context.Context, opts *AgentServeOptions) error {
	io := opts.IO
	if !opts.Stdio {
		return usageError(errors.New("wharf agent serve needs --stdio (the only transport)"))
	}
	// The policy is opened (and its warnings printed) before anything
	// starts; policy_check asks the session's runtime.
	if _, err := opts.Home.Policy(); err != nil {
		return err
	}
	project := opts.projectDir()
	var sup *mcp.Supervisor
	o := agent.Options{AfterLoad: func(*agent.Set) {
		if sup != nil {
			// A reload may have pulled new tool pins.
			afterMCPLoad(ctx, io, opts.Home, sup)
		}
		if opts.AfterLoad != nil {
			opts.AfterLoad()
		}
	}}
	if !opts.NoMCP {
		sup = mcp.New(mcp.Options{ProjectDir: project, Stderr: io.Err, Authorize: mcpSignIn(io.Err), Pins: toolPins(opts.Home)})
		defer sup.Close()
		o.Activator = sup.Activator(nil)
	}
	// A long-lived session: its registry opens state.db for each read and
	// closes it after (see home.RuntimeOptions.Session).
	r, err := opts.Home.Runtime(ctx, opts.runtime(o, true))
	if err != nil {
		return err
	}
	defer r.Close()
	// The startup load; if it fails the session still starts, and a
	// reload request can load once the problem is fixed.
	if _, err := r.Load(ctx, opts.mode()); err != nil {
		io.warnf("startup load failed: %v; requests that need the set fail until a reload succeeds", err)
	}
	srv := &protocol.Server{
		Backend: &protocol.Runtime{Runtime: r, Project: project, Hooks: &hooks.Runner{}, MCP: sup},
		MaxLine: opts.MaxLine,
		Log:     io.Err,
		Info:    protocol.Implementation{Name: "wharf", Version: buildVersion()},
	}
	return srv.Serve(ctx, opts.Stdin, io.Out)
}

// buildVersion is the main module's version from the build info ("dev" for
// a build from a work tree).
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
