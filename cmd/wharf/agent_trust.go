package main

import (
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

func newAgentTrustCmd(a *app, opts *agentOptions) *cobra.Command {
	var revoke, list bool
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
			home := a.env.Home()
			if list {
				folders, err := agent.TrustedFolders(home)
				if err != nil {
					return err
				}
				if a.cfg.JSON {
					if folders == nil {
						folders = []agent.TrustedFolder{}
					}
					return a.printJSON(trustJSON{Folders: folders})
				}
				if len(folders) == 0 {
					a.printf("no trusted folders\n")
					return nil
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "FOLDER\tTRUSTED AT")
				for _, f := range folders {
					fmt.Fprintf(tw, "%s\t%s\n", f.Path, f.Trusted.Format("2006-01-02 15:04:05Z"))
				}
				return tw.Flush()
			}
			dir := a.agentProject(opts)
			if len(args) == 1 {
				dir = args[0]
			}
			if dir == "" {
				return usageError(fmt.Errorf("no project folder found here; pass the folder to trust"))
			}
			if revoke {
				p, err := agent.CanonicalFolder(dir)
				if err != nil {
					return usageError(err)
				}
				found, err := agent.UntrustFolder(cmd.Context(), home, dir)
				if err != nil {
					return err
				}
				if a.cfg.JSON {
					return a.printJSON(trustJSON{Folder: p, Removed: found})
				}
				if found {
					a.printf("%s is no longer trusted\n", p)
				} else {
					a.printf("%s was not trusted itself (a trusted parent folder still trusts it; see wharf agent trust --list)\n", p)
				}
				return nil
			}
			p, err := agent.TrustFolder(cmd.Context(), home, dir)
			if err != nil {
				return err
			}
			if a.cfg.JSON {
				return a.printJSON(trustJSON{Folder: p, Trusted: true})
			}
			a.printf("trusted %s: its hooks and MCP servers load at the next session start or reload\n", p)
			return nil
		},
	}
	cmd.Flags().BoolVar(&revoke, "revoke", false, "forget the folder's trust")
	cmd.Flags().BoolVar(&list, "list", false, "list the trusted folders")
	return cmd
}
