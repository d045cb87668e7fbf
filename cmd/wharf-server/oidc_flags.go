package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/wharfhq/wharf/internal/server/identity"
	"github.com/wharfhq/wharf/internal/server/tokens"
	"github.com/wharfhq/wharf/plugin"
)

// oidcFlags configure single sign-on through an OpenID Connect provider
// (identity.Config). The client secret is never a flag's value: it is
// read from --oidc-client-secret-file or WHARF_OIDC_CLIENT_SECRET.
type oidcFlags struct {
	Issuer           string
	Name             string
	ClientID         string
	ClientSecretFile string
	RedirectURL      string
	DeviceClientID   string
	GroupsClaim      string
	Roles            []string
}

func addOIDCFlags(f *pflag.FlagSet, o *oidcFlags) {
	f.StringVar(&o.Issuer, "oidc-issuer", "", "OpenID Connect provider's issuer URL: turns on \"Sign in with <provider>\" in the console and wharf login")
	f.StringVar(&o.Name, "oidc-name", "", "the provider's name on the sign-in button (default: the issuer's host)")
	f.StringVar(&o.ClientID, "oidc-client-id", "", "the console's client id at the provider")
	f.StringVar(&o.ClientSecretFile, "oidc-client-secret-file", "", "file holding the console's client secret (or set WHARF_OIDC_CLIENT_SECRET)")
	f.StringVar(&o.RedirectURL, "oidc-redirect-url", "", "the console's callback as registered at the provider: https://HOST"+identity.CallbackPath)
	f.StringVar(&o.DeviceClientID, "oidc-device-client-id", "", "public client id at the provider for wharf login (device authorization grant); empty: no wharf login")
	f.StringVar(&o.GroupsClaim, "oidc-groups-claim", "groups", "the ID token claim that lists the user's groups")
	f.StringArrayVar(&o.Roles, "oidc-role", nil, "GROUP=ROLE: members of GROUP get ROLE (admin, developer, ci, agent); repeatable; the most powerful match wins")
}

// config is the identity configuration of the flags, or nil when
// --oidc-issuer is not set (and then no other --oidc flag may be).
func (o *oidcFlags) config(getenv func(string) string) (*identity.Config, error) {
	usage := func(flag string, err error, hint string) error {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: flag, Err: err, Hint: hint}
	}
	if o.Issuer == "" {
		if o.ClientID != "" || o.ClientSecretFile != "" || o.RedirectURL != "" || o.DeviceClientID != "" || len(o.Roles) > 0 {
			return nil, usage("--oidc-issuer", errors.New("--oidc-* flags given without --oidc-issuer"), "add --oidc-issuer https://idp.example.com")
		}
		return nil, nil
	}
	secret := strings.TrimSpace(getenv("WHARF_OIDC_CLIENT_SECRET"))
	if o.ClientSecretFile != "" {
		b, err := os.ReadFile(o.ClientSecretFile)
		if err != nil {
			return nil, usage("--oidc-client-secret-file", err, "pass a file that holds the client secret (mode 0600)")
		}
		secret = strings.TrimSpace(string(b))
		if secret == "" {
			return nil, usage(o.ClientSecretFile, errors.New("the client secret file is empty"), "write the client secret the provider gave into it")
		}
	}
	roles := map[string]tokens.Role{}
	for _, r := range o.Roles {
		g, role, err := identity.ParseRole(r)
		if err != nil {
			return nil, usage("--oidc-role", err, "e.g. --oidc-role platform-admins=admin --oidc-role data-team=developer")
		}
		if prev, ok := roles[g]; ok && prev != role {
			return nil, usage("--oidc-role", fmt.Errorf("group %q is mapped twice (%s and %s)", g, prev, role), "map each group once")
		}
		roles[g] = role
	}
	c := &identity.Config{Name: o.Name, Issuer: o.Issuer, ClientID: o.ClientID, ClientSecret: secret, RedirectURL: o.RedirectURL,
		DeviceClientID: o.DeviceClientID, GroupsClaim: o.GroupsClaim, Roles: roles}
	if err := c.Validate(); err != nil {
		var ce *identity.ConfigError
		if errors.As(err, &ce) {
			return nil, usage(ce.Field, err, "see docs/server.md, Single sign-on")
		}
		return nil, err
	}
	return c, nil
}
