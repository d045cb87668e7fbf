package main

import (
	"context"
	"fmt"
	stdio "io"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/mcp"
	"github.com/wharfhq/wharf/agent/protocol"
)

func newAgentMCPCmd(a *app, opts *agentOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "MCP servers of the active plugin set",
		Args:  exactArgs(0, "a subcommand (list)"),
		// Alone it prints its help, as every parent command does.
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newAgentMCPListCmd(a, opts))
	return cmd
}

func newAgentMCPListCmd(a *app, flags *agentOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "Start the active set's MCP servers, list their tools under the names the model sees, and stop them",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := a.agentOpts(flags)
			return runAgentMCPList(cmd.Context(), &opts)
		},
	}
}

// runAgentMCPList starts the active set's MCP servers, prints their tools
// under the names the model sees (warnings for the servers that did not
// start), records what they listed for the inventory, and stops them.
func runAgentMCPList(ctx context.Context, opts *AgentOptions) error {
	io := opts.IO
	sup := mcp.New(mcp.Options{ProjectDir: opts.projectDir(), Authorize: mcpSignIn(io.Err), Pins: toolPins(opts.Home)})
	defer sup.Close()
	r, err := opts.openRuntime(ctx, agent.Options{Activator: sup.Activator(nil)})
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := r.Load(ctx, opts.mode()); err != nil {
		return err
	}
	recordMCP(io, opts.Home, sup.Status())
	out := protocol.MCPListToolsResponse{Tools: sup.Tools(), Servers: sup.Status()}
	if out.Tools == nil {
		out.Tools = []mcp.Tool{}
	}
	if out.Servers == nil {
		out.Servers = []mcp.Status{}
	}
	if io.JSON {
		if err := io.printJSON(out); err != nil {
			return err
		}
	} else {
		if len(out.Servers) == 0 {
			io.printf("no MCP servers in the active set; see why with: wharf agent status\n")
			return nil
		}
		tw := newTable(io.Out)
		fmt.Fprintln(tw, "TOOL\tSERVER\tDESCRIPTION")
		for _, t := range out.Tools {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Server, firstLine(t.Description))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, s := range out.Servers {
		if s.State != mcp.StateRunning {
			io.warnf("%s", s.Error)
		}
	}
	return nil
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// mcpSignIn is the MCP supervisor's sign-in step for remote servers with a
// pre-registered OAuth client: it prints the page to open on stderr (never
// stdout, which carries --json output and the stdio protocol). The browser's
// redirect returns to the supervisor's loopback listener.
func mcpSignIn(stderr stdio.Writer) func(_ context.Context, server, authURL string) error {
	return func(_ context.Context, server, authURL string) error {
		fmt.Fprintf(stderr, "wharf: MCP server %s needs you to sign in; open this page in a browser:\n  %s\n", server, authURL)
		return nil
	}
}
