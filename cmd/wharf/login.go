package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/client/login"
	"github.com/wharfhq/wharf/internal/core/apiclient"
	"github.com/wharfhq/wharf/plugin"
)

// The server setting has one name: --server, env WHARF_SERVER, else the
// server `wharf login` or `wharf policy pull --server` recorded in the
// home (server.json). WHARF_POLICY_URL is its deprecated alias.

// LoginOptions are wharf login's inputs.
type LoginOptions struct {
	IO     streams
	Home   string
	Server string
	HTTP   *http.Client
}

// WhoAmIResult is `wharf whoami --json` (and `wharf login --json`).
type WhoAmIResult struct {
	Server    string    `json:"server"`
	Subject   string    `json:"subject"`
	Email     string    `json:"email,omitempty"`
	Groups    []string  `json:"groups"`
	Role      string    `json:"role"`
	TokenID   string    `json:"tokenId"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func newLoginCmd(a *app) *cobra.Command {
	o := &LoginOptions{}
	cmd := &cobra.Command{
		Use:   "login --server URL",
		Short: "Sign in to a wharf server through its identity provider (device code)",
		Long: "Signs in to the wharf server through its OpenID Connect provider with the device authorization grant: open the URL printed, " +
			"enter the code and approve. The server gives a short-lived token of the role your groups map to; it and the provider's refresh " +
			"token are kept in $WHARF_HOME/login.json (mode 0600) and renewed without asking while the provider allows. The server is " +
			"recorded in the home, so later commands enforce its policy and send the token without flags. --server defaults to $WHARF_SERVER, " +
			"then the recorded server.",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.IO, o.Home = a.io(), a.cfg.Home
			return runLogin(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Server, "server", "", "the wharf server's URL (env WHARF_SERVER)")
	return cmd
}

func newLogoutCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Revoke your login's token at the server and at the identity provider, and forget it",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLogout(cmd.Context(), a.io(), a.cfg.Home, nil)
		},
	}
}

func newWhoAmICmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Show who you are signed in as: subject, email, groups, role, server, expiry",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWhoAmI(cmd.Context(), a.io(), a.cfg.Home, nil)
		},
	}
}

// configuredServer is the server setting: flag, else WHARF_SERVER, else
// WHARF_POLICY_URL (deprecated: warned), else the recorded server.
func configuredServer(io streams, flag, home string) (string, error) {
	if s := strings.TrimSpace(flag); s != "" {
		return s, nil
	}
	if s := strings.TrimSpace(os.Getenv("WHARF_SERVER")); s != "" {
		return s, nil
	}
	if s := strings.TrimSpace(os.Getenv("WHARF_POLICY_URL")); s != "" {
		io.warnDeprecatedPolicyURL()
		return s, nil
	}
	return login.RecordedServer(home)
}

func (s streams) warnDeprecatedPolicyURL() {
	s.warnf("WHARF_POLICY_URL is deprecated; set WHARF_SERVER (the same setting) instead")
}

func runLogin(ctx context.Context, o *LoginOptions) error {
	server, err := configuredServer(o.IO, o.Server, o.Home)
	if err != nil {
		return err
	}
	if server == "" {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--server", Err: errors.New("no server to sign in to"),
			Hint: "pass --server https://wharf.example.com (or set WHARF_SERVER)"}
	}
	if _, err := apiclient.New(server, "", nil); err != nil {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--server", Err: err, Hint: "pass --server http(s)://host[:port]"}
	}
	st, err := login.Login(ctx, o.Home, server, o.HTTP, func(uri, complete, code string) {
		fmt.Fprintf(o.IO.Err, "To sign in, open %s and enter the code %s\n", uri, code)
		if complete != "" {
			fmt.Fprintf(o.IO.Err, "(or open %s)\n", complete)
		}
		fmt.Fprintf(o.IO.Err, "Waiting for approval...\n")
	})
	if err != nil {
		return err
	}
	if err := st.Save(); err != nil {
		return err
	}
	if err := login.RecordServer(o.Home, st.Server); err != nil {
		return err
	}
	res := whoamiOf(st)
	if o.IO.JSON {
		return o.IO.printJSON(res)
	}
	o.IO.printf("signed in to %s as %s (role %s); the token expires at %s and renews itself\n", res.Server, who(res), res.Role, res.ExpiresAt.Format(time.RFC3339))
	return nil
}

func who(r WhoAmIResult) string {
	if r.Email != "" {
		return r.Email
	}
	return r.Subject
}

func whoamiOf(st *login.State) WhoAmIResult {
	g := st.Groups
	if g == nil {
		g = []string{}
	}
	return WhoAmIResult{Server: st.Server, Subject: st.Subject, Email: st.Email, Groups: g, Role: st.Role, TokenID: st.TokenID, ExpiresAt: st.ExpiresAt}
}

func notSignedIn() error {
	return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Err: errors.New("not signed in"),
		Hint: "run wharf login --server URL"}
}

func runLogout(ctx context.Context, io streams, home string, hc *http.Client) error {
	st, err := login.Load(home, hc)
	var ce *login.CorruptError
	if errors.As(err, &ce) {
		io.warnf("%v; removing it", err)
		return login.Remove(home)
	}
	if err != nil {
		return err
	}
	if st == nil {
		io.printf("not signed in\n")
		return nil
	}
	warnings, err := st.Logout(ctx)
	for _, w := range warnings {
		io.warnf("%s", w)
	}
	if err != nil {
		return err
	}
	if io.JSON {
		return io.printJSON(map[string]any{"server": st.Server, "tokenId": st.TokenID, "signedOut": true, "warnings": append([]string{}, warnings...)})
	}
	io.printf("signed out of %s (token %s revoked)\n", st.Server, st.TokenID)
	return nil
}

func runWhoAmI(ctx context.Context, io streams, home string, hc *http.Client) error {
	st, err := login.Load(home, hc)
	if err != nil {
		return err
	}
	if st == nil {
		return notSignedIn()
	}
	cl, err := apiclient.New(st.Server, "", hc)
	if err != nil {
		return err
	}
	cl.Source = st.Source() // renews an expired token first
	var tok struct {
		ID        string     `json:"id"`
		Role      string     `json:"role"`
		Subject   string     `json:"subject"`
		Email     string     `json:"email"`
		Groups    []string   `json:"groups"`
		ExpiresAt *time.Time `json:"expiresAt"`
	}
	if err := cl.Do(ctx, http.MethodGet, "/v1/auth/whoami", nil, &tok); err != nil {
		return err
	}
	res := whoamiOf(st)
	res.TokenID, res.Role, res.Subject, res.Email = tok.ID, tok.Role, tok.Subject, tok.Email
	if tok.Groups != nil {
		res.Groups = tok.Groups
	}
	if tok.ExpiresAt != nil {
		res.ExpiresAt = *tok.ExpiresAt
	}
	if io.JSON {
		return io.printJSON(res)
	}
	io.printf("subject: %s\n", res.Subject)
	io.printf("email:   %s\n", res.Email)
	io.printf("groups:  %s\n", strings.Join(res.Groups, ", "))
	io.printf("role:    %s\n", res.Role)
	io.printf("server:  %s\n", res.Server)
	io.printf("expires: %s\n", res.ExpiresAt.Format(time.RFC3339))
	return nil
}

// loginToken is the signed-in user's server and token, renewed when it
// expired ("" when not signed in; a renewal that fails is warned).
func (a *app) loginToken() (string, string) {
	st, err := login.Load(a.cfg.Home, nil)
	if err != nil {
		a.warnf("%v", err)
		return "", ""
	}
	if st == nil {
		return "", ""
	}
	tok, err := st.Source().Token(context.Background())
	if err != nil {
		a.warnf("%v", err)
		return "", ""
	}
	return st.Server, tok
}

// loginSource is the signed-in user's token source for server, nil when
// the login is of another server or there is none.
func loginSource(home, server string) apiclient.TokenSource {
	st, err := login.Load(home, nil)
	if err != nil || st == nil {
		return nil
	}
	cl, err := apiclient.New(server, "", nil)
	if err != nil || cl.Base != st.Server {
		return nil
	}
	return st.Source()
}
