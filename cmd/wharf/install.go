package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/cli/shell"
	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/install"
	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/core/resolver"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// Installer builds the install use cases over this home: store, marketplaces,
// cache (with WHARF_SEED_DIRS), fetcher, policy and the settings scopes.
func (a *app) Installer() (*install.Installer, error) {
	a.usedPlugins = true
	st, err := a.Store()
	if err != nil {
		return nil, err
	}
	mgr, err := a.Marketplaces()
	if err != nil {
		return nil, err
	}
	grace := a.cfg.Grace
	if grace == 0 {
		// cache.Options reads 0 as "the default"; a configured 0s means
		// no grace at all, which the shortest positive duration is.
		grace = time.Nanosecond
	}
	c, err := cache.New(cache.Options{Home: a.env.Home(), Store: st, SeedDirs: cache.SeedDirsFromEnv(), Grace: grace})
	if err != nil {
		return nil, err
	}
	f := source.NewFetcher(a.cfg.Fetch)
	f.Progress = a.progress()
	f.ProgressBar = a.progress()
	if os.Getenv("WHARF_ALLOW_FILE_SOURCES") == "1" {
		f.AllowFileURLs = true
	}
	pol, err := a.Policy()
	if err != nil {
		return nil, err
	}
	// blockedMarketplaces decides every source a plugin's tree comes
	// from, and every redirect of its fetch, not only its marketplace.
	f.Gate = pol
	keys, err := a.trustedKeys()
	if err != nil {
		return nil, err
	}
	// Without a policy server, updates that add capabilities need the
	// user's --accept; with one, its admissions decide (admission.go).
	accepted := ""
	if !a.hasPolicyServer && a.env.Home() != "" {
		accepted = a.env.Accepted()
	}
	return install.New(install.Options{
		AcceptedFile: accepted,
		Marketplaces: mgr,
		Cache:        c,
		Fetcher:      f,
		Policy:       pol,
		Settings:     a.settingsPaths(),
		Keys:         keys,
		Progress:     a.progress(),
		ProgressBar:  a.progress(),
		Getenv:       a.getenv,
	})
}

// settingsPaths says where each scope's settings file is: the user scope
// under WHARF_HOME, the project scopes under the current directory's project
// (the nearest directory with a .wharf or .git, else the current directory).
func (a *app) settingsPaths() settings.Paths {
	wd, _ := os.Getwd()
	return settings.Paths{Home: a.env.Home(), Project: projectRoot(wd), ManagedDir: a.managedDir(), ExtraManagedDir: a.extraManagedDir()}
}

func projectRoot(wd string) string {
	for d := wd; ; d = filepath.Dir(d) {
		for _, marker := range []string{".wharf", ".git"} {
			if fi, err := os.Stat(filepath.Join(d, marker)); err == nil && fi.IsDir() {
				return d
			}
		}
		if filepath.Dir(d) == d {
			return wd
		}
	}
}

// trustedKeys reads the public keys in $WHARF_HOME/keys/*.pub.
func (a *app) trustedKeys() (trust.Keyring, error) { return shell.TrustedKeys(a.env.Keys()) }

