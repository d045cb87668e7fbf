package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/client/install"
	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/core/resolver"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// Installer builds the install use cases over this home
// (home.Home.Installer).
func (a *app) Installer() (*install.Installer, error) { return a.h.Installer() }

// installerDo runs fn with h's installer, then prints its result on io:
// as JSON under --json, else with human.
func installerDo[T any](ctx context.Context, io streams, h *home.Home, fn func(context.Context, *install.Installer) (T, error), human func(T) error) error {
	in, err := h.Installer()
	if err != nil {
		return err
	}
	res, err := fn(ctx, in)
	if err != nil {
		return err
	}
	if io.JSON {
		return io.printJSON(res)
	}
	return human(res)
}

// nonNil makes an empty list print as [] rather than null under --json.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func parseIDArg(s string) (plugin.ID, error) { return plugin.ParseID(s) }

func scopeFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "scope", "user", "settings scope to write: user, project or local")
}

// InstallOptions are wharf install's inputs.
type InstallOptions struct {
	IO   streams
	Home *home.Home
	// Plugin is the argument: name@marketplace, or a name one known
	// marketplace lists.
	Plugin         string
	Scope          string
	Force          bool
	AllowDowngrade bool
	DryRun         bool
	// RequestAnswer, when set, adds to the install's outcome the answer
	// to the client's request for the plugin (or how to ask for it).
	RequestAnswer func(context.Context, plugin.ID, error) error
}

func newInstallCmd(a *app) *cobra.Command {
	opts := &InstallOptions{}
	cmd := &cobra.Command{
		Use:     "install <name@marketplace | name>",
		Aliases: []string{"i"},
		Short:   "Install a plugin and the dependencies it needs",
		Long: `Install a plugin and the dependencies it needs. A bare name works when exactly one known marketplace lists it.
Replacing an installed plugin with a lower version, or with one that cannot be
ordered against it, is refused (exit 4) unless --allow-downgrade is given, as
for wharf update.`,
		Example: "  wharf install deploy@corp\n  wharf install deploy@corp --scope project\n  wharf install deploy",
		Args:    exactArgs(1, "one <name@marketplace>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.IO, opts.Home, opts.Plugin, opts.RequestAnswer = a.io(), a.h, args[0], a.withRequestAnswer
			return runInstall(cmd.Context(), opts)
		},
	}
	scopeFlag(cmd, &opts.Scope)
	dryRunFlag(cmd, &opts.DryRun)
	cmd.Flags().BoolVar(&opts.Force, "force", false, "fetch again even when the version is cached")
	cmd.Flags().BoolVar(&opts.AllowDowngrade, "allow-downgrade", false, "allow replacing an installed plugin with a lower version, or with one that cannot be ordered against it")
	return cmd
}

// runInstall installs opts.Plugin with the dependencies it needs and
// enables it in opts.Scope; with DryRun it prints the plan and changes
// nothing.
func runInstall(ctx context.Context, opts *InstallOptions) error {
	io := opts.IO
	sc, err := settings.ParseScope(opts.Scope)
	if err != nil {
		return usageError(err)
	}
	id, err := catalogID(opts.Home, opts.Plugin)
	if err != nil {
		return err
	}
	if opts.DryRun {
		return installerDo(ctx, io, opts.Home, func(ctx context.Context, in *install.Installer) (*dryRunInstall, error) {
			plan, err := in.PlanInstall(ctx, install.Request{ID: id, Scope: sc})
			if err != nil {
				return nil, err
			}
			return &dryRunInstall{DryRun: true, Plan: plan, Scope: string(sc)}, nil
		}, func(res *dryRunInstall) error {
			for _, w := range res.Plan.Warnings {
				io.warnf("%s", w)
			}
			for _, st := range res.Plan.Steps {
				verb := "would install"
				if st.Role == resolver.RoleInstalled {
					verb = "already installed"
				}
				mark := ""
				if !st.RequiredBy.IsZero() {
					mark = " (dependency of " + st.RequiredBy.String() + ")"
				}
				io.printf("%s %s%s\n", verb, st.ID, mark)
			}
			io.printf("would enable in the %s scope; nothing was changed (--dry-run)\n", res.Scope)
			return nil
		})
	}
	answer := opts.RequestAnswer
	if answer == nil {
		answer = func(_ context.Context, _ plugin.ID, err error) error { return err }
	}
	return answer(ctx, id, installerDo(ctx, io, opts.Home, func(ctx context.Context, in *install.Installer) (*install.Result, error) {
		return in.Install(ctx, install.Request{ID: id, Scope: sc, Force: opts.Force, AllowDowngrade: opts.AllowDowngrade})
	}, func(res *install.Result) error {
		for _, w := range res.Warnings {
			io.warnf("%s", w)
		}
		for _, i := range res.Installed {
			mark := ""
			if i.Auto {
				mark = " (dependency)"
			}
			if i.Already {
				io.printf("%s %s is already installed%s\n", i.ID, i.Version, mark)
				continue
			}
			switch {
			case i.Downgrade:
				mark += " (downgraded from " + i.From + " as allowed by --allow-downgrade)"
			case i.From != "":
				mark += " (was " + i.From + ")"
			}
			io.printf("installed %s %s%s\n", i.ID, i.Version, mark)
		}
		io.printf("enabled in %s\n", res.Settings)
		return nil
	}))
}

