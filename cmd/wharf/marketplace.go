package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/cli/shell"
	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/plugin"
)

func newMarketplaceCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "marketplace",
		Aliases: []string{"marketplaces", "mkt"},
		Short:   "Add, list, update and remove plugin marketplaces",
		Args:    exactArgs(0, "a subcommand (add, list, update, remove)"),
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newMarketplaceAddCmd(a, nil))
	cmd.AddCommand(newMarketplaceListCmd(a))
	cmd.AddCommand(newMarketplaceUpdateCmd(a))
	cmd.AddCommand(newMarketplaceRemoveCmd(a))
	return cmd
}

// MarketplaceAddOptions are wharf marketplace add's inputs.
type MarketplaceAddOptions struct {
	IO   streams
	Home *home.Home
	// Source is the argument, parsed, with a local path made absolute.
	Source plugin.MarketplaceSource
	Name   string
}

func newMarketplaceAddCmd(a *app, runF func(*MarketplaceAddOptions) error) *cobra.Command {
	opts := &MarketplaceAddOptions{}
	cmd := &cobra.Command{
		Use:   "add <source>",
		Short: "Add a marketplace from GitHub, a git URL, a directory, a file or a URL",
		Long: `Add a marketplace. <source> is one of:
  owner/repo[@ref]                    a GitHub repository (WHARF_GITHUB_HOST for GitHub Enterprise)
  https://host/repo.git[#ref]         a git repository (also ssh://, git@host:path, file://)
  ./dir or /abs/dir                   a local marketplace directory, read in place
  ./path/marketplace.json             a local marketplace.json file
  https://host/.../marketplace.json   a marketplace.json served over HTTPS

Git clones are shallow. Private repositories use GITHUB_TOKEN / GH_TOKEN /
GITLAB_TOKEN over HTTPS, or your SSH agent/keys for ssh URLs. Each network
step times out after WHARF_GIT_TIMEOUT (default 120s).`,
		Example: "  wharf marketplace add anthropics/claude-code\n  wharf marketplace add ./testdata/demo-marketplace\n  wharf marketplace add git@github.com:corp/plugins.git#stable --name corp",
		Args:    exactArgs(1, "one <source>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := plugin.ParseMarketplaceSource(args[0])
			if err != nil {
				return err
			}
			if src.Kind == plugin.MktGitHub && src.Ref == "" {
				if fi, err := os.Stat(src.Repo); err == nil && fi.IsDir() {
					return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: args[0],
						Err:  fmt.Errorf("%q is both a GitHub repository name and a directory here", args[0]),
						Hint: fmt.Sprintf("write ./%s for the directory, or https://github.com/%s.git for GitHub", src.Repo, src.Repo)}
				}
			}
			wd, err := os.Getwd()
			if err != nil {
				return err
			}
			userHome, _ := os.UserHomeDir()
			opts.Source = src.Abs(wd, userHome)
			opts.IO, opts.Home = a.io(), a.h
			if runF != nil {
				return runF(opts)
			}
			return runMarketplaceAdd(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Name, "name", "", "register the marketplace under this name instead of the one its marketplace.json declares")
	return cmd
}

// runMarketplaceAdd registers opts.Source (under opts.Name when set) and
// prints what it added and what to do next.
func runMarketplaceAdd(ctx context.Context, opts *MarketplaceAddOptions) error {
	io := opts.IO
	mgr, err := opts.Home.MarketplaceWriter()
	if err != nil {
		return err
	}
	var k marketplace.Known
	err = opts.Home.WithMarketplaceLock(ctx, func(ctx context.Context) error {
		k, err = mgr.Add(ctx, opts.Source, opts.Name)
		return err
	})
	if err != nil {
		return err
	}
	if io.JSON {
		return io.printJSON(k)
	}
	n := 0
	c := marketplace.LoadCatalog([]marketplace.Known{k})
	if l := c.Marketplaces(); len(l) == 1 && l[0].Marketplace != nil {
		n = len(l[0].Marketplace.Plugins)
		if l[0].Marketplace.Name != k.Name {
			fmt.Fprintf(io.Err, "wharf: note: the marketplace calls itself %q; its plugins are known here as <plugin>@%s\n", l[0].Marketplace.Name, k.Name)
		}
	}
	io.printf("Added marketplace %s (%d plugins) from %s\n", k.Name, n, k.Source)
	if k.Commit != "" {
		io.printf("  at commit %s\n", short(k.Commit))
	}
	io.printf("Next: wharf search --marketplace %s\n", k.Name)
	return nil
}

// MarketplaceListOptions are wharf marketplace list's inputs.
type MarketplaceListOptions struct {
	IO   streams
	Home *home.Home
}

func newMarketplaceListCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List known marketplaces",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMarketplaceList(cmd.Context(), &MarketplaceListOptions{IO: a.io(), Home: a.h})
		},
	}
}

// runMarketplaceList prints the known marketplaces: name, source, kind
// and when each was last updated.
func runMarketplaceList(_ context.Context, opts *MarketplaceListOptions) error {
	io := opts.IO
	mgr, err := opts.Home.Marketplaces()
	if err != nil {
		return err
	}
	known, err := mgr.List()
	if err != nil {
		return err
	}
	if io.JSON {
		if known == nil {
			known = []marketplace.Known{}
		}
		return io.printJSON(known)
	}
	if len(known) == 0 {
		io.printf("No marketplaces. Add one with: wharf marketplace add <source>\n")
		return nil
	}
	tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tKIND\tUPDATED")
	for _, k := range known {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.Name, k.Source, k.Source.Kind, k.LastUpdated.Local().Format(time.DateTime))
	}
	return tw.Flush()
}

