package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/plugin"
)

// showResult is `wharf show --json`.
type showResult struct {
	ID             string                     `json:"id"`
	Marketplace    string                     `json:"marketplace"`
	Version        string                     `json:"version"`
	Dependencies   []string                   `json:"dependencies"`
	Entry          *plugin.Entry              `json:"entry"`
	ResolvedSource marketplace.ResolvedSource `json:"resolvedSource"`
	Components     []showComponent            `json:"components"`
	// AlwaysOnTokens is the context the plugin adds to every session, as
	// `claude plugin details` estimates it; absent until the plugin's
	// files are at hand (a source fetched only at install).
	AlwaysOnTokens *int                `json:"alwaysOnTokens,omitempty"`
	Diagnostics    []plugin.Diagnostic `json:"diagnostics,omitempty"`
	// Capabilities and Findings are read from the plugin's tree; absent
	// until its files are at hand.
	Capabilities *capability.Set      `json:"capabilities,omitempty"`
	Findings     []capability.Finding `json:"findings,omitempty"`

	manifest plugin.Manifest // the effective manifest (plugin.json merged with the entry)
}

type showComponent struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	Path string `json:"path,omitempty"`
}

// ShowOptions are wharf show's inputs.
type ShowOptions struct {
	IO   streams
	Home *home.Home
	// Plugin is the argument: name@marketplace, or a name one known
	// marketplace lists.
	Plugin string
}

func newShowCmd(a *app) *cobra.Command {
	opts := &ShowOptions{}
	return &cobra.Command{
		Use:   "show <plugin@marketplace>",
		Short: "Show a plugin's entry, where it comes from and its components",
		Long:  "Show a plugin's marketplace entry and its resolved source. For plugins stored inside the marketplace (relative sources) the components are listed too; other sources are fetched only at install.",
		Args:  exactArgs(1, "one plugin@marketplace"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.IO, opts.Home, opts.Plugin = a.io(), a.h, args[0]
			return runShow(cmd.Context(), opts)
		},
	}
}

// runShow prints opts.Plugin's catalog entry, its resolved source and,
// when its files are at hand, its components and capabilities.
func runShow(_ context.Context, opts *ShowOptions) error {
	io := opts.IO
	mgr, err := opts.Home.Marketplaces()
	if err != nil {
		return err
	}
	cat, err := mgr.Catalog()
	if err != nil {
		return err
	}
	id, err := resolveInCatalog(cat, opts.Plugin)
	if err != nil {
		return err
	}
	hit, err := cat.Lookup(id)
	if err != nil {
		return err
	}
	rs, err := hit.Resolve(opts.Home.Getenv)
	if err != nil {
		return err
	}
	res := showResult{ID: id.String(), Marketplace: id.Source, Entry: hit.Entry, ResolvedSource: rs,
		Components: []showComponent{}, Dependencies: []string{}}
	manifest := hit.Entry.Manifest
	if rs.Dir != "" {
		p, diags, err := plugin.Load(rs.Dir, hit.Entry)
		if err != nil {
			return err
		}
		manifest = p.Manifest
		res.Diagnostics = diags
		caps, err := capability.Of(p)
		if err != nil {
			return err
		}
		res.Capabilities, res.Findings = &caps.Capabilities, caps.Findings
		cost := p.AlwaysOnTokens()
		res.AlwaysOnTokens = &cost
		for _, c := range p.Components {
			res.Components = append(res.Components, showComponent{Kind: string(c.Kind), Name: c.Name, Path: c.Path})
		}
	}
	res.manifest = manifest
	res.Version = manifest.Version
	if res.Version == "" {
		res.Version = "unknown"
	}
	for _, d := range manifest.Dependencies {
		res.Dependencies = append(res.Dependencies, d.Resolve(id.Source).String())
	}
	if io.JSON {
		return io.printJSON(res)
	}
	printShow(io, res)
	return nil
}

func printShow(io streams, r showResult) {
	e, m := r.Entry, r.manifest
	io.printf("%s  %s\n", r.ID, r.Version)
	if m.Description != "" {
		io.printf("  %s\n", strings.Join(strings.Fields(m.Description), " "))
	}
	field := func(k, v string) {
		if v != "" {
			io.printf("  %-13s %s\n", k+":", v)
		}
	}
	if m.Author != nil {
		field("author", m.Author.Name)
	}
	field("category", e.Category)
	field("tags", strings.Join(e.Tags, ", "))
	field("keywords", strings.Join(m.Keywords, ", "))
	field("homepage", m.Homepage)
	field("license", m.License)
	if !e.IsStrict() {
		field("strict", "false (the marketplace entry defines the plugin)")
	}
	field("depends on", strings.Join(r.Dependencies, ", "))
	if r.AlwaysOnTokens != nil {
		field("always-on", fmt.Sprintf("~%d tokens added to every session", *r.AlwaysOnTokens))
	}
	field("integrity", e.Integrity)
	rs := r.ResolvedSource
	switch {
	case rs.Dir != "":
		field("source", string(rs.Kind)+" "+rs.Dir)
	case rs.URL != "":
		s := string(rs.Kind) + " " + rs.URL
		if rs.Path != "" {
			s += " path " + rs.Path
		}
		if rev := firstNonEmpty(rs.SHA, rs.Ref); rev != "" {
			s += " @ " + rev
		}
		field("source", s)
	case rs.Package != "":
		field("source", strings.TrimSpace(fmt.Sprintf("npm %s %s %s", rs.Package, rs.Version, rs.Registry)))
	}
	if len(r.Components) > 0 {
		io.printf("  components:\n")
		for _, c := range r.Components {
			io.printf("    %-12s %s\n", c.Kind, c.Name)
		}
	} else if rs.Dir == "" {
		io.printf("  components:   listed once installed (source is fetched at install)\n")
	}
	for _, d := range r.Diagnostics {
		io.printf("  %s\n", d)
	}
	if r.Capabilities != nil {
		printCapabilities(io, &capability.Report{Capabilities: *r.Capabilities, Findings: r.Findings})
	}
	io.printf("Install with: wharf install %s\n", r.ID)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