// UninstallOptions are wharf uninstall's inputs.
type UninstallOptions struct {
	IO   streams
	Home *home.Home
	// Plugin is the argument: name@marketplace, or the name of one
	// installed plugin.
	Plugin string
	Prune  bool
	DryRun bool
}

func newUninstallCmd(a *app) *cobra.Command {
	opts := &UninstallOptions{}
	cmd := &cobra.Command{
		Use:     "uninstall <name@marketplace>",
		Aliases: []string{"remove", "rm"},
		Short:   "Remove an installed plugin (warns about plugins that depend on it)",
		Args:    exactArgs(1, "one <name@marketplace>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.IO, opts.Home, opts.Plugin = a.io(), a.h, args[0]
			return runUninstall(cmd.Context(), opts)
		},
	}
	dryRunFlag(cmd, &opts.DryRun)
	cmd.Flags().BoolVar(&opts.Prune, "prune", false, "also remove dependencies installed only for it that nothing else needs")
	return cmd
}

// runUninstall removes opts.Plugin (and, with Prune, the dependencies
// nothing else needs); with DryRun it prints what it would remove.
func runUninstall(ctx context.Context, opts *UninstallOptions) error {
	io := opts.IO
	return installerDo(ctx, io, opts.Home, func(ctx context.Context, in *install.Installer) (*install.Removed, error) {
		id, err := installedArg(in, opts.Plugin)
		if err != nil {
			return nil, err
		}
		var res *install.Removed
		if opts.DryRun {
			res, err = in.PlanUninstall(ctx, id, opts.Prune)
		} else {
			res, err = in.Uninstall(ctx, id, opts.Prune)
		}
		if res != nil {
			res.DryRun = opts.DryRun
			res.Removed = nonNil(res.Removed)
		}
		return res, err
	}, func(res *install.Removed) error {
		for _, w := range res.Warnings {
			io.warnf("%s", w)
		}
		printRemoved(io, res)
		return nil
	})
}

// PruneOptions are wharf prune's inputs.
type PruneOptions struct {
	IO     streams
	Home   *home.Home
	DryRun bool
}

func newPruneCmd(a *app) *cobra.Command {
	opts := &PruneOptions{}
	cmd := &cobra.Command{
		Use:     "prune",
		Aliases: []string{"autoremove"},
		Short:   "Remove auto-installed dependencies that nothing needs any more",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.Home = a.io(), a.h
			return runPrune(cmd.Context(), opts)
		},
	}
	dryRunFlag(cmd, &opts.DryRun)
	return cmd
}

// runPrune removes the auto-installed dependencies nothing needs any
// more; with DryRun it prints what it would remove.
func runPrune(ctx context.Context, opts *PruneOptions) error {
	io := opts.IO
	return installerDo(ctx, io, opts.Home, func(ctx context.Context, in *install.Installer) (*install.Removed, error) {
		var res *install.Removed
		var err error
		if opts.DryRun {
			res, err = in.PlanPrune(ctx)
		} else {
			res, err = in.Prune(ctx)
		}
		if res != nil {
			res.Removed = nonNil(res.Removed)
			res.DryRun = opts.DryRun
		}
		return res, err
	}, func(res *install.Removed) error {
		if len(res.Removed) == 0 {
			io.printf("nothing to prune\n")
		}
		printRemoved(io, res)
		return nil
	})
}

