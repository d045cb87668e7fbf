package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/agent"
)

// trustJSON is `wharf agent trust --json`.
type trustJSON struct {
	Folder  string                `json:"folder,omitempty"`
	Trusted bool                  `json:"trusted"`
	Removed bool                  `json:"removed,omitempty"`
	Folders []agent.TrustedFolder `json:"folders,omitempty"`
}

func newAgentTrustCmd(a *app, flags *agentOptions) *cobra.Command {
	opts := &AgentTrustOptions{}
	cmd := &cobra.Command{
		Use:   "trust [path]",
		Short: "Trust a project folder: its hooks and MCP servers (and plugins only it enables) may run",
		Long: `Code from a project folder (the hooks and MCP servers of its .wharf settings,
and the hooks and servers of plugins that only its settings enable) loads only
once the folder is trusted, as Claude Code asks once per folder. Its commands,
skills and agents load either way. Trust is remembered per path (symlinks
resolved) in $WHARF_HOME/trusted-folders.json and covers the folder's
subfolders. Managed settings may pre-trust folders (trustedProjectFolders) or
forbid project code (disableProjectCode: true), whatever is trusted here.
A running session sees the change at its next reload.

The path defaults to the project directory (--project, else the nearest
directory with .wharf or .git).`,
		Args: maxArgs(1, "at most one folder"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.AgentOptions, opts.Folder = a.agentOpts(flags), ""
			if len(args) == 1 {
				opts.Folder = args[0]
			}
			return runAgentTrust(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Revoke, "revoke", false, "forget the folder's trust")
	cmd.Flags().BoolVar(&opts.List, "list", false, "list the trusted folders")
	return cmd
}

// AgentTrustOptions are wharf agent trust's inputs.
type AgentTrustOptions struct {
	AgentOptions
	// Folder is the folder to trust or forget; "" means the project
	// directory.
	Folder string
	// Revoke forgets the folder's trust; List lists the trusted folders.
	Revoke, List bool
}

// runAgentTrust trusts a project folder, forgets one (Revoke), or lists
// the trusted ones (List).
func runAgentTrust(ctx context.Context, opts *AgentTrustOptions) error {
	io := opts.IO
	home := opts.Home.Paths().Home()
	if opts.List {
		folders, err := agent.TrustedFolders(home)
		if err != nil {
			return err
		}
		if io.JSON {
			if folders == nil {
				folders = []agent.TrustedFolder{}
			}
			return io.printJSON(trustJSON{Folders: folders})
		}
		if len(folders) == 0 {
			io.printf("no trusted folders\n")
			return nil
		}
		tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FOLDER\tTRUSTED AT")
		for _, f := range folders {
			fmt.Fprintf(tw, "%s\t%s\n", f.Path, f.Trusted.Format("2006-01-02 15:04:05Z"))
		}
		return tw.Flush()
	}
	dir := opts.Folder
	if dir == "" {
		dir = opts.projectDir()
	}
	if dir == "" {
		return usageError(fmt.Errorf("no project folder found here; pass the folder to trust"))
	}
	if opts.Revoke {
		p, err := agent.CanonicalFolder(dir)
		if err != nil {
			return usageError(err)
		}
		found, err := agent.UntrustFolder(ctx, home, dir)
		if err != nil {
			return err
		}
		if io.JSON {
			return io.printJSON(trustJSON{Folder: p, Removed: found})
		}
		if found {
			io.printf("%s is no longer trusted\n", p)
		} else {
			io.printf("%s was not trusted itself (a trusted parent folder still trusts it; see wharf agent trust --list)\n", p)
		}
		return nil
	}
	p, err := agent.TrustFolder(ctx, home, dir)
	if err != nil {
		return err
	}
	if io.JSON {
		return io.printJSON(trustJSON{Folder: p, Trusted: true})
	}
	io.printf("trusted %s: its hooks and MCP servers load at the next session start or reload\n", p)
	return nil
}
