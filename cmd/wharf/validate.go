package main

import (
	"github.com/spf13/cobra"

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
				a.printf("%s: ok (%d warnings)\n", args[0], res.Warnings)
			}
			return verr
		},
	}
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings (unknown keys, missing metadata) as errors")
	return cmd
}