// withInstaller runs fn with this home's installer, then prints its result:
// as JSON under --json, else with human.
func withInstaller[T any](a *app, cmd *cobra.Command, fn func(context.Context, *install.Installer) (T, error), human func(T) error) error {
	in, err := a.Installer()
	if err != nil {
		return err
	}
	res, err := fn(cmd.Context(), in)
	if err != nil {
		return err
	}
	if a.cfg.JSON {
		return a.printJSON(res)
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

func newInstallCmd(a *app) *cobra.Command {
	var scope string
	var force, allowDowngrade, dryRun bool
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
			sc, err := settings.ParseScope(scope)
			if err != nil {
				return usageError(err)
			}
			id, err := a.catalogID(args[0])
			if err != nil {
				return err
			}
			if dryRun {
				return withInstaller(a, cmd, func(ctx context.Context, in *install.Installer) (*dryRunInstall, error) {
					plan, err := in.PlanInstall(ctx, install.Request{ID: id, Scope: sc})
					if err != nil {
						return nil, err
					}
					return &dryRunInstall{DryRun: true, Plan: plan, Scope: string(sc)}, nil
				}, func(res *dryRunInstall) error {
					for _, w := range res.Plan.Warnings {
						a.warnf("%s", w)
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
						a.printf("%s %s%s\n", verb, st.ID, mark)
					}
					a.printf("would enable in the %s scope; nothing was changed (--dry-run)\n", res.Scope)
					return nil
				})
			}
			return a.withRequestAnswer(cmd.Context(), id, withInstaller(a, cmd, func(ctx context.Context, in *install.Installer) (*install.Result, error) {
				return in.Install(ctx, install.Request{ID: id, Scope: sc, Force: force, AllowDowngrade: allowDowngrade})
			}, func(res *install.Result) error {
				for _, w := range res.Warnings {
					a.warnf("%s", w)
				}
				for _, i := range res.Installed {
					mark := ""
					if i.Auto {
						mark = " (dependency)"
					}
					if i.Already {
						a.printf("%s %s is already installed%s\n", i.ID, i.Version, mark)
						continue
					}
					switch {
					case i.Downgrade:
						mark += " (downgraded from " + i.From + " as allowed by --allow-downgrade)"
					case i.From != "":
						mark += " (was " + i.From + ")"
					}
					a.printf("installed %s %s%s\n", i.ID, i.Version, mark)
				}
				a.printf("enabled in %s\n", res.Settings)
				return nil
			}))
		},
	}
	scopeFlag(cmd, &scope)
	dryRunFlag(cmd, &dryRun)
	cmd.Flags().BoolVar(&force, "force", false, "fetch again even when the version is cached")
	cmd.Flags().BoolVar(&allowDowngrade, "allow-downgrade", false, "allow replacing an installed plugin with a lower version, or with one that cannot be ordered against it")
	return cmd
}

func newUninstallCmd(a *app) *cobra.Command {
	var prune, dryRun bool
	cmd := &cobra.Command{
		Use:     "uninstall <name@marketplace>",
		Aliases: []string{"remove", "rm"},
		Short:   "Remove an installed plugin (warns about plugins that depend on it)",
		Args:    exactArgs(1, "one <name@marketplace>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withInstaller(a, cmd, func(ctx context.Context, in *install.Installer) (*install.Removed, error) {
				id, err := installedArg(in, args[0])
				if err != nil {
					return nil, err
				}
				var res *install.Removed
				if dryRun {
					res, err = in.PlanUninstall(ctx, id, prune)
				} else {
					res, err = in.Uninstall(ctx, id, prune)
				}
				if res != nil {
					res.DryRun = dryRun
					res.Removed = nonNil(res.Removed)
				}
				return res, err
			}, func(res *install.Removed) error {
				for _, w := range res.Warnings {
					a.warnf("%s", w)
				}
				printRemoved(a, res)
				return nil
			})
		},
	}
	dryRunFlag(cmd, &dryRun)
	cmd.Flags().BoolVar(&prune, "prune", false, "also remove dependencies installed only for it that nothing else needs")
	return cmd
}

func newPruneCmd(a *app) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:     "prune",
		Aliases: []string{"autoremove"},
		Short:   "Remove auto-installed dependencies that nothing needs any more",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withInstaller(a, cmd, func(ctx context.Context, in *install.Installer) (*install.Removed, error) {
				var res *install.Removed
				var err error
				if dryRun {
					res, err = in.PlanPrune(ctx)
				} else {
					res, err = in.Prune(ctx)
				}
				if res != nil {
					res.Removed = nonNil(res.Removed)
					res.DryRun = dryRun
				}
				return res, err
			}, func(res *install.Removed) error {
				if len(res.Removed) == 0 {
					a.printf("nothing to prune\n")
				}
				printRemoved(a, res)
				return nil
			})
		},
	}
	dryRunFlag(cmd, &dryRun)
	return cmd
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
func printRemoved(a *app, res *install.Removed) {
	verb := "removed"
	if res.DryRun {
		verb = "would remove"
	}
	for _, r := range res.Removed {
		a.printf("%s %s\n", verb, r)
	}
	if res.DryRun {
		a.printf("nothing was changed (--dry-run)\n")
	}
}

