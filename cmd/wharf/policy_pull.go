package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/policy"
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
}

func newPolicyPullCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "pull",
		Short: "Fetch the policy server's signed bundle into the cache and show what is enforced",
		Long: "Fetches the bundle of --policy-url (env WHARF_POLICY_URL) with --token (env WHARF_TOKEN), sending the cached ETag: " +
			"an unchanged policy costs a 304. The bundle is verified with --policy-key, or with the server's key trusted on first use and kept in " +
			"$WHARF_HOME/policy/<host>/key.pem. When the server cannot be reached the cached bundle stays in force, with a warning saying how old it is; " +
			"with no cache and no server, every command that consults policy fails closed.",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := a.pullPolicy(cmd.Context())
			if err != nil {
				return err
			}
			out := pullResult{Server: a.policyURL(), Version: res.Info.Version, Revision: res.Info.Revision, ETag: res.ETag, From: res.From,
				Status: res.Status, Confirmed: res.Confirmed, KeyID: res.KeyID, KeySource: res.KeySource, CacheDir: res.CacheDir,
				Layers: res.Info.Layers, Warnings: res.Warnings}
			if out.Layers == nil {
				out.Layers = []policy.BundleLayer{}
			}
			if a.cfg.JSON {
				return a.printJSON(out)
			}
			from := "the network"
			if res.From == "cache" {
				from = "the cache"
				if res.Status == 304 {
					from += " (unchanged on the server)"
				} else {
					from += " (server unreachable)"
				}
			}
			a.printf("policy %s (revision %d) from %s\n", shortVersion(out.Version), out.Revision, from)
			a.printf("etag:      %s\n", out.ETag)
			a.printf("confirmed: %s\n", out.Confirmed.Format(time.RFC3339))
			a.printf("key:       %s (%s)\n", out.KeyID, out.KeySource)
			a.printf("cache:     %s\n", out.CacheDir)
			var names []string
			for _, l := range out.Layers {
				names = append(names, l.Name)
			}
			if len(names) == 0 {
				a.printf("layers:    none\n")
			} else {
				a.printf("layers:    %s\n", strings.Join(names, ", "))
			}
			return nil
		},
	}
}
