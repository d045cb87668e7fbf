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

// defaultServer is the server `wharf token` talks to without --server or
// WHARF_SERVER.
const defaultServer = "http://127.0.0.1:7070"

// TokenOptions are what every `wharf token` verb takes: the server and
// the admin token it is called with.
type TokenOptions struct {
	IO streams
	// Server is the server's URL; "" means defaultServer.
	Server string
	// Token is an admin token; "" means Source, and without either the
	// verb is a usage error.
	Token string
	// Source gives the token of a sign-in (wharf login) to the server.
	Source apiclient.TokenSource
	// HTTP is the client the requests go through; nil means one with a
	// 30 s timeout.
	HTTP *http.Client
}

// TokenCreateOptions are wharf token create's inputs.
type TokenCreateOptions struct {
	TokenOptions
	Role, Note string
	// Expires is the lifetime as given (30d, 12h); "" never expires.
	Expires string
	// Groups and Labels target the token: the policy layers and channels
	// targeted to one of them apply to it. Labels are key=value.
	Groups, Labels []string
	// MaxMachines and MaxPlugins are the token's inventory quota: the
	// machine ids it may report and the plugin ids their reports may list
	// together; 0 is the server's default for the role (one machine for
	// an agent token).
	MaxMachines, MaxPlugins int
}

// TokenRevokeOptions are wharf token revoke's inputs.
type TokenRevokeOptions struct {
	TokenOptions
	ID string
}

// createdToken is what the server answers to a token creation, and what
// wharf token create --json prints.
type createdToken struct {
	ID        string     `json:"id"`
	Role      string     `json:"role"`
	Token     string     `json:"token"`
	Note      string     `json:"note,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	Groups    []string   `json:"groups,omitempty"`
	Labels    []string   `json:"labels,omitempty"`
	// MaxMachines and MaxPlugins are the inventory quota in force.
	MaxMachines int `json:"maxMachines,omitempty"`
	MaxPlugins  int `json:"maxPlugins,omitempty"`
}

// listedToken is one token of the server's list (never its secret).
type listedToken struct {
	ID        string     `json:"id"`
	Role      string     `json:"role"`
	CreatedAt time.Time  `json:"createdAt"`
	CreatedBy string     `json:"createdBy"`
	Note      string     `json:"note,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	LastUsed  *time.Time `json:"lastUsed,omitempty"`
}