// dryRunInstall is install --dry-run's result (--json).
type dryRunInstall struct {
	DryRun bool           `json:"dryRun"`
	Plan   *resolver.Plan `json:"plan"`
	Scope  string         `json:"scope"`
}

func dryRunFlag(cmd *cobra.Command, p *bool) {
	cmd.Flags().BoolVar(p, "dry-run", false, "print what would be done (--json: the plan) and change nothing")
}

// printRemoved prints what uninstall or prune removed, or would remove.
func printRemoved(io streams, res *install.Removed) {
	verb := "removed"
	if res.DryRun {
		verb = "would remove"
	}
	for _, r := range res.Removed {
		io.printf("%s %s\n", verb, r)
	}
	if res.DryRun {
		io.printf("nothing was changed (--dry-run)\n")
	}
}

// EnableOptions are wharf enable's and wharf disable's inputs.
type EnableOptions struct {
	IO   streams
	Home *home.Home
	// Plugin is the argument: name@marketplace, or the name of one
	// installed plugin.
	Plugin string
	Scope  string
	// On enables; false disables.
	On bool
}

func newEnableCmd(a *app, on bool) *cobra.Command {
	verb, short := "enable", "Enable an installed plugin in a settings scope"
	if !on {
		verb, short = "disable", "Disable a plugin in a settings scope (it stays installed)"
	}
	opts := &EnableOptions{On: on}
	cmd := &cobra.Command{
		Use:   verb + " <name@marketplace>",
		Short: short,
		Args:  exactArgs(1, "one <name@marketplace>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.IO, opts.Home, opts.Plugin = a.io(), a.h, args[0]
			return runEnable(cmd.Context(), opts)
		},
	}
	scopeFlag(cmd, &opts.Scope)
	return cmd
}

// runEnable enables (On) or disables opts.Plugin in opts.Scope's settings
// file; the plugin stays installed either way.
func runEnable(ctx context.Context, opts *EnableOptions) error {
	verb := "enable"
	if !opts.On {
		verb = "disable"
	}
	sc, err := settings.ParseScope(opts.Scope)
	if err != nil {
		return usageError(err)
	}
	in, err := opts.Home.Installer()
	if err != nil {
		return err
	}
	have, err := in.InstalledIDs()
	if err != nil {
		return err
	}
	id, err := installedID(opts.Plugin, have)
	if err != nil {
		return err
	}
	file, err := in.SetEnabled(ctx, id, sc, opts.On)
	if err != nil {
		return err
	}
	if opts.IO.JSON {
		return opts.IO.printJSON(map[string]any{"id": id, "enabled": opts.On, "scope": sc, "settingsFile": file})
	}
	opts.IO.printf("%sd %s in %s (reload running agents to apply)\n", verb, id, file)
	return nil
}

// installedArg parses a plugin argument of a command on installed plugins:
// a bare name resolves when exactly one installed plugin has it; a full id
// is taken as given (the command says when it is not installed).
func installedArg(in *install.Installer, arg string) (plugin.ID, error) {
	if strings.Contains(arg, "@") {
		return parseIDArg(arg)
	}
	have, err := in.InstalledIDs()
	if err != nil {
		return plugin.ID{}, err
	}
	return installedID(arg, have)
}

// ListOptions are wharf list's inputs.
type ListOptions struct {
	IO   streams
	Home *home.Home
	// Rehash re-hashes every plugin's content instead of the quick stat
	// check.
	Rehash bool
	// PrintRequests, when set, prints the client's requests and their
	// answers after the list.
	PrintRequests func(context.Context)
}

func newListCmd(a *app) *cobra.Command {
	opts := &ListOptions{}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List installed plugins with their status: active, demoted, failed or disabled",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.Home, opts.PrintRequests = a.io(), a.h, a.printRequestAnswers
			return runList(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Rehash, "rehash", false, "re-hash every plugin's content instead of the quick stat check")
	return cmd
}

