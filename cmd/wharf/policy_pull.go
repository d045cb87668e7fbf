package main

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/cli/shell"
	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/client/login"
	"github.com/wharfhq/wharf/internal/client/policyremote"
	"github.com/wharfhq/wharf/internal/core/apiclient"
	"github.com/wharfhq/wharf/internal/core/policy"
)

// pullResult is `wharf policy pull --json`.
type pullResult struct {
	Server    string               `json:"server"`
	Version   string               `json:"version"`
	Revision  uint64               `json:"revision"`
	ETag      string               `json:"etag"`
	From      string               `json:"from"` // network or cache
	Status    int                  `json:"status"`
	Confirmed time.Time            `json:"confirmed"`
	KeyID     string               `json:"keyid"`
	KeySource string               `json:"keySource"`
	CacheDir  string               `json:"cacheDir"`
	Layers    []policy.BundleLayer `json:"layers"`
	Warnings  []string             `json:"warnings"`
	// Managed is the managed settings file that names this server; empty
	// for --policy-url.
	Managed string `json:"managed,omitempty"`
	// Others are the further servers, when more than one applies.
	Others []pullResult `json:"others,omitempty"`
}

// PolicyPullOptions are wharf policy pull's inputs: the servers come from
// the home's managed settings and policy configuration.
type PolicyPullOptions struct {
	IO   streams
	Home *home.Home
	// Record is the server --server named: recorded in the home once its
	// bundle is pulled, so later commands enforce it without flags.
	Record string
}

func newPolicyPullCmd(a *app) *cobra.Command {
	opts := &PolicyPullOptions{}
	cmd := &cobra.Command{
		Use:   "pull",
		Short: "Fetch the policy server's signed bundle into the cache and show what is enforced",
		Long: "Fetches the bundle of every policy server that applies (those the managed settings name with policyUrl, then --policy-url, env WHARF_SERVER) with --token (env WHARF_TOKEN), sending the cached ETag: " +
			"an unchanged policy costs a 304. The bundle is verified with --policy-key, or with the server's key trusted on first use and kept in " +
			"$WHARF_HOME/policy/<host>/key.pem. When the server cannot be reached the cached bundle stays in force, with a warning saying how old it is; " +
			"with no cache and no server, every command that consults policy fails closed.",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.Home = a.io(), a.h
			if f := cmd.Flags().Lookup("server"); f != nil && f.Changed {
				opts.Record = a.remote.url
			}
			return runPolicyPull(cmd.Context(), opts)
		},
	}
	// --server is the one name of the server setting; it sets what
	// --policy-url sets, and is recorded in the home.
	cmd.Flags().StringVar(&a.remote.url, "server", "", "the wharf server whose policy to pull and keep in force for later commands (recorded in $WHARF_HOME/server.json; env WHARF_SERVER)")
	return cmd
}

// runPolicyPull pulls the bundle of every policy server that applies (or
// keeps the cached one when a server is unreachable) and prints what each
// enforces.
func runPolicyPull(ctx context.Context, opts *PolicyPullOptions) error {
	io := opts.IO
	servers, err := opts.Home.ManagedPolicyServers()
	if err != nil {
		return err
	}
	if len(servers) == 0 {
		return noPolicyServer()
	}
	var all []pullResult
	var offline []string // servers not reached: their cached bundles stay in force
	for _, srv := range servers {
		res, err := opts.Home.PullPolicy(ctx, srv)
		if ue, ok := errors.AsType[*apiclient.UnreachableError](err); ok && shell.ErrorType(err) == policyremote.TypeUnavailable {
			// Pulling is what failed: the server did not answer,
			// as any command that talks to it reports.
			return ue
		}
		if err != nil {
			return err
		}
		r := pullResult{Server: srv.URL, Version: res.Info.Version, Revision: res.Info.Revision, ETag: res.ETag, From: res.From,
			Status: res.Status, Confirmed: res.Confirmed, KeyID: res.KeyID, KeySource: res.KeySource, CacheDir: res.CacheDir,
			Layers: res.Info.Layers, Warnings: res.Warnings, Managed: srv.Managed}
		if r.Layers == nil {
			r.Layers = []policy.BundleLayer{}
		}
		if r.From == "cache" && r.Status == 0 {
			offline = append(offline, srv.URL)
		}
		all = append(all, r)
	}
	if opts.Record != "" {
		if err := login.RecordServer(opts.Home.Paths().Home(), opts.Record); err != nil {
			return err
		}
	}
	out := all[0]
	out.Others = all[1:]
	if io.JSON {
		if err := io.printJSON(out); err != nil {
			return err
		}
	} else {
		for i, r := range all {
			if i > 0 {
				io.printf("\n")
			}
			printPull(io, r)
		}
	}
	if len(offline) > 0 {
		// Pulling is what was asked, and it failed: exit non-zero, as any
		// command that cannot reach the server does. The cached bundle
		// stays in force for every command (the warning says how old).
		return &apiclient.UnreachableError{Server: strings.Join(offline, ", "),
			Err: errors.New("nothing was pulled; the cached policy bundle stays in force")}
	}
	return nil
}

func printPull(io streams, out pullResult) {
	from := "the network"
	if out.From == "cache" {
		from = "the cache"
		if out.Status == 304 {
			from += " (unchanged on the server)"
		} else {
			from += " (server unreachable)"
		}
	}
	io.printf("policy %s (revision %d) from %s\n", shortVersion(out.Version), out.Revision, from)
	io.printf("server:    %s\n", out.Server)
	if out.Managed != "" {
		io.printf("named by:  %s\n", out.Managed)
	}
	io.printf("etag:      %s\n", out.ETag)
	io.printf("confirmed: %s\n", out.Confirmed.Format(time.RFC3339))
	io.printf("key:       %s (%s)\n", out.KeyID, out.KeySource)
	io.printf("cache:     %s\n", out.CacheDir)
	var names []string
	for _, l := range out.Layers {
		names = append(names, l.Name)
	}
	if len(names) == 0 {
		io.printf("layers:    none\n")
	} else {
		io.printf("layers:    %s\n", strings.Join(names, ", "))
	}
}
