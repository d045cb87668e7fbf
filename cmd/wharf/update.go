package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/client/install"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/plugin"
)

// marketMove is what refreshing one marketplace did.
type marketMove struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
	Moved bool   `json:"moved"`
	// Error is why the refresh failed; the copy on disk was used instead.
	Error string `json:"error,omitempty"`
}

// refreshInstaller returns the installer for update and outdated after
// fetching, once, every marketplace the named plugins (all installed ones
// when ids is empty) come from, unless offline. A marketplace that cannot be
// fetched is reported and its copy on disk is used.
func (a *app) refreshInstaller(ctx context.Context, args []string, offline bool) (*install.Installer, []plugin.ID, []marketMove, error) {
	var mgr *marketplace.Manager
	var err error
	if !offline {
		if mgr, err = a.marketplaceWriter(); err != nil {
			return nil, nil, nil, err
		}
	}
	in, err := a.Installer()
	if err != nil {
		return nil, nil, nil, err
	}
	var ids []plugin.ID
	for _, arg := range args {
		id, err := installedArg(in, arg)
		if err != nil {
			return nil, nil, nil, err
		}
		ids = append(ids, id)
	}
	if offline {
		return in, ids, nil, nil
	}
	names, err := in.MarketplacesOf(ids)
	if err != nil {
		return nil, nil, nil, err
	}
	moves := []marketMove{}
	for _, name := range names {
		before, err := mgr.Get(name)
		if err != nil {
			continue // not a known marketplace: the plugin step says so
		}
		mv := marketMove{Name: name, Kind: string(before.Source.Kind), From: before.Commit}
		var after marketplace.Known
		err = a.withMarketplaceLock(ctx, func(ctx context.Context) error {
			var err error
			after, err = mgr.Update(ctx, name)
			return err
		})
		if err != nil {
			mv.Error = plainMessage(err.Error())
			if h := plugin.HintOf(err); h != "" {
				mv.Error += " (" + h + ")"
			}
			moves = append(moves, mv)
			continue
		}
		mv.To = after.Commit
		mv.Moved = after.Commit != before.Commit
		moves = append(moves, mv)
	}
	// From here on the command only reads the marketplaces: hold them
	// shared, like any reader, so no other command rewrites a clone while
	// plugins are copied out of it.
	a.mktWriter = false
	if _, err := a.Marketplaces(); err != nil {
		return nil, nil, nil, err
	}
	return in, ids, moves, nil
}

// printMoves says, for humans, what refreshing the marketplaces did.
func (a *app) printMoves(moves []marketMove) {
	for _, m := range moves {
		switch {
		case m.Error != "":
			a.warnf("could not refresh marketplace %s, using the copy on disk: %s", m.Name, m.Error)
		case m.Moved:
			a.printf("marketplace %s: %s -> %s\n", m.Name, short(m.From), short(m.To))
		case m.To != "":
			a.printf("marketplace %s: up to date (%s)\n", m.Name, short(m.To))
		default:
			a.printf("marketplace %s: re-read\n", m.Name)
		}
	}
}

// updateResult is update's --json output.
type updateResult struct {
	Marketplaces []marketMove      `json:"marketplaces"`
	Plugins      []install.Updated `json:"plugins"`
}