func newEnableCmd(a *app, on bool) *cobra.Command {
	verb, short := "enable", "Enable an installed plugin in a settings scope"
	if !on {
		verb, short = "disable", "Disable a plugin in a settings scope (it stays installed)"
	}
	var scope string
	cmd := &cobra.Command{
		Use:   verb + " <name@marketplace>",
		Short: short,
		Args:  exactArgs(1, "one <name@marketplace>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := settings.ParseScope(scope)
			if err != nil {
				return usageError(err)
			}
			in, err := a.Installer()
			if err != nil {
				return err
			}
			have, err := in.InstalledIDs()
			if err != nil {
				return err
			}
			id, err := installedID(args[0], have)
			if err != nil {
				return err
			}
			file, err := in.SetEnabled(cmd.Context(), id, sc, on)
			if err != nil {
				return err
			}
			if a.cfg.JSON {
				return a.printJSON(map[string]any{"id": id, "enabled": on, "scope": sc, "settingsFile": file})
			}
			a.printf("%sd %s in %s (reload running agents to apply)\n", verb, id, file)
			return nil
		},
	}
	scopeFlag(cmd, &scope)
	return cmd
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

func newListCmd(a *app) *cobra.Command {
	var rehash bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List installed plugins with their status: active, demoted, failed or disabled",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withInstaller(a, cmd, func(ctx context.Context, in *install.Installer) ([]load.Row, error) {
				rows, err := in.List(ctx, install.StatusOptions{Rehash: rehash, Revocations: a.revocations()})
				if err == nil {
					a.warnSettings()
				}
				return rows, err
			}, func(rows []load.Row) error {
				if len(rows) == 0 {
					a.printf("no plugins installed; find some with: wharf search\n")
					a.printRequestAnswers(cmd.Context())
					return nil
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
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
				a.printRequestAnswers(cmd.Context())
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&rehash, "rehash", false, "re-hash every plugin's content instead of the quick stat check")
	return cmd
}

// warnSettings warns about every problem of the settings files, as agent
// status does: a settings file that does not parse enables nothing, so its
// plugins show as disabled, and the user must learn why.
func (a *app) warnSettings() {
	snap, err := settings.Load(a.settingsPaths(), nil)
	if err != nil {
		a.warnf("settings: %v", err)
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
		a.warnf("settings: %s", msg)
		broken = broken || is.Severity == settings.SeverityError
	}
	if broken {
		a.warnf("plugins enabled only in a file that does not parse show as disabled until it is fixed")
	}
}

func newGCCmd(a *app) *cobra.Command {
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove cached plugin versions nothing uses, after their grace period",
		Long: `Remove cached plugin versions that no installed plugin and no running
session uses, once they have been orphaned for the grace period (--grace,
else gc-grace / WHARF_GC_GRACE, default 168h). --grace 0s removes them now.`,
		Example: "  wharf gc\n  wharf gc --grace 0s",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("grace") {
				if grace < 0 {
					return usageError(fmt.Errorf("--grace %s: must not be negative", grace))
				}
				a.cfg.Grace = grace
			}
			return withInstaller(a, cmd, func(ctx context.Context, in *install.Installer) (*cache.GCReport, error) {
				rep, err := in.GC(ctx)
				if rep != nil {
					rep.Removed = nonNil(rep.Removed)
					rep.Kept = nonNil(rep.Kept)
					rep.Temps = nonNil(rep.Temps)
				}
				return rep, err
			}, func(rep *cache.GCReport) error {
				for _, r := range rep.Removed {
					a.printf("removed %s\n", r)
				}
				for _, k := range rep.Kept {
					a.printf("kept %s (%s since %s)\n", k.Path, k.Reason, k.Since.Format("2006-01-02"))
				}
				if len(rep.Removed) == 0 && len(rep.Kept) == 0 {
					a.printf("nothing to collect\n")
				}
				return nil
			})
		},
	}
	cmd.Flags().DurationVar(&grace, "grace", 0, "keep orphaned versions this long (overrides gc-grace; 0s removes them now)")
	return cmd
}