// runList prints the installed plugins with their status, as the load
// pass of an agent session decides it, and warns about settings files
// that do not parse.
func runList(ctx context.Context, opts *ListOptions) error {
	io := opts.IO
	return installerDo(ctx, io, opts.Home, func(ctx context.Context, in *install.Installer) ([]load.Row, error) {
		rows, err := in.List(ctx, install.StatusOptions{Rehash: opts.Rehash, Revocations: revocations(opts.Home)})
		if err == nil {
			warnSettings(io, opts.Home)
		}
		return rows, err
	}, func(rows []load.Row) error {
		printRequests := func() {
			if opts.PrintRequests != nil {
				opts.PrintRequests(ctx)
			}
		}
		if len(rows) == 0 {
			io.printf("no plugins installed; find some with: wharf search\n")
			printRequests()
			return nil
		}
		tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PLUGIN\tVERSION\tSCOPE\tSTATUS\tNOTES")
		for _, r := range rows {
			var notes []string
			if r.Auto {
				notes = append(notes, "auto")
			}
			if r.Forced != "" {
				notes = append(notes, "forced "+r.Forced+" by policy")
			}
			if r.Delisted {
				notes = append(notes, "no longer listed by its marketplace")
			}
			if r.Chain != "" {
				notes = append(notes, r.Chain)
			} else if len(r.ErrorDetails) > 0 {
				notes = append(notes, rowNote(r.ErrorDetails[0]))
			}
			if len(r.Failed) > 0 {
				notes = append(notes, fmt.Sprintf("%d component(s) failed: %s", len(r.Failed), strings.Join(r.Failed, "; ")))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Version, r.Scope, r.Status, strings.Join(notes, "; "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		printRequests()
		return nil
	})
}

// warnSettings warns about every problem of the settings files, as agent
// status does: a settings file that does not parse enables nothing, so its
// plugins show as disabled, and the user must learn why.
func warnSettings(io streams, h *home.Home) {
	snap, err := settings.Load(h.SettingsPaths(), nil)
	if err != nil {
		io.warnf("settings: %v", err)
		return
	}
	broken := false
	seen := map[string]bool{}
	for _, is := range snap.Merged.Issues {
		msg := plainMessage(is.String())
		if seen[msg] { // one file read as two scopes (home inside the project)
			continue
		}
		seen[msg] = true
		io.warnf("settings: %s", msg)
		broken = broken || is.Severity == settings.SeverityError
	}
	if broken {
		io.warnf("plugins enabled only in a file that does not parse show as disabled until it is fixed")
	}
}

// GCOptions are wharf gc's inputs.
type GCOptions struct {
	IO   streams
	Home *home.Home
	// Grace, when GraceSet, overrides gc-grace; 0 removes orphans now.
	Grace    time.Duration
	GraceSet bool
}

func newGCCmd(a *app) *cobra.Command {
	opts := &GCOptions{}
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove cached plugin versions nothing uses, after their grace period",
		Long: `Remove cached plugin versions that no installed plugin and no running
session uses, once they have been orphaned for the grace period (--grace,
else gc-grace / WHARF_GC_GRACE, default 168h). --grace 0s removes them now.`,
		Example: "  wharf gc\n  wharf gc --grace 0s",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.Home, opts.GraceSet = a.io(), a.h, cmd.Flags().Changed("grace")
			return runGC(cmd.Context(), opts)
		},
	}
	cmd.Flags().DurationVar(&opts.Grace, "grace", 0, "keep orphaned versions this long (overrides gc-grace; 0s removes them now)")
	return cmd
}

// runGC removes the cached versions nothing uses once their grace has
// passed, and says what it kept and why.
func runGC(ctx context.Context, opts *GCOptions) error {
	io := opts.IO
	if opts.GraceSet {
		if opts.Grace < 0 {
			return usageError(fmt.Errorf("--grace %s: must not be negative", opts.Grace))
		}
		opts.Home.SetGrace(opts.Grace)
	}
	return installerDo(ctx, io, opts.Home, func(ctx context.Context, in *install.Installer) (*cache.GCReport, error) {
		rep, err := in.GC(ctx)
		if rep != nil {
			rep.Removed = nonNil(rep.Removed)
			rep.Kept = nonNil(rep.Kept)
			rep.Temps = nonNil(rep.Temps)
		}
		return rep, err
	}, func(rep *cache.GCReport) error {
		for _, r := range rep.Removed {
			io.printf("removed %s\n", r)
		}
		for _, k := range rep.Kept {
			io.printf("kept %s (%s since %s)\n", k.Path, k.Reason, k.Since.Format("2006-01-02"))
		}
		if n := len(rep.CapabilitySets); n > 0 {
			io.printf("removed %d kept capability sets no installed version uses\n", n)
		}
		if len(rep.Removed) == 0 && len(rep.Kept) == 0 && len(rep.CapabilitySets) == 0 {
			io.printf("nothing to collect\n")
		}
		return nil
	})
}