func newUpdateCmd(a *app) *cobra.Command {
	var all, offline, allowDowngrade, dryRun, accept bool
	cmd := &cobra.Command{
		Use:   "update [<name@marketplace>...] [--all] [--allow-downgrade]",
		Short: "Fetch the plugins' marketplaces, then install the versions they list now",
		Long: `Update first fetches the marketplaces the plugins come from (once each;
--offline uses the copies on disk), then installs the version each plugin's
marketplace lists now into its own directory; the old version stays for
running agents until garbage collection. Agents use the new version after
their next reload. 'wharf outdated' shows what update would do.

Update never goes to a lower version than the one installed (semver order),
nor between a semantic version and one it cannot order against it, unless
--allow-downgrade is given; it exits 4 and says why. Versions that are not
semantic on both sides (commit-derived versions of versionless plugins)
have no order and update freely.

With a policy server, a version it holds for review (it adds capabilities
over the approved one), denied or has not admitted is refused with what it
adds; the installed version stays active, and exit is 3. Without one, a
version that adds capabilities over the installed one (hooks, MCP servers,
executables, tools, hosts) is shown and kept back until --accept, which
records it in $WHARF_HOME/accepted.json. --accept never overrides a policy
server.`,
		Example: "  wharf update --all\n  wharf update deploy@corp --offline",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !all {
				return usageError(fmt.Errorf("name a plugin to update, or pass --all"))
			}
			if len(args) > 0 && all {
				return usageError(fmt.Errorf("pass plugin names or --all, not both"))
			}
			if dryRun {
				return a.updateDryRun(cmd.Context(), args)
			}
			in, ids, moves, err := a.refreshInstaller(cmd.Context(), args, offline)
			if err != nil {
				return err
			}
			if !a.cfg.JSON {
				a.printMoves(moves)
			}
			res, err := in.Update(cmd.Context(), ids, install.UpdateOptions{AllowDowngrade: allowDowngrade, Accept: accept})
			if a.cfg.JSON {
				if err != nil {
					return err
				}
				if res == nil {
					res = []install.Updated{}
				}
				return a.printJSON(updateResult{Marketplaces: moves, Plugins: res})
			}
			if len(res) == 0 {
				a.printf("no plugins installed\n")
			}
			for _, u := range res {
				if u.Changed {
					a.printf("updated %s %s -> %s (%s)\n", u.ID, u.From, u.To, u.Note)
				} else {
					a.printf("%s %s: %s\n", u.ID, u.From, u.Note)
				}
				for _, w := range u.Warnings {
					a.warnf("%s", w)
				}
			}
			// Printed also when an update was refused: the others went ahead.
			return err
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "update every installed plugin")
	cmd.Flags().BoolVar(&accept, "accept", false, "without a policy server: take versions that add capabilities (hooks, MCP servers, executables, tools, hosts) and record them as accepted; a policy server's approvals decide regardless")
	cmd.Flags().BoolVar(&allowDowngrade, "allow-downgrade", false, "allow going to a lower version, or between a semantic version and one that cannot be ordered against it")
	cmd.Flags().BoolVar(&offline, "offline", false, "use the marketplace copies on disk; fetch nothing")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what update would do from the marketplace copies on disk (--json: the plan); fetch nothing and change nothing")
	return cmd
}

// updateDryRunResult is update --dry-run's --json output.
type updateDryRunResult struct {
	DryRun  bool               `json:"dryRun"`
	Plugins []install.Outdated `json:"plugins"`
}

// updateDryRun prints what update would do, from the marketplace copies on
// disk: it fetches nothing and changes nothing.
func (a *app) updateDryRun(ctx context.Context, args []string) error {
	in, ids, _, err := a.refreshInstaller(ctx, args, true)
	if err != nil {
		return err
	}
	res, err := in.Outdated(ids)
	if err != nil {
		return err
	}
	if a.cfg.JSON {
		return a.printJSON(updateDryRunResult{DryRun: true, Plugins: res})
	}
	for _, o := range res {
		switch o.Status {
		case install.OutdatedUpdate:
			a.printf("would update %s %s -> %s\n", o.ID, o.Installed, o.Available)
		default:
			note := o.Note
			if note == "" {
				note = "up to date"
			}
			a.printf("%s %s: %s\n", o.ID, o.Installed, note)
		}
	}
	a.printf("nothing was fetched or changed (--dry-run, from the marketplace copies on disk)\n")
	return nil
}

// outdatedResult is outdated's --json output.
type outdatedResult struct {
	Marketplaces []marketMove       `json:"marketplaces"`
	Plugins      []install.Outdated `json:"plugins"`
}

func newOutdatedCmd(a *app) *cobra.Command {
	var offline bool
	cmd := &cobra.Command{
		Use:   "outdated [<name@marketplace>...]",
		Short: "List the installed plugins update would change (fetches their marketplaces first)",
		Long: `Outdated fetches the marketplaces the installed plugins come from (like
update; --offline uses the copies on disk), then lists, for each plugin, the
installed version, the version its marketplace lists now and what 'wharf
update' would do. It changes no plugin.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			in, ids, moves, err := a.refreshInstaller(cmd.Context(), args, offline)
			if err != nil {
				return err
			}
			res, err := in.Outdated(ids)
			if err != nil {
				return err
			}
			if a.cfg.JSON {
				return a.printJSON(outdatedResult{Marketplaces: moves, Plugins: res})
			}
			a.printMoves(moves)
			if len(res) == 0 {
				a.printf("no plugins installed\n")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PLUGIN\tINSTALLED\tAVAILABLE\tUPDATE\tNOTES")
			n := 0
			for _, o := range res {
				avail, what := o.Available, "-"
				if avail == "" {
					avail = "?"
				}
				switch o.Status {
				case install.OutdatedUpdate:
					what = "yes"
					n++
				case install.OutdatedUnknown:
					what = "maybe"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", o.ID, o.Installed, avail, what, o.Note)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if n > 0 {
				a.printf("%d plugin(s) to update: wharf update --all\n", n)
			} else {
				a.printf("everything is up to date\n")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&offline, "offline", false, "use the marketplace copies on disk; fetch nothing")
	return cmd
}
