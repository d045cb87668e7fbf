// Command wharf-server runs wharf's HTTP API and web console: the catalog,
// signed policy bundles, verify, audit and tokens, over an embedded bbolt
// store or an etcd cluster shared by several replicas.
//
// It is a command of its own so that the client, cmd/wharf, links neither
// the web framework nor the etcd client: developers, CI and agents run
// wharf; an admin runs wharf-server.
//
//	go run ./cmd/wharf-server            # serve on 127.0.0.1:7070
//	wharf-server --help                  # every flag
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/wharfhq/wharf/internal/cli/cliconfig"
	"github.com/wharfhq/wharf/internal/cli/cliusage"
	"github.com/wharfhq/wharf/internal/cli/shell"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/plugin"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// app is what the server command gets: configuration and output streams.
type app struct {
	stdout  io.Writer
	stderr  io.Writer
	cfg     config
	running bool
}

// config is the resolved configuration, read as the client reads it:
// defaultConfig, then parse (flags > WHARF_* env >
// $WHARF_HOME/config.{json,yaml} > defaults). Each key is checked as it is
// parsed; the fetch settings are checked when serve builds its fetches.
type config struct {
	Home        string
	JSON        bool
	LockTimeout time.Duration
	GitTimeout  time.Duration
	NetIdle     time.Duration
	GitHubHost  string
}

// defaultConfig is the configuration nothing has set (Home is resolved by
// load, which knows the user's home directory and the --home flag).
func defaultConfig() config {
	return config{LockTimeout: 5 * time.Second, GitTimeout: marketplace.DefaultGitTimeout, NetIdle: marketplace.DefaultNetIdleTimeout}
}

// setDefaults makes c's values viper's defaults for the keys parse reads.
func (c config) setDefaults(v *viper.Viper) {
	v.SetDefault("json", c.JSON)
	v.SetDefault("lock-timeout", c.LockTimeout.String())
	v.SetDefault("git-timeout", c.GitTimeout.String())
	v.SetDefault("net-idle-timeout", c.NetIdle.String())
	v.SetDefault("github-host", c.GitHubHost)
}

// parse reads every key but home from v into c; a bad duration is a usage
// error naming the key.
func (c *config) parse(v *viper.Viper) error {
	c.JSON = v.GetBool("json")
	for _, d := range []struct {
		key string
		to  *time.Duration
	}{{"lock-timeout", &c.LockTimeout}, {"git-timeout", &c.GitTimeout}, {"net-idle-timeout", &c.NetIdle}} {
		t, err := cliconfig.Duration(v, d.key, time.Nanosecond)
		if err != nil {
			return err
		}
		*d.to = t
	}
	c.GitHubHost = strings.TrimSpace(v.GetString("github-host"))
	return nil
}

// typeUsage marks command-line mistakes (exit 2).
const typeUsage = shell.TypeUsage

func newRootCmd(a *app) *cobra.Command {
	o := &serveOptions{}
	root := &cobra.Command{
		Use:   "wharf-server [--addr 127.0.0.1:7070] [--data DIR | --store etcd://host:2379,...]",
		Short: "The wharf API server: catalog, policy bundle, verify, audit, tokens and the web console",
		Long: "Run the HTTP API and the web console with an embedded bbolt store in --data\n" +
			"(default $WHARF_HOME/server).\n\n" +
			"On first start it creates an admin token and prints it once to stderr (or uses\n" +
			"WHARF_BOOTSTRAP_TOKEN), and registers the demo marketplace (--demo) so the catalog\n" +
			"is not empty. Stop it with Ctrl-C or SIGTERM: in-flight requests finish first.\n" +
			"Several replicas share state with --store etcd://host:2379,host2:2379/prefix\n" +
			"(see docs/production.md).\n\n" +
			"Its tokens are managed with the client, its policy layers in the console\n" +
			"(/ui/) or the API (PUT /v1/policy/layers/{layer}); clients enforce its bundle:\n" +
			"  wharf token create --role developer --server http://127.0.0.1:7070 --token ADMIN\n" +
			"  wharf --policy-url http://127.0.0.1:7070 --token AGENT policy pull",
		Version:       buildVersion(),
		Args:          exactArgs(0, "no arguments"),
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.running = true
			return a.load(cmd)
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runServe(cmd.Context(), o) },
	}
	pf := root.PersistentFlags()
	pf.String("home", "", "wharf's state directory (env WHARF_HOME, default ~/.wharf); the server keeps its data in <home>/server unless --data says otherwise")
	pf.Bool("json", false, "print the start-up line as JSON (errors go to stderr as JSON)")
	addServeFlags(root.Flags(), o)
	root.AddCommand(newCheckCmd(a), newRepairCmd(a), newAdminCmd(a))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	cliusage.Apply(root)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetVersionTemplate("wharf-server {{.Version}}\n")
	return root
}

// run executes one wharf-server invocation and returns its exit code.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	a := &app{stdout: stdout, stderr: stderr}
	root := newRootCmd(a)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return shell.Exit(shell.Ending{Prog: "wharf-server", Args: args, Stderr: a.stderr, JSON: a.cfg.JSON, Running: a.running}, err)
}

func usageError(err error) error { return shell.UsageError("wharf-server", err) }

// exactArgs is cobra.ExactArgs with a message that names the arguments.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage,
				Err:  fmt.Errorf("%s takes %s (got %d argument(s)): %q", cmd.CommandPath(), names, len(args), args),
				Hint: "see: " + cmd.CommandPath() + " --help (the client's commands are in: wharf --help)"}
		}
		return nil
	}
}

// buildVersion is the main module's version from the build info ("dev" for
// a build from a source tree).
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// load resolves the configuration: the same flags, WHARF_* variables and
// config file as the client's.
func (a *app) load(cmd *cobra.Command) error {
	v := viper.New()
	v.SetEnvPrefix("WHARF")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	userHome, _ := os.UserHomeDir()
	v.SetDefault("home", filepath.Join(userHome, ".wharf"))
	a.cfg = defaultConfig()
	a.cfg.setDefaults(v)
	for _, k := range []string{"home", "json"} {
		if err := v.BindPFlag(k, cmd.Flags().Lookup(k)); err != nil {
			return err
		}
	}
	a.cfg.JSON = v.GetBool("json")
	home := v.GetString("home")
	if f := cmd.Flags().Lookup("home"); f != nil && f.Changed && strings.TrimSpace(f.Value.String()) == "" {
		return usageError(errors.New("--home is empty; it must name wharf's state directory"))
	}
	if strings.TrimSpace(home) == "" {
		return usageError(errors.New("WHARF_HOME is empty; it must name wharf's state directory"))
	}
	if home == "~" || strings.HasPrefix(home, "~/") {
		home = filepath.Join(userHome, strings.TrimPrefix(home, "~"))
	}
	abs, err := filepath.Abs(home)
	if err != nil {
		return cliconfig.Error("home", err)
	}
	a.cfg.Home = abs
	if err := cliconfig.Read(v, layout.New(a.cfg.Home).ConfigFiles(), a.stderr, "wharf-server"); err != nil {
		return err
	}
	return a.cfg.parse(v)
}

// printJSON writes v to stdout as indented JSON.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printf writes human output to stdout.
func (a *app) printf(format string, args ...any) {
	fmt.Fprintf(a.stdout, format, args...)
}

// printError writes err to stderr: "wharf-server: <message>" and
// "Try: <hint>", or {"error": {"type","message","hint"}} under --json.
func (a *app) printError(err error) { shell.PrintError(a.stderr, "wharf-server", a.cfg.JSON, err) }
