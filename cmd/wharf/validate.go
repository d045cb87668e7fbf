package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/plugin"
)

// validateResult is `wharf validate --json`.
type validateResult struct {
	Path        string              `json:"path"`
	OK          bool                `json:"ok"`
	Profile     string              `json:"profile,omitempty"`
	Errors      int                 `json:"errors"`
	Warnings    int                 `json:"warnings"`
	Diagnostics []plugin.Diagnostic `json:"diagnostics"`
	// Provides is what a plugin directory adds to a session (absent for a
	// marketplace or a manifest file).
	Provides *plugin.Provides `json:"provides,omitempty"`
	// Capabilities and Findings are read from a plugin directory's tree
	// (absent for a marketplace or a plugin that does not load).
	Capabilities *capability.Set      `json:"capabilities,omitempty"`
	Findings     []capability.Finding `json:"findings,omitempty"`
}

// ValidateOptions are wharf validate's inputs.
type ValidateOptions struct {
	IO streams
	// Path is the marketplace or plugin directory, or the manifest file.
	Path string
	validateOptions
}

// validateOptions are the flags of wharf validate.
type validateOptions struct {
	strict, verbose bool
	profile         string
}

func newValidateCmd(a *app) *cobra.Command {
	opts := &ValidateOptions{}
	o := &opts.validateOptions
	cmd := &cobra.Command{
		Use:   "validate <path>",
		Short: "Check a marketplace or plugin directory, or a manifest file",
		Long: "Check a marketplace (its marketplace.json and every plugin stored in it), a plugin directory, or a single marketplace.json / plugin.json. " +
			"Prints every problem with file, line and field: wharf's checks, Claude Code's verdicts (claude plugin validate and its install-time schema), " +
			"and everything `wharf install` would refuse (a symlink that is absolute or leaves the plugin, a tree over the install size limit, " +
			"a dependency the marketplace does not list, a cycle), so CI can gate on it. " +
			"MCP and LSP servers that cannot be used are warnings: the rest of the plugin still loads. " +
			"For a plugin directory it also lists its capabilities read from the tree (hooks and what they run, servers and the packages they fetch at run time, executables, allowed tools, sensitive settings, hosts) and advisory content findings with file and line, " +
			"what the plugin provides (hooks with event, type and command; servers; components), " +
			"the hosts it names (declared in plugin.json's network.hosts or not) and the parts whose hosts cannot be read, " +
			"and runs the plugin directory's checks (README of 40 words, LICENSE or license, icon of 512-2048 px): warnings, " +
			"errors with --profile directory. " +
			"Exits 1 when there are errors (with --strict, warnings count as errors).",
		Args: exactArgs(1, "one <path>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.IO, opts.Path = a.io(), args[0]
			return runValidate(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&o.strict, "strict", false, "treat warnings (unknown keys, missing metadata) as errors")
	cmd.Flags().BoolVar(&o.verbose, "verbose", false, "also warn about what rarely helps (no version on an entry fetched from elsewhere)")
	cmd.Flags().StringVar(&o.profile, "profile", "", `also fail on what the plugin directory refuses a submission for (no README of 40 words, no license): "directory"`)
	return cmd
}

// runValidate prints every problem of opts.Path and, for a plugin
// directory, what it provides and its capabilities; errors (warnings too,
// with --strict) are an error of type manifest-invalid (exit 1).
func runValidate(ctx context.Context, opts *ValidateOptions) error {
	io, path := opts.IO, opts.Path
	res, verr := validatePath(ctx, path, opts.validateOptions)
	if res == nil {
		return verr // the path could not be read at all
	}
	if io.JSON {
		if err := io.printJSON(res); err != nil {
			return err
		}
		return verr
	}
	for _, d := range res.Diagnostics {
		io.printf("%s\n", d)
	}
	if res.Provides != nil {
		printProvides(io, res.Provides)
	}
	if res.Capabilities != nil {
		printCapabilities(io, &capability.Report{Capabilities: *res.Capabilities, Findings: res.Findings})
	}
	if verr == nil {
		printValidateSummary(io, path)
		io.printf("%s: ok (%d warnings)\n", path, res.Warnings)
	}
	return verr
}

// validatePath is `wharf validate`: the result, and the error to exit
// with. A nil result means the path could not be read at all.
func validatePath(ctx context.Context, path string, o validateOptions) (*validateResult, error) {
	rep, verr := plugin.ValidateReport(path, plugin.ValidateOptions{Strict: o.strict, Verbose: o.verbose, Profile: o.profile})
	if rep == nil || verr != nil && len(rep.Diagnostics) == 0 {
		return nil, verr
	}
	diags := rep.Diagnostics
	extra := installChecks(ctx, path)
	extra = append(extra, reservedNameCheck(path)...)
	if o.strict {
		for i := range extra {
			if extra[i].Severity == plugin.SeverityWarning {
				extra[i].Severity = plugin.SeverityError
				extra[i].Message += " (strict)"
			}
		}
	}
	diags = append(diags, extra...)
	res := &validateResult{Path: path, Profile: o.profile, Diagnostics: diags, Provides: rep.Provides}
	if rep.Provides != nil {
		if caps, err := capability.Read(pluginDirOf(path), nil); err == nil {
			res.Capabilities, res.Findings = &caps.Capabilities, caps.Findings
		} else if errors.Is(err, capability.ErrTooManyFiles) {
			res.Diagnostics = append(res.Diagnostics, plugin.Diagnostic{Severity: plugin.SeverityError, File: path, Message: err.Error()})
			diags = res.Diagnostics
		}
	}
	if res.Diagnostics == nil {
		res.Diagnostics = []plugin.Diagnostic{}
	}
	for _, d := range diags {
		if d.Severity == plugin.SeverityError {
			res.Errors++
		} else {
			res.Warnings++
		}
	}
	if verr == nil && res.Errors > 0 {
		verr = &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeManifestInvalid, Object: path,
			Err: fmt.Errorf("%d problem(s); first: %s", res.Errors, firstErrorDiag(diags)), Hint: "fix the listed problems and run wharf validate again"}
	}
	res.OK = verr == nil
	return res, verr
}

func nonEmpty(s ...string) []string {
	out := s[:0]
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// printProvides lists what a plugin provides and the hosts it names.
func printProvides(a streams, p *plugin.Provides) {
	var lines []string
	for _, h := range p.Hooks {
		what := h.Command
		switch {
		case h.Prompt != "":
			what = h.Prompt
		case h.URL != "":
			what = h.URL
		}
		lines = append(lines, strings.Join(nonEmpty("hook", h.Event, h.Matcher, h.Type, fmt.Sprintf("%q", what)), " "))
	}
	for _, s := range p.MCPServers {
		lines = append(lines, strings.Join(nonEmpty(append([]string{"mcp-server", s.Name, s.Type, s.Target}, s.Args...)...), " "))
	}
	for _, s := range p.LSPServers {
		lines = append(lines, strings.Join(nonEmpty(append([]string{"lsp-server", s.Name, s.Target}, s.Args...)...), " "))
	}
	for _, set := range []struct {
		kind  string
		names []string
	}{{"skill", p.Skills}, {"command", p.Commands}, {"agent", p.Agents}, {"output-style", p.OutputStyles}} {
		for _, n := range set.names {
			lines = append(lines, set.kind+" "+n)
		}
	}
	if len(lines) == 0 {
		return
	}
	a.printf("provides:\n")
	for _, l := range lines {
		a.printf("  %s\n", l)
	}
	var hosts []string
	for _, h := range p.Hosts.Named {
		if h.Declared {
			hosts = append(hosts, h.Host+" (declared)")
		} else {
			hosts = append(hosts, h.Host+" (not declared)")
		}
	}
	if len(hosts) > 0 {
		a.printf("hosts: %s\n", strings.Join(hosts, ", "))
	} else if p.Hosts.Declared != nil {
		a.printf("hosts: none declared\n")
	}
	if len(p.Hosts.Unread) > 0 {
		count := map[string]int{}
		var kinds []string
		for _, u := range p.Hosts.Unread {
			if count[u.Kind] == 0 {
				kinds = append(kinds, u.Kind)
			}
			count[u.Kind]++
		}
		var parts []string
		for _, k := range kinds {
			parts = append(parts, fmt.Sprintf("%s (%d)", k, count[k]))
		}
		a.printf("hosts not read for: %s (they run processes)\n", strings.Join(parts, ", "))
	}
}

func firstErrorDiag(diags []plugin.Diagnostic) string {
	for _, d := range diags {
		if d.Severity == plugin.SeverityError {
			return d.String()
		}
	}
	return ""
}

// installChecks checks every plugin stored at path (a marketplace's
// relative plugins, or a plugin directory) as `wharf install` copies it,
// with the fetcher install uses (source.Fetcher.Check: the same walk and
// tree code, without keeping the copy), so validate refuses what install
// would: absolute or escaping symlinks, special files, trees over the size
// and entry limits.
func installChecks(ctx context.Context, path string) []plugin.Diagnostic {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	var targets []copyTarget
	mfile := path
	if fi.IsDir() {
		mfile = plugin.MarketplaceFile(path)
	}
	switch {
	case fi.IsDir() && !fileExists(mfile):
		targets = append(targets, copyTarget{name: filepath.Base(path), dir: path, file: path})
	case strings.HasSuffix(mfile, ".json") && filepath.Base(mfile) != "plugin.json":
		m, _, err := plugin.ReadMarketplaceFile(mfile)
		if err != nil {
			return nil // reported by the manifest checks
		}
		root := marketplace.RootOf(mfile)
		for i := range m.Plugins {
			e := &m.Plugins[i]
			if e.Source.Kind != plugin.SourceRelative {
				continue
			}
			if dir, err := e.LocalDir(root); err == nil {
				targets = append(targets, copyTarget{name: e.Name, dir: dir, file: mfile, field: fmt.Sprintf("plugins[%d].source", i)})
			}
		}
	default:
		return nil
	}
	return copyChecks(ctx, source.NewFetcher(fetch.Config{}), targets)
}

type copyTarget struct{ name, dir, file, field string }

// copyChecks checks each target as f would copy it.
func copyChecks(ctx context.Context, f *source.Fetcher, targets []copyTarget) []plugin.Diagnostic {
	var out []plugin.Diagnostic
	for _, t := range targets {
		abs, _ := filepath.Abs(t.dir)
		_, err := f.Check(ctx, source.Request{Plugin: t.name, Source: plugin.Source{Kind: plugin.SourceRelative, Path: "./" + filepath.Base(abs)},
			MarketplaceDir: filepath.Dir(abs)})
		if err != nil {
			msg := err.Error()
			var pe *plugin.Error
			if errors.As(err, &pe) && pe.Err != nil {
				msg = pe.Err.Error()
			}
			out = append(out, plugin.Diagnostic{File: t.file, Field: t.field, Severity: plugin.SeverityError,
				Message: fmt.Sprintf("plugin %q: wharf install refuses it: %s", t.name, msg)})
		}
	}
	return out
}

// reservedNameCheck reports a marketplace name Claude Code keeps for
// Anthropic: a name that reads as an official marketplace is an error (its
// validator refuses it); a reserved name, or the name of a plugin source
// that is not a marketplace, is a warning (adding it fails unless it comes
// from the anthropics GitHub organization; a special name fails always).
func reservedNameCheck(path string) []plugin.Diagnostic {
	file := path
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		file = plugin.MarketplaceFile(path)
	}
	if !strings.HasSuffix(file, ".json") || filepath.Base(file) == "plugin.json" {
		return nil
	}
	m, _, err := plugin.ReadMarketplaceFile(file)
	switch {
	case err != nil:
		return nil
	case marketplace.Imitates(m.Name):
		return []plugin.Diagnostic{{File: file, Field: "name", Severity: plugin.SeverityError,
			Message: fmt.Sprintf("marketplace name %q reads as an official Anthropic marketplace; Claude Code refuses it and wharf adds it only from github.com/%s/: choose another name",
				m.Name, marketplace.OfficialOrg)}}
	case marketplace.IsSpecialName(m.Name):
		return []plugin.Diagnostic{{File: file, Field: "name", Severity: plugin.SeverityError,
			Message: fmt.Sprintf("marketplace name %q names plugins that do not come from a marketplace; no marketplace can be added under it: choose another name", m.Name)}}
	case marketplace.IsReservedName(m.Name):
		return []plugin.Diagnostic{{File: file, Field: "name", Severity: plugin.SeverityWarning,
			Message: fmt.Sprintf("marketplace name %q is reserved for official Anthropic marketplaces: only github.com/%s/ repositories can be added under it; others must be added with --name",
				m.Name, marketplace.OfficialOrg)}}
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// printValidateSummary lists what a valid marketplace holds: each plugin
// with its version and component counts.
func printValidateSummary(a streams, path string) {
	file := path
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		file = plugin.MarketplaceFile(path)
	}
	if !strings.HasSuffix(file, ".json") || filepath.Base(file) == "plugin.json" {
		return
	}
	m, _, err := plugin.ReadMarketplaceFile(file)
	if err != nil {
		return
	}
	root := marketplace.RootOf(file)
	a.printf("marketplace %s: %d plugins\n", m.Name, len(m.Plugins))
	for i := range m.Plugins {
		e := &m.Plugins[i]
		version, parts, depList := e.Version, []string{}, e.Dependencies
		if e.Source.Kind == plugin.SourceRelative {
			dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(e.Source.Path, "./")))
			if p, _, err := plugin.Load(dir, e); err == nil {
				if p.Manifest.Version != "" {
					version = p.Manifest.Version
				}
				depList = p.Manifest.Dependencies
				for _, k := range plugin.ComponentKinds {
					if n := len(p.ComponentsOf(k)); n > 0 {
						parts = append(parts, fmt.Sprintf("%d %s", n, k))
					}
				}
			}
		} else {
			parts = append(parts, string(e.Source.Kind)+" source, fetched at install")
		}
		var deps []string
		for _, d := range depList {
			deps = append(deps, d.String())
		}
		line := fmt.Sprintf("  %-16s %-8s %s", e.Name, dash(version), strings.Join(parts, ", "))
		if len(deps) > 0 {
			line += "  (needs " + strings.Join(deps, ", ") + ")"
		}
		a.printf("%s\n", strings.TrimRight(line, " "))
	}
}
