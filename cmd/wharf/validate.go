package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/marketplace"
	"github.com/wharfhq/wharf/plugin"
)

// validateResult is `wharf validate --json`.
type validateResult struct {
	Path        string              `json:"path"`
	OK          bool                `json:"ok"`
	Errors      int                 `json:"errors"`
	Warnings    int                 `json:"warnings"`
	Diagnostics []plugin.Diagnostic `json:"diagnostics"`
}

func newValidateCmd(a *app) *cobra.Command {
	var strict bool
	cmd := &cobra.Command{
		Use:   "validate <path>",
		Short: "Check a marketplace or plugin directory, or a manifest file",
		Long:  "Check a marketplace (its marketplace.json and every plugin stored in it), a plugin directory, or a single marketplace.json / plugin.json. Prints every problem with file, line and field. Exits 1 when there are errors (with --strict, warnings count as errors).",
		Args:  exactArgs(1, "one <path>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			diags, verr := plugin.Validate(args[0], strict)
			if verr != nil && len(diags) == 0 {
				return verr // the path could not be read at all
			}
			res := validateResult{Path: args[0], Diagnostics: diags, OK: verr == nil}
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
			if a.cfg.JSON {
				if err := a.printJSON(res); err != nil {
					return err
				}
				return verr
			}
			for _, d := range diags {
				a.printf("%s\n", d)
			}
			if verr == nil {
				printValidateSummary(a, args[0])
				a.printf("%s: ok (%d warnings)\n", args[0], res.Warnings)
			}
			return verr
		},
	}
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings (unknown keys, missing metadata) as errors")
	return cmd
}

// printValidateSummary lists what a valid marketplace holds: each plugin
// with its version and component counts.
func printValidateSummary(a *app, path string) {
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
