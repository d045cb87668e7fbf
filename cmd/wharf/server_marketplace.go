package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	apiclient "github.com/wharfhq/wharf/internal/core/apiclient"
	"github.com/wharfhq/wharf/plugin"
)

// `wharf server ...` administers a wharf server from a script: what the
// console's admin pages do, through the server's API.

func newServerCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Administer a wharf server (marketplaces, policy layers)",
		Long: "Administer a wharf server through its API, as the web console's admin pages do.\n" +
			"--server defaults to $WHARF_SERVER, then the server of `wharf login`, then " + defaultServer + ";\n" +
			"--token to $WHARF_TOKEN (an admin token), then the sign-in of `wharf login` to that server.",
	}
	sc := &serverConn{app: a}
	pf := cmd.PersistentFlags()
	pf.StringVar(&sc.Server, "server", "", "server URL (env WHARF_SERVER, default http://127.0.0.1:7070)")
	pf.StringVar(&sc.Token, "token", "", "an admin token (env WHARF_TOKEN)")
	cmd.AddCommand(newServerMarketplaceCmd(a, sc), newServerLayerCmd(a, sc))
	return cmd
}

// serverConn is where `wharf server` commands send their requests.
type serverConn struct {
	Server string
	Token  string
	HTTP   *http.Client
	app    *app
}

// client resolves the server and token as `wharf token` does: --server,
// $WHARF_SERVER, the server of `wharf login`, else defaultServer; --token,
// $WHARF_TOKEN, else the sign-in of `wharf login` to that server.
func (s *serverConn) client() (*apiclient.Client, error) {
	server, err := configuredServer(s.app.io(), s.Server, s.app.cfg.Home)
	if err != nil {
		return nil, err
	}
	if server == "" {
		server = defaultServer
	}
	token := s.Token
	if token == "" {
		token = os.Getenv("WHARF_TOKEN")
	}
	var source apiclient.TokenSource
	if token == "" {
		source = loginSource(s.app.cfg.Home, server)
	}
	if token == "" && source == nil {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--token",
			Err: errors.New("no admin token"), Hint: "pass --token, set WHARF_TOKEN (wharf-server printed one on its first start), or sign in as an admin with wharf login"}
	}
	hc := s.HTTP
	if hc == nil {
		// Adding or refreshing a marketplace waits for the server's fetch.
		hc = &http.Client{Timeout: 5 * time.Minute}
	}
	cl, err := apiclient.New(server, token, hc)
	if err != nil {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--server", Err: err, Hint: "pass --server http://host:port"}
	}
	cl.Source = source
	return cl, nil
}

// serverMarketplaceSource parses a source as typed for a server. A local
// path must be absolute: it names a directory on the server, which is not
// where this shell is.
func serverMarketplaceSource(text string) (json.RawMessage, error) {
	src, err := plugin.ParseMarketplaceSource(text)
	if err != nil {
		return nil, err
	}
	if src.IsLocal() && !filepath.IsAbs(src.Path) {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: strings.TrimSpace(text),
			Err:  errors.New("a relative path names no directory on the server"),
			Hint: "give the absolute path of the directory on the server, e.g. /srv/marketplaces/corp"}
	}
	return json.Marshal(src)
}

// sourceString is a stored source object as one would type it.
func sourceString(raw json.RawMessage) string {
	var src plugin.MarketplaceSource
	if err := json.Unmarshal(raw, &src); err != nil {
		return string(raw)
	}
	return src.String()
}

func newServerMarketplaceCmd(a *app, sc *serverConn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "marketplace",
		Short: "Add, list, refresh and remove the server's marketplaces",
	}
	// verb is one `wharf server marketplace` verb: it resolves the server
	// and token, then runs f.
	verb := func(use, short string, args cobra.PositionalArgs, f func(ctx context.Context, cl *apiclient.Client, args []string) error) *cobra.Command {
		return &cobra.Command{Use: use, Short: short, Args: args, RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := sc.client()
			if err != nil {
				return err
			}
			return f(cmd.Context(), cl, args)
		}}
	}
	// answered prints the marketplace the server answered (add, refresh).
	answered := func(what string) func(apiclient.Marketplace, error) error {
		return func(m apiclient.Marketplace, err error) error {
			if err != nil {
				return err
			}
			if a.cfg.JSON {
				return a.printJSON(m)
			}
			a.printf("%s marketplace %s from %s: %d plugins\n", what, m.Name, sourceString(m.Source), m.Plugins)
			if m.Error != "" {
				a.printf("  error: %s\n", m.Error)
			}
			return nil
		}
	}
	add := verb("add <name> <source>", "Add a marketplace to the server (owner/repo[@ref], git URL, marketplace.json URL, or a directory on the server)",
		exactArgs(2, "a name and a source"), func(ctx context.Context, cl *apiclient.Client, args []string) error {
			if err := plugin.ValidateName(args[0]); err != nil {
				return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: args[0], Err: err,
					Hint: "the name is what plugins are called after the @, e.g. corp for deploy@corp"}
			}
			src, err := serverMarketplaceSource(args[1])
			if err != nil {
				return err
			}
			return answered("added")(cl.AddMarketplace(ctx, args[0], src))
		})
	add.Long = "Add a marketplace to the server under <name>; the server fetches it before answering.\n" +
		"<source> is what `wharf marketplace add` takes: owner/repo[@ref] (GitHub), https://host/repo.git[#ref],\n" +
		"git@host:repo, https://host/.../marketplace.json, or the absolute path of a directory on the server."
	list := verb("list", "List the server's marketplaces with their last refresh and error", exactArgs(0, "no arguments"),
		func(ctx context.Context, cl *apiclient.Client, _ []string) error {
			ms, err := cl.Marketplaces(ctx)
			if err != nil {
				return err
			}
			if a.cfg.JSON {
				if ms == nil {
					ms = []apiclient.Marketplace{}
				}
				return a.printJSON(ms)
			}
			if len(ms) == 0 {
				a.printf("no marketplaces; add one with: wharf server marketplace add <name> <source>\n")
				return nil
			}
			for _, m := range ms {
				refreshed := "never refreshed"
				if !m.LastUpdated.IsZero() {
					refreshed = "refreshed " + m.LastUpdated.UTC().Format(time.RFC3339)
				}
				a.printf("%s  %s  %d plugins  %s\n", m.Name, sourceString(m.Source), m.Plugins, refreshed)
				if m.Error != "" {
					a.printf("  error: %s\n", m.Error)
				}
			}
			return nil
		})
	refresh := verb("refresh <name>", "Have the server fetch a marketplace again", exactArgs(1, "a marketplace name"),
		func(ctx context.Context, cl *apiclient.Client, args []string) error {
			return answered("refreshed")(cl.RefreshMarketplace(ctx, args[0]))
		})
	remove := verb("remove <name>", "Remove a marketplace from the server", exactArgs(1, "a marketplace name"),
		func(ctx context.Context, cl *apiclient.Client, args []string) error {
			if err := cl.RemoveMarketplace(ctx, args[0]); err != nil {
				return err
			}
			if a.cfg.JSON {
				return a.printJSON(map[string]string{"removed": args[0]})
			}
			a.printf("removed marketplace %s\n", args[0])
			return nil
		})
	cmd.AddCommand(add, list, refresh, remove)
	return cmd
}
