package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/marketplace"
)

// searchResult is one line of `wharf search --json`.
type searchResult struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Marketplace string   `json:"marketplace"`
	Version     string   `json:"version"`
	Description string   `json:"description"`
	Category    string   `json:"category,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

// SearchOptions are wharf search's inputs.
type SearchOptions struct {
	IO   streams
	Home *home.Home
	// Query are the words that must all match; none lists every plugin.
	Query []string
	// Marketplace, when set, keeps only that marketplace's plugins.
	Marketplace string
}

func newSearchCmd(a *app) *cobra.Command {
	opts := &SearchOptions{}
	cmd := &cobra.Command{
		Use:   "search [query]",
		Short: "Search the plugins of every known marketplace",
		Long:  "Search plugin names, descriptions, keywords, categories and tags, case-insensitively. Every word of the query must match. Without a query, list every plugin.",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.IO, opts.Home, opts.Query = a.io(), a.h, args
			return runSearch(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Marketplace, "marketplace", "m", "", "only this marketplace")
	return cmd
}

// runSearch prints the plugins of the known marketplaces that match every
// word of opts.Query, with the catalog's problems as warnings.
func runSearch(_ context.Context, opts *SearchOptions) error {
	io, mkt := opts.IO, opts.Marketplace
	mgr, err := opts.Home.Marketplaces()
	if err != nil {
		return err
	}
	cat, err := mgr.Catalog()
	if err != nil {
		return err
	}
	for _, p := range cat.Problems() {
		fmt.Fprintf(io.Err, "wharf: warning: %v\n", p)
	}
	if mkt != "" {
		if _, err := mgr.Get(mkt); err != nil {
			return err
		}
	}
	query := strings.Join(opts.Query, " ")
	results := []searchResult{}
	for _, h := range cat.Search(query) {
		if mkt != "" && h.ID.Source != mkt {
			continue
		}
		results = append(results, toSearchResult(h))
	}
	if io.JSON {
		return io.printJSON(results)
	}
	if len(results) == 0 {
		io.printf("No plugins match %q.\n", query)
		return nil
	}
	tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLUGIN\tVERSION\tCATEGORY\tDESCRIPTION")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Version, dash(r.Category), clip(r.Description, 70))
	}
	return tw.Flush()
}

func toSearchResult(h marketplace.Hit) searchResult {
	v := h.Version()
	if v == "" {
		v = "unknown"
	}
	return searchResult{ID: h.ID.String(), Name: h.ID.Name, Marketplace: h.ID.Source, Version: v,
		Description: h.Entry.Description, Category: h.Entry.Category, Tags: h.Entry.Tags}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clip shortens s to n runes on one line for tables.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
