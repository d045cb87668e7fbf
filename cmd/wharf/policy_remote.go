package main

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/plugin"
)

// remotePolicyFlags are the global flags naming a policy server: its
// layers apply after the managed directory and before --policy paths.
type remotePolicyFlags struct {
	url     string
	token   string
	keyFile string
}

func addRemotePolicyFlags(pf *pflag.FlagSet, f *remotePolicyFlags) {
	pf.StringVar(&f.url, "policy-url", "", "a wharf server whose policy bundle applies after the managed directory (env WHARF_SERVER); adds to any server the managed settings name (policyUrl), never replaces it")
	pf.StringVar(&f.token, "token", "", "bearer token for the wharf server (env WHARF_TOKEN)")
	pf.StringVar(&f.keyFile, "policy-key", "", "PEM public key the policy bundle must be signed with (env WHARF_POLICY_KEY); without it the server's key is trusted on first use and stored")
}

// policyURL is --policy-url, else WHARF_SERVER: a policy server the
// user adds. It never removes a server the managed settings name.
func (a *app) policyURL() string { return a.cfg.Policy.URL }

// policyServer is one policy server to enforce (home.PolicyServer).
type policyServer = home.PolicyServer

// keyFileError is a key file given on the command line that is not a key
// of the expected kind: a usage error (exit 2) naming the flag and the
// file, whatever layer the parser gave it.
func keyFileError(flag, file string, err error, hint string) error {
	return home.KeyFileError(flag, file, err, hint)
}

// managedPolicyServers reads the managed layers for `wharf policy pull`.
func (a *app) managedPolicyServers() ([]policyServer, error) { return a.h.ManagedPolicyServers() }

// noPolicyServer is the error of `wharf policy pull` with no server.
func noPolicyServer() error {
	return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Err: errors.New("no policy server"),
		Hint: "pass --policy-url URL or set WHARF_SERVER (or name one with policyUrl in the managed settings)"}
}
