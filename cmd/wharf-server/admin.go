package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/server/api"
	"github.com/wharfhq/wharf/internal/server/serverhome"
	"github.com/wharfhq/wharf/plugin"
)

// newAdminCmd is "wharf-server admin": what an operator with access to the
// server's store does without a token (a lost admin token).
func newAdminCmd(a *app) *cobra.Command {
	admin := &cobra.Command{
		Use:   "admin",
		Short: "Operator commands run beside the server's store (a lost admin token)",
		Args:  exactArgs(0, "a subcommand: token"),
	}
	tok := &cobra.Command{
		Use:   "token",
		Short: "Make tokens straight in the store",
		Args:  exactArgs(0, "a subcommand: create"),
	}
	var o struct {
		role, note, data string
		store            storeFlags
	}
	create := &cobra.Command{
		Use:   "create [--role admin] [--note TEXT] [--data DIR | --store etcd://...]",
		Short: "Create a token in the store and print it once (recovers a lost admin token)",
		Long: "Create a token straight in the server's store and print its secret once: the way back\n" +
			"in when the admin token printed at the first start is lost. It needs access to the\n" +
			"store, as the server has: the bbolt file in --data (stop the server first: it holds\n" +
			"the file's lock) or the etcd cluster (--store and --etcd-* as for serving; the\n" +
			"servers may keep running). The creation is in the audit log, by \"wharf-server admin\".",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !api.ValidRole(o.role) {
				return usageError(fmt.Errorf("--role %q is not one of admin, developer, ci, agent", o.role))
			}
			dir, err := a.dataDir(o.data)
			if err != nil {
				return err
			}
			st, where, err := serverhome.OpenStore(serverhome.StoreConfig(o.store), dir, a.cfg.LockTimeout, nil)
			if err != nil {
				return err
			}
			defer st.Close()
			secret, t, err := api.IssueToken(st, api.Role(o.role), o.note, "wharf-server admin", time.Now())
			if err != nil {
				return &plugin.Error{Layer: plugin.LayerMaterialization, Type: "token-create", Object: where, Err: err,
					Hint: "check the store with wharf-server check, then try again"}
			}
			if a.cfg.JSON {
				return a.printJSON(struct {
					api.Token
					Secret string `json:"token"`
					Store  string `json:"store"`
				}{t, secret, where})
			}
			fmt.Fprintf(a.stderr, "wharf-server: created %s token %s in %s; it is shown only now:\n", t.Role, t.ID, where)
			a.printf("%s\n", secret)
			return nil
		},
	}
	f := create.Flags()
	f.StringVar(&o.role, "role", "admin", "role of the token: admin, developer, ci or agent")
	f.StringVar(&o.note, "note", "", "what the token is for (up to 200 bytes)")
	f.StringVar(&o.data, "data", "", "server data directory (default $WHARF_HOME/server)")
	addStoreFlags(f, &o.store)
	tok.AddCommand(create)
	admin.AddCommand(tok)
	return admin
}
