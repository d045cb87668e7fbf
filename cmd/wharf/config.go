package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/client/install"
	"github.com/wharfhq/wharf/internal/client/userconfig"
	"github.com/wharfhq/wharf/plugin"
)

// configOption is one row of `wharf config <plugin> --json`.
type configOption struct {
	plugin.UserConfigOption
	Set   bool   `json:"set"`
	Value string `json:"value,omitempty"` // never a sensitive value
}

func newConfigCmd(a *app) *cobra.Command {
	var unset bool
	cmd := &cobra.Command{
		Use:   "config <name@marketplace> [key [value]]",
		Short: "Show or set the userConfig options of an installed plugin",
		Long: "With only the plugin, list the options its userConfig declares and whether each is set. With a key, print its value " +
			"(a sensitive value is never printed). With a key and a value, set it: sensitive options go to a 0600 file under " +
			"WHARF_HOME/plugin-secrets, the others to WHARF_HOME/plugin-config. Agents substitute the values as ${user_config.KEY} " +
			"in the plugin's MCP and LSP servers and hook commands on their next load.",
		Example: "  wharf config ops@corp\n  wharf config ops@corp region eu-west-1\n  wharf config ops@corp api_token --unset",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return exactArgs(1, "<name@marketplace> [key [value]]")(cmd, args)
			}
			return maxArgs(3, "<name@marketplace> [key [value]]")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseIDArg(args[0])
			if err != nil {
				return err
			}
			in, err := a.Installer()
			if err != nil {
				return err
			}
			opts, err := pluginOptions(cmd, in, id)
			if err != nil {
				return err
			}
			home := a.env.Home()
			values, err := userconfig.Load(home, id)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				rows := make([]configOption, 0, len(opts))
				for _, o := range opts {
					v, ok := values[o.Key]
					r := configOption{UserConfigOption: o, Set: ok}
					if ok && !o.Sensitive {
						r.Value = v
					}
					rows = append(rows, r)
				}
				if a.cfg.JSON {
					return a.printJSON(rows)
				}
				if len(rows) == 0 {
					a.printf("%s declares no userConfig options\n", id)
					return nil
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "KEY\tTYPE\tSET\tVALUE\tDESCRIPTION")
				unsetRequired := 0
				for _, r := range rows {
					typ, set, val := r.Type, "no", r.Value
					if typ == "" {
						typ = "string"
					}
					if r.Set {
						set = "yes"
					} else if r.Required {
						unsetRequired++
						set = "no (required)"
					}
					if r.Sensitive {
						val = "(sensitive)"
					} else if !r.Set && r.DefaultString() != "" {
						val = "default " + r.DefaultString()
					}
					desc := r.Title
					if desc == "" {
						desc = r.Description
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Key, typ, set, val, desc)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if unsetRequired > 0 {
					a.printf("%d required option(s) not set; set them with: wharf config %s <key> <value>\n", unsetRequired, id)
				}
				return nil
			}
			var opt *plugin.UserConfigOption
			for i := range opts {
				if opts[i].Key == args[1] {
					opt = &opts[i]
				}
			}
			if opt == nil {
				return plugin.Errorf(plugin.LayerIntent, plugin.TypeNotFound, id.String()+" "+args[1],
					"list the options with: wharf config "+id.String(), "%s declares no userConfig option %q", id, args[1])
			}
			switch {
			case unset:
				if err := userconfig.Unset(home, id, opt.Key); err != nil {
					return err
				}
				a.printf("%s: %s unset\n", id, opt.Key)
			case len(args) == 3:
				if err := userconfig.Set(home, id, *opt, args[2]); err != nil {
					return plugin.Errorf(plugin.LayerIntent, typeUsage, id.String()+" "+opt.Key, "give a value of type "+opt.Type, "%v", err)
				}
				a.printf("%s: %s set; agents use it after their next reload\n", id, opt.Key)
			case opt.Sensitive:
				_, ok := values[opt.Key]
				a.printf("%s: %s is sensitive and not printed (set: %v)\n", id, opt.Key, ok)
			default:
				v, ok := values[opt.Key]
				if !ok {
					return plugin.Errorf(plugin.LayerIntent, plugin.TypeNotFound, id.String()+" "+opt.Key,
						"set it with: wharf config "+id.String()+" "+opt.Key+" <value>", "%s: %s is not set", id, opt.Key)
				}
				a.printf("%s\n", v)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&unset, "unset", false, "remove the key's value")
	return cmd
}

// pluginOptions reads the userConfig options of the installed plugin id.
func pluginOptions(cmd *cobra.Command, in *install.Installer, id plugin.ID) ([]plugin.UserConfigOption, error) {
	rows, err := in.List(cmd.Context(), install.StatusOptions{})
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r.ID != id {
			continue
		}
		p, _, err := plugin.Load(r.InstallPath, nil)
		if err != nil {
			return nil, err
		}
		opts, err := p.Manifest.UserConfigOptions()
		if err != nil {
			return nil, plugin.Errorf(plugin.LayerMaterialization, plugin.TypeManifestInvalid, id.String(), "ask the plugin's authors to fix its userConfig", "%v", err)
		}
		return opts, nil
	}
	return nil, plugin.Errorf(plugin.LayerIntent, plugin.TypeNotFound, id.String(), "install it first: wharf install "+id.String(), "%s is not installed", id)
}
