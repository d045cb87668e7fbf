package cliusage

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Help lists a boolean flag as "--json", not "--json[=true|false]", in the
// root's and a sub-command's usage, local and inherited flags alike.
func TestBooleanFlagsReadPlain(t *testing.T) {
	root := &cobra.Command{Use: "tool", RunE: func(*cobra.Command, []string) error { return nil }}
	root.PersistentFlags().Bool("json", false, "print JSON")
	sub := &cobra.Command{Use: "sub", RunE: func(*cobra.Command, []string) error { return nil }}
	sub.Flags().Bool("force", false, "do it anyway")
	sub.Flags().String("scope", "user", "where")
	root.AddCommand(sub)
	Apply(root)
	for _, c := range []*cobra.Command{root, sub} {
		var out bytes.Buffer
		c.SetOut(&out)
		if err := c.Usage(); err != nil {
			t.Fatal(err)
		}
		u := out.String()
		if strings.Contains(u, "[=true|false]") || !strings.Contains(u, "--json ") {
			t.Errorf("%s usage:\n%s", c.Name(), u)
		}
		if c == sub && (!strings.Contains(u, "--force ") || !strings.Contains(u, "--scope string")) {
			t.Errorf("sub usage lost its flags:\n%s", u)
		}
	}
}