func newTokenCmd(a *app) *cobra.Command {
	opts := &TokenOptions{}
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage bearer tokens of a wharf server",
		Long: "Create, list and revoke the bearer tokens of a wharf server (admin only).\n" +
			"--server defaults to $WHARF_SERVER or " + defaultServer + "; --token to $WHARF_TOKEN.",
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&opts.Server, "server", "", "server URL (env WHARF_SERVER, default "+defaultServer+")")
	pf.StringVar(&opts.Token, "token", "", "an admin token (env WHARF_TOKEN)")
	// resolve fills in what the flags leave to the environment.
	resolve := func() (TokenOptions, error) {
		o := *opts
		o.IO = a.io()
		server, err := configuredServer(o.IO, o.Server, a.cfg.Home)
		if err != nil {
			return o, err
		}
		o.Server = server
		if o.Server == "" {
			o.Server = defaultServer
		}
		if o.Token == "" {
			o.Token = os.Getenv("WHARF_TOKEN")
		}
		if o.Token == "" {
			o.Source = loginSource(a.cfg.Home, o.Server)
		}
		return o, nil
	}

	createOpts := &TokenCreateOptions{}
	create := &cobra.Command{
		Use:   "create --role admin|developer|ci|agent [--note TEXT] [--expires 30d] [--group G]... [--label K=V]...",
		Short: "Create a token; its secret is printed once",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := resolve()
			if err != nil {
				return err
			}
			createOpts.TokenOptions = o
			return runTokenCreate(cmd.Context(), createOpts)
		},
	}
	create.Flags().StringVar(&createOpts.Role, "role", "", "admin, developer, ci or agent")
	create.Flags().StringVar(&createOpts.Note, "note", "", "what the token is for")
	create.Flags().StringVar(&createOpts.Expires, "expires", "", "lifetime, e.g. 30d or 12h (default: never expires)")
	create.Flags().StringArrayVar(&createOpts.Groups, "group", nil, "a group of the token: the policy layers and channels targeted to it apply; repeatable")
	create.Flags().StringArrayVar(&createOpts.Labels, "label", nil, "a machine label of the token, key=value (e.g. os=linux); repeatable")
	create.Flags().IntVar(&createOpts.MaxMachines, "max-machines", 0, "inventory quota: machine ids the token may report (default: the server's for the role, one machine for an agent token)")
	create.Flags().IntVar(&createOpts.MaxPlugins, "max-plugins", 0, "inventory quota: plugin ids the machines' reports may list together (default: the server's for the role)")

	list := &cobra.Command{
		Use:   "list",
		Short: "List tokens (never their secrets)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := resolve()
			if err != nil {
				return err
			}
			return runTokenList(cmd.Context(), &o)
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke <id>",
		Short: "Revoke a token",
		Args:  exactArgs(1, "one token id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := resolve()
			if err != nil {
				return err
			}
			return runTokenRevoke(cmd.Context(), &TokenRevokeOptions{TokenOptions: o, ID: args[0]})
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

// runTokenCreate creates a token and prints its secret (once) on stdout,
// what it is on stderr.
func runTokenCreate(ctx context.Context, opts *TokenCreateOptions) error {
	if opts.Role == "" {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--role",
			Err: errors.New("--role is required"), Hint: "e.g. wharf token create --role developer"}
	}
	if opts.Expires != "" {
		if _, err := apiclient.ParseExpiry(opts.Expires); err != nil {
			return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--expires", Err: err,
				Hint: "give a number of days (--expires 30d) or a duration (--expires 12h)"}
		}
	}
	for _, q := range []struct {
		flag string
		n    int
	}{{"--max-machines", opts.MaxMachines}, {"--max-plugins", opts.MaxPlugins}} {
		if q.n < 0 {
			return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: q.flag,
				Err: fmt.Errorf("%s %d: must not be negative", q.flag, q.n), Hint: "give a count, e.g. " + q.flag + " 50, or leave it out for the server's default"}
		}
	}
	body := map[string]any{"role": opts.Role, "note": opts.Note}
	if opts.MaxMachines > 0 {
		body["maxMachines"] = opts.MaxMachines
	}
	if opts.MaxPlugins > 0 {
		body["maxPlugins"] = opts.MaxPlugins
	}
	if opts.Expires != "" {
		body["expires"] = opts.Expires
	}
	if len(opts.Groups) > 0 {
		body["groups"] = opts.Groups
	}
	if len(opts.Labels) > 0 {
		body["labels"] = opts.Labels
	}
	var out createdToken
	if err := opts.do(ctx, "POST", "/v1/tokens", body, &out); err != nil {
		return err
	}
	io := opts.IO
	if io.JSON {
		return io.printJSON(out)
	}
	io.printf("%s\n", out.Token)
	until := ""
	if out.ExpiresAt != nil {
		until = "; it expires at " + out.ExpiresAt.UTC().Format(time.RFC3339)
	}
	quota := ""
	if out.MaxMachines > 0 && (out.Role == "agent" || opts.MaxMachines > 0 || opts.MaxPlugins > 0) {
		quota = fmt.Sprintf("; it may report %d machine(s) and %d plugin ids", out.MaxMachines, out.MaxPlugins)
	}
	fmt.Fprintf(io.Err, "wharf: created %s token %s; the secret above is shown only once%s%s\n", out.Role, out.ID, until, quota)
	return nil
}

// runTokenList prints the server's tokens, one a line.
func runTokenList(ctx context.Context, opts *TokenOptions) error {
	var out []listedToken
	if err := opts.do(ctx, "GET", "/v1/tokens", nil, &out); err != nil {
		return err
	}
	io := opts.IO
	if io.JSON {
		return io.printJSON(out)
	}
	for _, t := range out {
		exp := "never expires"
		if t.ExpiresAt != nil {
			exp = "expires " + t.ExpiresAt.UTC().Format(time.RFC3339)
		}
		io.printf("%s  %-9s  %s  %s  %s  %s\n", t.ID, t.Role, t.CreatedAt.Format(time.RFC3339), exp, lastUsedText(t.LastUsed), t.Note)
	}
	return nil
}

// runTokenRevoke revokes one token.
func runTokenRevoke(ctx context.Context, opts *TokenRevokeOptions) error {
	if err := opts.do(ctx, "DELETE", "/v1/tokens/"+opts.ID, nil, nil); err != nil {
		return err
	}
	if opts.IO.JSON {
		return opts.IO.printJSON(map[string]string{"revoked": opts.ID})
	}
	opts.IO.printf("revoked %s\n", opts.ID)
	return nil
}

// do sends one request through the API client and decodes the JSON answer
// into out; a refusal is the server's *apiclient.APIError and no answer an
// *apiclient.UnreachableError, as every client of the server reports them.
func (o *TokenOptions) do(ctx context.Context, method, path string, body, out any) error {
	server := o.Server
	if server == "" {
		server = defaultServer
	}
	if o.Token == "" && o.Source == nil {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--token",
			Err: errors.New("no admin token"), Hint: "pass --token or set WHARF_TOKEN (wharf-server printed one on its first start), or sign in as an admin: wharf login"}
	}
	hc := o.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	cl, err := apiclient.New(server, o.Token, hc)
	if err != nil {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--server", Err: err, Hint: "pass --server http://host:port"}
	}
	cl.Source = o.Source
	return cl.Do(ctx, method, path, body, out)
}

// lastUsedText says when a token was last used, as wharf token list
// prints it.
func lastUsedText(at *time.Time) string {
	if at == nil {
		return "never used"
	}
	return "used " + at.UTC().Format(time.RFC3339)
}
