// Package cliusage is the help layout wharf's two commands (wharf and
// wharf-server) share: flags listed as pflag lists them, except that a
// boolean flag reads "--json" rather than "--json[=true|false]".
package cliusage

import (
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var register sync.Once

// Apply makes root's usage (and its sub-commands') list flags with
// FlagUsages.
func Apply(root *cobra.Command) {
	register.Do(func() { cobra.AddTemplateFunc("flagUsages", FlagUsages) })
	t := root.UsageTemplate()
	t = strings.ReplaceAll(t, ".LocalFlags.FlagUsages", "flagUsages .LocalFlags")
	t = strings.ReplaceAll(t, ".InheritedFlags.FlagUsages", "flagUsages .InheritedFlags")
	root.SetUsageTemplate(t)
}

// FlagUsages lists fs as pflag does, but shows a boolean flag as "--json"
// rather than "--json[=true|false]" (--json=false still works).
func FlagUsages(fs *pflag.FlagSet) string {
	out := pflag.NewFlagSet(fs.Name(), pflag.ContinueOnError)
	out.SortFlags = fs.SortFlags
	fs.VisitAll(func(f *pflag.Flag) {
		c := *f
		if f.Value.Type() == "bool" {
			c.Value = plainBool{f.Value}
		}
		out.AddFlag(&c)
	})
	return out.FlagUsages()
}

// plainBool hides IsBoolFlag from pflag's usage formatting only.
type plainBool struct{ v pflag.Value }

func (b plainBool) String() string     { return b.v.String() }
func (b plainBool) Set(s string) error { return b.v.Set(s) }
func (b plainBool) Type() string       { return b.v.Type() }
