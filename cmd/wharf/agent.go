package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/plugin"
)

// AgentOptions are what every `wharf agent` verb takes: the home, its
// output, and the flags the verbs share.
type AgentOptions struct {
	IO   streams
	Home *home.Home
	agentOptions
}

// agentOptions are the flags every `wharf agent` subcommand shares:
// --plugin-dir, --full, --project.
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

// agentOpts are the AgentOptions of one `wharf agent` invocation.
func (a *app) agentOpts(flags *agentOptions) AgentOptions {
	return AgentOptions{IO: a.io(), Home: a.h, agentOptions: *flags}
}

// openRuntime builds the runtime of the home (home.Home.Runtime): the
// caller closes it.
func (opts *AgentOptions) openRuntime(ctx context.Context, o agent.Options) (*agent.Runtime, error) {
	return opts.Home.Runtime(ctx, opts.runtime(o, false))
}

// projectDir is CLAUDE_PROJECT_DIR for hooks and servers: the project
// directory the runtime loads from (--project, else the nearest directory
// with .wharf or .git).
func (opts *AgentOptions) projectDir() string {
	if opts.project != "" {
		if abs, err := filepath.Abs(opts.project); err == nil {
			return abs
		}
		return opts.project
	}
	return opts.Home.SettingsPaths().Project
}

// runtime is the home's RuntimeOptions for these flags.
func (opts *agentOptions) runtime(o agent.Options, session bool) home.RuntimeOptions {
	return home.RuntimeOptions{Agent: o, Revocations: testRevocations(), Project: opts.project, PluginDirs: opts.pluginDirs, Session: session}
}

func (o *agentOptions) mode() agent.Mode {
	if o.full {
		return agent.Full
	}
	return agent.CacheOnly
}

// loadSet loads the set once, as a session start would.
func (opts *AgentOptions) loadSet(ctx context.Context) (*agent.Set, error) {
	r, err := opts.openRuntime(ctx, agent.Options{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Load(ctx, opts.mode())
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

func newAgentComponentsCmd(a *app, flags *agentOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "components",
		Short: "List the live components of the approved plugin set, namespaced as an agent registers them",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := a.agentOpts(flags)
			return runAgentComponents(cmd.Context(), &opts)
		},
	}
}

// runAgentComponents prints the live components of the set a session
// started now would load.
func runAgentComponents(ctx context.Context, opts *AgentOptions) error {
	io := opts.IO
	set, err := opts.loadSet(ctx)
	if err != nil {
		return err
	}
	if io.JSON {
		rows := make([]componentJSON, 0, set.Len())
		for c := range set.All() {
			rows = append(rows, componentRow(c))
		}
		return io.printJSON(rows)
	}
	if set.Len() == 0 {
		io.printf("no components; see why with: wharf agent status\n")
		return nil
	}
	return writeComponentTable(io.Out, set)
}

// writeComponentTable writes the table of `wharf agent components`: a row
// per live component, read from the set in place, and one "name@source"
// string per plugin rather than one per row.
func writeComponentTable(w io.Writer, set *agent.Set) error {
	ids := map[plugin.ID]string{}
	cells := make([]string, 0, 4*(set.Len()+1))
	cells = append(cells, "KIND", "NAME", "SOURCE", "PLUGIN")
	for c := range set.All() {
		p, ok := ids[c.Plugin]
		if !ok && !c.Plugin.IsZero() {
			p = c.Plugin.String()
			ids[c.Plugin] = p
		}
		cells = append(cells, string(c.Kind), c.Name, c.Source, p)
	}
	if ok, err := writeColumns(w, cells, 4); ok {
		return err
	}
	tw := newTable(w)
	for i := 0; i < len(cells); i += 4 {
		tw.row(cells[i : i+4]...)
	}
	return tw.Flush()
}

// writeColumns writes cells, ncols to a row, aligned as the table's
// tabwriter aligns "cell\tcell\t...\n" lines when every line has ncols
// cells: each column but the last as wide as its widest cell (in runes)
// plus two spaces, the last cell as it is. It sizes the columns in one
// pass and writes in another, through one buffer; tabwriter keeps a cell
// record per cell and copies every row into its own buffer, which at a
// session start of 200 plugins (2,000 rows) cost about as much as
// choosing the rows. ok is false, and nothing is written, when a cell
// holds a byte tabwriter gives a meaning (tab, newline, vertical tab, form
// feed, its escape byte): the caller uses the table.
func writeColumns(w io.Writer, cells []string, ncols int) (ok bool, err error) {
	if ncols < 1 || len(cells)%ncols != 0 {
		return false, nil
	}
	widths := make([]int, ncols-1)
	size := 0
	for i, c := range cells {
		for k := 0; k < len(c); k++ {
			if b := c[k]; b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == tabwriter.Escape {
				return false, nil
			}
		}
		size += len(c)
		if j := i % ncols; j < ncols-1 {
			widths[j] = max(widths[j], utf8.RuneCountInString(c))
		}
	}
	for _, wd := range widths {
		size += (wd + 2) * len(cells) / ncols
	}
	out := make([]byte, 0, size+len(cells)/ncols)
	for i, c := range cells {
		out = append(out, c...)
		if j := i % ncols; j < ncols-1 {
			for n := widths[j] + 2 - utf8.RuneCountInString(c); n > 0; n-- {
				out = append(out, ' ')
			}
		} else {
			out = append(out, '\n')
		}
	}
	_, err = w.Write(out)
	return true, err
}

// table is a tabwriter over a buffer: tabwriter writes each cell and each
// run of padding to its writer on its own, which for a listing of a large
// home (thousands of rows) was thousands of write system calls to stdout.
type table struct {
	*tabwriter.Writer
	buf  *bufio.Writer
	line []byte
}

// row writes one row of cells (as Fprintf with "%s\t...\n" would, without
// formatting each value).
func (t *table) row(cells ...string) {
	t.line = t.line[:0]
	for i, c := range cells {
		if i > 0 {
			t.line = append(t.line, '\t')
		}
		t.line = append(t.line, c...)
	}
	t.line = append(t.line, '\n')
	t.Writer.Write(t.line)
}

func newTable(w io.Writer) *table {
	buf := bufio.NewWriterSize(w, 64<<10)
	return &table{Writer: tabwriter.NewWriter(buf, 0, 4, 2, ' ', 0), buf: buf}
}

// Flush writes the aligned table out.
func (t *table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	return t.buf.Flush()
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

func newAgentStatusCmd(a *app, flags *agentOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show every plugin's state for a session started now (active, demoted, failed, disabled) and why",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := a.agentOpts(flags)
			return runAgentStatus(cmd.Context(), &opts)
		},
	}
}

// runAgentStatus prints every plugin's state for a session started now,
// and why.
func runAgentStatus(ctx context.Context, opts *AgentOptions) error {
	io := opts.IO
	set, err := opts.loadSet(ctx)
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
	if io.JSON {
		return io.printJSON(out)
	}
	if len(out.Plugins) == 0 {
		io.printf("no plugins installed or loaded (%s load)\n", out.Mode)
	}
	tw := newTable(io.Out)
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
		io.printf("project folder %s: %s\n", out.Project.Folder, out.Project.Why)
	}
	for _, s := range out.Skipped {
		io.printf("not loaded: %s %s (%s): %s\n", s.Kind, s.Name, s.Source, s.Error.Message)
	}
	for _, p := range out.Plugins {
		for _, f := range p.Failed {
			io.printf("failed: %s: %s\n", p.ID, f)
		}
	}
	for _, w := range out.Warnings {
		io.warnf("%s", w)
	}
	return nil
}
