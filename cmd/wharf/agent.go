package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/internal/client/agentlink"
	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/plugin"
)

// agentOptions are the flags every `wharf agent` subcommand shares.
type agentOptions struct {
	pluginDirs []string
	full       bool
	project    string
}

// newAgentCmd is the parent of the agent runtime's verbs; subcommands add
// themselves to it with AddCommand.
func newAgentCmd(a *app) *cobra.Command {
	opts := &agentOptions{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Load the approved plugin set as an agent would and show its components and status",
		Args:  exactArgs(0, "a subcommand (components, status, mcp, ...)"),
		// Alone it prints its help, as every parent command does.
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	pf := cmd.PersistentFlags()
	pf.StringArrayVar(&opts.pluginDirs, "plugin-dir", nil, "load a plugin directory for this session only (source inline, never persisted); repeatable")
	pf.BoolVar(&opts.full, "full", false, "use the full loader: re-hash every plugin's content instead of the quick stat check")
	pf.StringVar(&opts.project, "project", "", "the project directory (default: the nearest directory with .wharf or .git)")
	cmd.AddCommand(newAgentComponentsCmd(a, opts))
	cmd.AddCommand(newAgentStatusCmd(a, opts))
	cmd.AddCommand(newAgentHookCmd(a, opts), newAgentMCPCmd(a, opts), newAgentServeCmd(a, opts), newAgentTrustCmd(a, opts))
	return cmd
}

// agentRuntime builds the runtime of this home: registry, policy, the
// marketplaces' entries and sources, the settings scopes and the session
// plugin dirs. The caller closes it.
func (a *app) agentRuntime(ctx context.Context, opts *agentOptions, o agent.Options) (*agent.Runtime, error) {
	st, err := a.Store()
	if err != nil {
		return nil, err
	}
	c, err := cache.New(cache.Options{Home: a.env.Home(), Store: st, Grace: a.cfg.Grace})
	if err != nil {
		return nil, err
	}
	pol, err := a.Policy()
	if err != nil {
		return nil, err
	}
	mgr, err := a.Marketplaces()
	if err != nil {
		return nil, err
	}
	cat, err := mgr.Catalog()
	if err != nil {
		return nil, err
	}
	return a.newAgentRuntime(ctx, opts, o, cat, c, pol, nil)
}

// newAgentRuntime wires a runtime over a registry, the marketplaces' entries
// and sources, policy, the settings scopes and the session plugin dirs.
// leaser, when not nil, leases the version dirs the session uses.
func (a *app) newAgentRuntime(ctx context.Context, opts *agentOptions, o agent.Options, cat *marketplace.Catalog, c *cache.Cache, pol *policy.Engine, leaser agentlink.Leaser) (*agent.Runtime, error) {
	sources := map[string]*plugin.MarketplaceSource{}
	for _, m := range cat.Marketplaces() {
		src := m.Known.Source
		sources[m.Known.Name] = &src
	}
	paths := a.settingsPaths()
	if opts.project != "" {
		abs, err := filepath.Abs(opts.project)
		if err != nil {
			return nil, usageError(err)
		}
		paths.Project = abs
	}
	a.usedPlugins = true
	o.Home = a.env.Home()
	// A home this process cannot write keeps the policy memo and the
	// component index in memory: reading needs neither file.
	o.NoMemo = o.NoMemo || a.readOnlyHome()
	o.Project = paths.Project
	o.ExtraManagedDir = paths.ExtraManagedDir
	o.Policy = agentlink.Policy(pol).(*agent.Policy)
	o.Entries = func(id plugin.ID) *plugin.Entry {
		if hit, err := cat.Lookup(id); err == nil {
			return hit.Entry
		}
		return nil
	}
	w := agentlink.Wiring{Registry: c, Revocations: a.revocations(),
		MarketplaceSource: func(name string) *plugin.MarketplaceSource { return sources[name] }}
	if leaser != nil {
		w.Leaser = leaser
	}
	agentlink.Wire(&o, w)
	r, err := agent.Open(o)
	if err != nil {
		return nil, err
	}
	for _, d := range opts.pluginDirs {
		if err := r.AddPluginDir(ctx, d); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

func (o *agentOptions) mode() agent.Mode {
	if o.full {
		return agent.Full
	}
	return agent.CacheOnly
}

// loadAgentSet loads the set once, as a session start would.
func (a *app) loadAgentSet(cmd *cobra.Command, opts *agentOptions) (*agent.Set, error) {
	r, err := a.agentRuntime(cmd.Context(), opts, agent.Options{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Load(cmd.Context(), opts.mode())
}

// componentJSON is one row of `wharf agent components --json` (FORMATS.md).
type componentJSON struct {
	Kind   plugin.ComponentKind `json:"kind"`
	Name   string               `json:"name"`
	Plugin string               `json:"plugin,omitempty"`
	Source string               `json:"source"`
	Path   string               `json:"path,omitempty"`
}

func componentRow(c agent.Component) componentJSON {
	row := componentJSON{Kind: c.Kind, Name: c.Name, Source: c.Source, Path: c.Path}
	if !c.Plugin.IsZero() {
		row.Plugin = c.Plugin.String()
	}
	return row
}

func newAgentComponentsCmd(a *app, opts *agentOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "components",
		Short: "List the live components of the approved plugin set, namespaced as an agent registers them",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := a.loadAgentSet(cmd, opts)
			if err != nil {
				return err
			}
			rows := []componentJSON{}
			for _, c := range set.Components() {
				rows = append(rows, componentRow(c))
			}
			if a.cfg.JSON {
				return a.printJSON(rows)
			}
			if len(rows) == 0 {
				a.printf("no components; see why with: wharf agent status\n")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KIND\tNAME\tSOURCE\tPLUGIN")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Kind, r.Name, r.Source, r.Plugin)
			}
			return tw.Flush()
		},
	}
}

// statusJSON is `wharf agent status --json`.
type statusJSON struct {
	Mode     string               `json:"mode"`
	Project  *agent.FolderTrust   `json:"project,omitempty"`
	Plugins  []agent.PluginStatus `json:"plugins"`
	Skipped  []skippedJSON        `json:"skipped"`
	Warnings []string             `json:"warnings"`
}

type skippedJSON struct {
	componentJSON
	Error load.ErrorDetail `json:"error"`
}

func newAgentStatusCmd(a *app, opts *agentOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show every plugin's state for a session started now (active, demoted, failed, disabled) and why",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := a.loadAgentSet(cmd, opts)
			if err != nil {
				return err
			}
			out := statusJSON{Mode: set.Mode().String(), Plugins: set.Plugins(), Skipped: []skippedJSON{}, Warnings: set.Warnings()}
			if pt := set.ProjectTrust(); pt.Folder != "" {
				out.Project = &pt
			}
			if out.Warnings == nil {
				out.Warnings = []string{}
			}
			for _, s := range set.Skipped() {
				out.Skipped = append(out.Skipped, skippedJSON{componentRow(s.Component), load.Detail(s.Err)})
			}
			if a.cfg.JSON {
				return a.printJSON(out)
			}
			if len(out.Plugins) == 0 {
				a.printf("no plugins installed or loaded (%s load)\n", out.Mode)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			if len(out.Plugins) > 0 {
				fmt.Fprintln(tw, "PLUGIN\tVERSION\tSOURCE\tSTATUS\tCOMPONENTS\tWHY")
			}
			for _, p := range out.Plugins {
				var why []string
				if p.Forced != "" {
					why = append(why, "forced "+p.Forced+" by policy")
				}
				if p.Chain != "" {
					why = append(why, p.Chain)
				} else {
					for _, d := range p.ErrorDetails {
						why = append(why, rowNote(load.ErrorDetail(d)))
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", p.ID, p.Version, p.Source, p.Status, p.Components, strings.Join(why, "; "))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if out.Project != nil {
				a.printf("project folder %s: %s\n", out.Project.Folder, out.Project.Why)
			}
			for _, s := range out.Skipped {
				a.printf("not loaded: %s %s (%s): %s\n", s.Kind, s.Name, s.Source, s.Error.Message)
			}
			for _, p := range out.Plugins {
				for _, f := range p.Failed {
					a.printf("failed: %s: %s\n", p.ID, f)
				}
			}
			for _, w := range out.Warnings {
				a.warnf("%s", w)
			}
			return nil
		},
	}
}
