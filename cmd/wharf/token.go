package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	apiclient "github.com/wharfhq/wharf/internal/core/apiclient"
	"github.com/wharfhq/wharf/plugin"
)

// tokenClient is the part of `wharf token` that talks to a server.
type tokenClient struct {
	Server string
	Token  string
	HTTP   *http.Client
}

func newTokenCmd(a *app) *cobra.Command {
	c := &tokenClient{}
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage bearer tokens of a wharf server",
		Long: "Create, list and revoke the bearer tokens of a wharf server (admin only).\n" +
			"--server defaults to $WHARF_SERVER or http://127.0.0.1:7070; --token to $WHARF_TOKEN.",
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&c.Server, "server", "", "server URL (env WHARF_SERVER, default http://127.0.0.1:7070)")
	pf.StringVar(&c.Token, "token", "", "an admin token (env WHARF_TOKEN)")

	var role, note, expires string
	var groups, labels []string
	create := &cobra.Command{
		Use:   "create --role admin|developer|ci|agent [--note TEXT] [--expires 30d] [--group G]... [--label K=V]...",
		Short: "Create a token; its secret is printed once",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if role == "" {
				return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--role",
					Err: errors.New("--role is required"), Hint: "e.g. wharf token create --role developer"}
			}
			if expires != "" {
				if _, err := apiclient.ParseExpiry(expires); err != nil {
					return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--expires", Err: err,
						Hint: "give a number of days (--expires 30d) or a duration (--expires 12h)"}
				}
			}
			var out struct {
				ID        string     `json:"id"`
				Role      string     `json:"role"`
				Token     string     `json:"token"`
				Note      string     `json:"note,omitempty"`
				ExpiresAt *time.Time `json:"expiresAt,omitempty"`
				Groups    []string   `json:"groups,omitempty"`
				Labels    []string   `json:"labels,omitempty"`
			}
			body := map[string]any{"role": role, "note": note}
			if expires != "" {
				body["expires"] = expires
			}
			if len(groups) > 0 {
				body["groups"] = groups
			}
			if len(labels) > 0 {
				body["labels"] = labels
			}
			if err := c.do(cmd.Context(), "POST", "/v1/tokens", body, &out); err != nil {
				return err
			}
			if a.cfg.JSON {
				return a.printJSON(out)
			}
			a.printf("%s\n", out.Token)
			until := ""
			if out.ExpiresAt != nil {
				until = "; it expires at " + out.ExpiresAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(a.stderr, "wharf: created %s token %s; the secret above is shown only once%s\n", out.Role, out.ID, until)
			return nil
		},
	}
	create.Flags().StringVar(&role, "role", "", "admin, developer, ci or agent")
	create.Flags().StringVar(&note, "note", "", "what the token is for")
	create.Flags().StringVar(&expires, "expires", "", "lifetime, e.g. 30d or 12h (default: never expires)")
	create.Flags().StringArrayVar(&groups, "group", nil, "a group of the token: the policy layers and channels targeted to it apply; repeatable")
	create.Flags().StringArrayVar(&labels, "label", nil, "a machine label of the token, key=value (e.g. os=linux); repeatable")

	list := &cobra.Command{
		Use:   "list",
		Short: "List tokens (never their secrets)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out []struct {
				ID        string     `json:"id"`
				Role      string     `json:"role"`
				CreatedAt time.Time  `json:"createdAt"`
				CreatedBy string     `json:"createdBy"`
				Note      string     `json:"note,omitempty"`
				ExpiresAt *time.Time `json:"expiresAt,omitempty"`
			}
			if err := c.do(cmd.Context(), "GET", "/v1/tokens", nil, &out); err != nil {
				return err
			}
			if a.cfg.JSON {
				return a.printJSON(out)
			}
			for _, t := range out {
				exp := "never expires"
				if t.ExpiresAt != nil {
					exp = "expires " + t.ExpiresAt.UTC().Format(time.RFC3339)
				}
				a.printf("%s  %-9s  %s  %s  %s\n", t.ID, t.Role, t.CreatedAt.Format(time.RFC3339), exp, t.Note)
			}
			return nil
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke <id>",
		Short: "Revoke a token",
		Args:  exactArgs(1, "one token id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.do(cmd.Context(), "DELETE", "/v1/tokens/"+args[0], nil, nil); err != nil {
				return err
			}
			if a.cfg.JSON {
				return a.printJSON(map[string]string{"revoked": args[0]})
			}
			a.printf("revoked %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

// do sends one request through the API client and decodes the JSON answer
// into out; a refusal is the server's *apiclient.APIError and no answer an
// *apiclient.UnreachableError, as every client of the server reports them.
func (c *tokenClient) do(ctx context.Context, method, path string, body, out any) error {
	server := c.Server
	if server == "" {
		server = os.Getenv("WHARF_SERVER")
	}
	if server == "" {
		server = "http://127.0.0.1:7070"
	}
	token := c.Token
	if token == "" {
		token = os.Getenv("WHARF_TOKEN")
	}
	if token == "" {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--token",
			Err: errors.New("no admin token"), Hint: "pass --token or set WHARF_TOKEN (wharf-server printed one on its first start)"}
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	cl, err := apiclient.New(server, token, hc)
	if err != nil {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--server", Err: err, Hint: "pass --server http://host:port"}
	}
	return cl.Do(ctx, method, path, body, out)
}
