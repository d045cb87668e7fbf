package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/client/home"
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
func refreshInstaller(ctx context.Context, h *home.Home, args []string, offline bool) (*install.Installer, []plugin.ID, []marketMove, error) {
	var mgr *marketplace.Manager
	var err error
	if !offline {
		if mgr, err = h.MarketplaceWriter(); err != nil {
			return nil, nil, nil, err
		}
	}
	in, err := h.Installer()
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
		err = h.WithMarketplaceLock(ctx, func(ctx context.Context) error {
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
	if err := h.DoneWriting(); err != nil {
		return nil, nil, nil, err
	}
	return in, ids, moves, nil
}

// printMoves says, for humans, what refreshing the marketplaces did.
func printMoves(io streams, moves []marketMove) {
	for _, m := range moves {
		switch {
		case m.Error != "":
			io.warnf("could not refresh marketplace %s, using the copy on disk: %s", m.Name, m.Error)
		case m.Moved:
			io.printf("marketplace %s: %s -> %s\n", m.Name, short(m.From), short(m.To))
		case m.To != "":
			io.printf("marketplace %s: up to date (%s)\n", m.Name, short(m.To))
		default:
			io.printf("marketplace %s: re-read\n", m.Name)
		}
	}
}

// updateResult is update's --json output.
type updateResult struct {
	Marketplaces []marketMove      `json:"marketplaces"`
	Plugins      []install.Updated `json:"plugins"`
}

// UpdateOptions are wharf update's inputs.
type UpdateOptions struct {
	IO   streams
	Home *home.Home
	// Plugins are the arguments (name@marketplace, or the name of one
	// installed plugin); All updates every installed plugin instead.
	Plugins        []string
	All            bool
	Offline        bool
	AllowDowngrade bool
	DryRun         bool
	// Accept takes versions that add capabilities when no policy server
	// decides, and records them as accepted.
	Accept bool
}

func newUpdateCmd(a *app) *cobra.Command {
	opts := &UpdateOptions{}
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
			opts.IO, opts.Home, opts.Plugins = a.io(), a.h, args
			return runUpdate(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "update every installed plugin")
	cmd.Flags().BoolVar(&opts.AllowDowngrade, "allow-downgrade", false, "allow going to a lower version, or between a semantic version and one that cannot be ordered against it")
	cmd.Flags().BoolVar(&opts.Offline, "offline", false, "use the marketplace copies on disk; fetch nothing")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what update would do from the marketplace copies on disk (--json: the plan); fetch nothing and change nothing")
	cmd.Flags().BoolVar(&opts.Accept, "accept", false, "without a policy server: take versions that add capabilities (hooks, MCP servers, executables, tools, hosts) and record them as accepted; a policy server's approvals decide regardless")
	return cmd
}

// runUpdate fetches the marketplaces the plugins come from (unless
// Offline), then installs the versions they list now; with DryRun it
// prints what it would do from the copies on disk and changes nothing.
func runUpdate(ctx context.Context, opts *UpdateOptions) error {
	io := opts.IO
	args := opts.Plugins
	if len(args) == 0 && !opts.All {
		return usageError(fmt.Errorf("name a plugin to update, or pass --all"))
	}
	if len(args) > 0 && opts.All {
		return usageError(fmt.Errorf("pass plugin names or --all, not both"))
	}
	if opts.DryRun {
		return updateDryRun(ctx, io, opts.Home, args)
	}
	in, ids, moves, err := refreshInstaller(ctx, opts.Home, args, opts.Offline)
	if err != nil {
		return err
	}
	if !io.JSON {
		printMoves(io, moves)
	}
	res, err := in.Update(ctx, ids, install.UpdateOptions{AllowDowngrade: opts.AllowDowngrade, Accept: opts.Accept})
	if io.JSON {
		if err != nil {
			return err
		}
		if res == nil {
			res = []install.Updated{}
		}
		return io.printJSON(updateResult{Marketplaces: moves, Plugins: res})
	}
	if len(res) == 0 {
		io.printf("no plugins installed\n")
	}
	for _, u := range res {
		if u.Changed {
			io.printf("updated %s %s -> %s (%s)\n", u.ID, u.From, u.To, u.Note)
		} else {
			io.printf("%s %s: %s\n", u.ID, u.From, u.Note)
		}
		for _, w := range u.Warnings {
			io.warnf("%s", w)
		}
	}
	// Printed also when an update was refused: the others went ahead.
	return err
}

// updateDryRunResult is update --dry-run's --json output.
type updateDryRunResult struct {
	DryRun  bool               `json:"dryRun"`
	Plugins []install.Outdated `json:"plugins"`
}

// updateDryRun prints what update would do, from the marketplace copies on
// disk: it fetches nothing and changes nothing.
func updateDryRun(ctx context.Context, io streams, h *home.Home, args []string) error {
	in, ids, _, err := refreshInstaller(ctx, h, args, true)
	if err != nil {
		return err
	}
	res, err := in.Outdated(ids)
	if err != nil {
		return err
	}
	if io.JSON {
		return io.printJSON(updateDryRunResult{DryRun: true, Plugins: res})
	}
	for _, o := range res {
		switch o.Status {
		case install.OutdatedUpdate:
			io.printf("would update %s %s -> %s\n", o.ID, o.Installed, o.Available)
		default:
			note := o.Note
			if note == "" {
				note = "up to date"
			}
			io.printf("%s %s: %s\n", o.ID, o.Installed, note)
		}
	}
	io.printf("nothing was fetched or changed (--dry-run, from the marketplace copies on disk)\n")
	return nil
}

// outdatedResult is outdated's --json output.
type outdatedResult struct {
	Marketplaces []marketMove       `json:"marketplaces"`
	Plugins      []install.Outdated `json:"plugins"`
}

// OutdatedOptions are wharf outdated's inputs.
type OutdatedOptions struct {
	IO   streams
	Home *home.Home
	// Plugins are the arguments; none means every installed plugin.
	Plugins []string
	Offline bool
}

func newOutdatedCmd(a *app) *cobra.Command {
	opts := &OutdatedOptions{}
	cmd := &cobra.Command{
		Use:   "outdated [<name@marketplace>...]",
		Short: "List the installed plugins update would change (fetches their marketplaces first)",
		Long: `Outdated fetches the marketplaces the installed plugins come from (like
update; --offline uses the copies on disk), then lists, for each plugin, the
installed version, the version its marketplace lists now and what 'wharf
update' would do. It changes no plugin.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.IO, opts.Home, opts.Plugins = a.io(), a.h, args
			return runOutdated(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Offline, "offline", false, "use the marketplace copies on disk; fetch nothing")
	return cmd
}

// runOutdated fetches the plugins' marketplaces (unless Offline) and
// lists what update would do; it changes no plugin.
func runOutdated(ctx context.Context, opts *OutdatedOptions) error {
	io := opts.IO
	in, ids, moves, err := refreshInstaller(ctx, opts.Home, opts.Plugins, opts.Offline)
	if err != nil {
		return err
	}
	res, err := in.Outdated(ids)
	if err != nil {
		return err
	}
	if io.JSON {
		return io.printJSON(outdatedResult{Marketplaces: moves, Plugins: res})
	}
	printMoves(io, moves)
	if len(res) == 0 {
		io.printf("no plugins installed\n")
		return nil
	}
	tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
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
		io.printf("%d plugin(s) to update: wharf update --all\n", n)
	} else {
		io.printf("everything is up to date\n")
	}
	return nil
}