// MarketplaceUpdateOptions are wharf marketplace update's inputs.
type MarketplaceUpdateOptions struct {
	IO   streams
	Home *home.Home
	// Names are the marketplaces to update (the command takes at most
	// one); none means all known ones.
	Names []string
}

func newMarketplaceUpdateCmd(a *app) *cobra.Command {
	opts := &MarketplaceUpdateOptions{}
	return &cobra.Command{
		Use:   "update [name]",
		Short: "Fetch the latest catalog of one or all marketplaces",
		Long:  "Fetch and hard-reset each git marketplace to its remote ref (or pinned commit), download URL marketplaces again, and re-read local ones. If anything fails, the previous copy stays as it was.",
		Args:  maxArgs(1, "one marketplace name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.IO, opts.Home, opts.Names = a.io(), a.h, args
			return runMarketplaceUpdate(cmd.Context(), opts)
		},
	}
}

// runMarketplaceUpdate updates opts.Names, or every known marketplace,
// each under the marketplace lock; one that fails leaves the others
// updated, and its previous copy as it was.
func runMarketplaceUpdate(ctx context.Context, opts *MarketplaceUpdateOptions) error {
	io := opts.IO
	mgr, err := opts.Home.MarketplaceWriter()
	if err != nil {
		return err
	}
	names := opts.Names
	if len(names) == 0 {
		known, err := mgr.List()
		if err != nil {
			return err
		}
		for _, k := range known {
			names = append(names, k.Name)
		}
	}
	updated := []marketplace.Known{}
	var errs []error
	for _, name := range names {
		var before, k marketplace.Known
		err := opts.Home.WithMarketplaceLock(ctx, func(ctx context.Context) error {
			before, _ = mgr.Get(name)
			var err error
			k, err = mgr.Update(ctx, name)
			return err
		})
		if err != nil {
			if len(names) > 1 {
				shell.PrintError(io.Err, "wharf", io.JSON, err)
			}
			errs = append(errs, err)
			continue
		}
		updated = append(updated, k)
		if io.JSON {
			continue
		}
		switch {
		case k.Commit != "" && before.Commit != k.Commit:
			io.printf("Updated %s: %s -> %s\n", name, short(before.Commit), short(k.Commit))
		case k.Commit != "":
			io.printf("%s is up to date (%s)\n", name, short(k.Commit))
		default:
			io.printf("Updated %s from %s\n", name, k.Source)
		}
	}
	if io.JSON {
		if err := io.printJSON(updated); err != nil {
			return err
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	if len(errs) > 1 {
		return fmt.Errorf("%d of %d marketplaces failed to update: %w", len(errs), len(names), errors.Join(errs...))
	}
	if len(names) == 0 && !io.JSON {
		io.printf("No marketplaces. Add one with: wharf marketplace add <source>\n")
	}
	return nil
}

// MarketplaceRemoveOptions are wharf marketplace remove's inputs.
type MarketplaceRemoveOptions struct {
	IO   streams
	Home *home.Home
	// Name is the marketplace to forget.
	Name string
}

func newMarketplaceRemoveCmd(a *app) *cobra.Command {
	opts := &MarketplaceRemoveOptions{}
	return &cobra.Command{
		Use:     "remove <name>",
		Aliases: []string{"rm"},
		Short:   "Forget a marketplace and delete its clone",
		Long:    "Forget a marketplace and delete wharf's clone of it. A local directory or file source is never deleted.",
		Args:    exactArgs(1, "one marketplace name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.IO, opts.Home, opts.Name = a.io(), a.h, args[0]
			return runMarketplaceRemove(cmd.Context(), opts)
		},
	}
}

// runMarketplaceRemove forgets opts.Name under the marketplace lock and
// names the plugins from it that stay installed.
func runMarketplaceRemove(ctx context.Context, opts *MarketplaceRemoveOptions) error {
	io := opts.IO
	mgr, err := opts.Home.MarketplaceWriter()
	if err != nil {
		return err
	}
	var k marketplace.Known
	err = opts.Home.WithMarketplaceLock(ctx, func(ctx context.Context) error {
		k, err = mgr.Remove(ctx, opts.Name)
		return err
	})
	if err != nil {
		return err
	}
	left := installedFrom(opts.Home, k.Name)
	if io.JSON {
		return io.printJSON(removedMarketplace{Known: k, StillInstalled: nonNil(left)})
	}
	io.printf("Removed marketplace %s (%s)\n", k.Name, k.Source)
	if len(left) > 0 {
		names := make([]string, len(left))
		for i, id := range left {
			names[i] = id.String()
		}
		io.printf("Its plugins stay installed and enabled, but can no longer be updated: %s\n", strings.Join(names, ", "))
		io.printf("Remove them with: wharf uninstall <name@%s>, or add the marketplace back: wharf marketplace add %s\n", k.Name, k.Source)
	}
	return nil
}

// removedMarketplace is marketplace remove's --json output: the marketplace
// as it was known, and the plugins from it that are still installed.
type removedMarketplace struct {
	marketplace.Known
	StillInstalled []plugin.ID `json:"stillInstalled"`
}

// installedFrom lists the installed plugins that come from marketplace name
// (nil when the registry cannot be read: this only feeds a notice).
func installedFrom(h *home.Home, name string) []plugin.ID {
	st, err := h.Store()
	if err != nil {
		return nil
	}
	c, err := cache.New(cache.Options{Home: h.Paths().Home(), Store: st})
	if err != nil {
		return nil
	}
	recs, err := c.List()
	if err != nil {
		return nil
	}
	var ids []plugin.ID
	for _, r := range recs {
		if r.ID.Source == name {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	if sha == "" {
		return "(none)"
	}
	return strings.TrimSpace(sha)
}
