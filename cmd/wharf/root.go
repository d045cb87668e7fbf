package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
	"golang.org/x/term"

	"github.com/wharfhq/wharf/internal/cli/cliconfig"
	"github.com/wharfhq/wharf/internal/cli/cliusage"
	"github.com/wharfhq/wharf/internal/cli/shell"
	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

// app is what every command gets: configuration, paths, output streams and
// the home it opens (home.Home: store, marketplaces, policy, installer,
// runtime). app itself keeps only what the command line decides: flags,
// output and exit codes. One app serves one command invocation.
type app struct {
	stdout io.Writer
	stderr io.Writer
	cfg    config
	env    Env
	proc   process

	// h opens what the command needs; nil until the configuration is
	// loaded.
	h *home.Home

	running bool
	quiet   bool // --quiet: no progress output

	// policyPaths are the --policy layers, after the managed directory.
	policyPaths []string
	remote      remotePolicyFlags // --policy-url, --token, --policy-key

	reporting     bool // wharf inventory report: starts no background report
	reportStarted bool // one background report per process at most
}

// process is what the process running wharf gives a command besides its
// arguments and output streams; tests that run commands in-process pass
// their own.
type process struct {
	// isTerminal reports whether w is a terminal; nil means: an *os.File
	// that is one.
	isTerminal func(w io.Writer) bool
	// noBackgroundReports keeps the process from starting itself as a
	// background inventory report (a test binary must never do that).
	noBackgroundReports bool
	// now, when set, is the clock that decides which waivers have expired
	// (home.Options.Clock); nil means the real one.
	now func() time.Time
}

// config is the resolved configuration (home.Config). Precedence: flags >
// WHARF_* env > $WHARF_HOME/config.{json,yaml} > defaults.
type config = home.Config

// newRootCmd builds the command tree. Register a new verb with one line in
// the AddCommand list below.
func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "wharf",
		Short:         "Plugin marketplaces and policy for coding agents",
		Long:          "wharf adds Claude Code compatible plugin marketplaces, searches and validates them, and installs their plugins under policy.",
		Version:       buildVersion(),
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.markRunning(cmd)
			return a.load(cmd)
		},
	}
	pf := root.PersistentFlags()
	pf.String("home", "", "wharf's state directory (env WHARF_HOME, default ~/.wharf)")
	pf.Bool("json", false, "print machine-readable JSON (errors go to stderr as JSON)")
	pf.BoolVarP(&a.quiet, "quiet", "q", false, "no progress output (it is shown only on a terminal, and never with --json)")
	pf.StringArrayVar(&a.policyPaths, "policy", nil, "an extra policy layer (settings JSON, .rego file or managed-style directory), after the managed directory; repeatable, highest first")
	addRemotePolicyFlags(pf, &a.remote)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	cliusage.Apply(root)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetVersionTemplate("wharf {{.Version}}\n")

	root.AddCommand(newMarketplaceCmd(a))
	root.AddCommand(newSearchCmd(a))
	root.AddCommand(newShowCmd(a))
	root.AddCommand(newValidateCmd(a))
	root.AddCommand(newInstallCmd(a))
	root.AddCommand(newUninstallCmd(a))
	root.AddCommand(newUpdateCmd(a))
	root.AddCommand(newOutdatedCmd(a))
	root.AddCommand(newPruneCmd(a))
	root.AddCommand(newEnableCmd(a, true))
	root.AddCommand(newEnableCmd(a, false))
	root.AddCommand(newListCmd(a))
	root.AddCommand(newGCCmd(a))
	root.AddCommand(newKeygenCmd(a))
	root.AddCommand(newSignCmd(a))
	root.AddCommand(newVerifyCmd(a))
	root.AddCommand(newAgentCmd(a))
	root.AddCommand(newServeMovedCmd())
	root.AddCommand(newTokenCmd(a))
	root.AddCommand(newLoginCmd(a), newLogoutCmd(a), newWhoAmICmd(a)) // login.go
	root.AddCommand(newServerCmd(a))
	root.AddCommand(newPolicyCmd(a))
	root.AddCommand(newDoctorCmd(a))
	root.AddCommand(newConfigCmd(a))
	root.AddCommand(newInventoryCmd(a))
	root.AddCommand(newRequestCmd(a))
	return root
}

// newServeMovedCmd answers the `wharf serve` of earlier versions: the
// server is a command of its own, so that this client links neither the web
// framework nor the etcd client.
func newServeMovedCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "serve",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage,
				Err:  errors.New("the server is not part of the wharf client: it is the command wharf-server, with the same flags"),
				Hint: "run: wharf-server --help (in the source tree: go run ./cmd/wharf-server)"}
		},
	}
}

// run executes one wharf invocation and returns its exit code.
func run(args []string, stdout, stderr io.Writer) int {
	now, err := testClock()
	if err != nil {
		fmt.Fprintf(stderr, "wharf: %v\n", err)
		return 2
	}
	return runIn(process{now: now}, args, stdout, stderr)
}

// runIn is run in the process p.
func runIn(p process, args []string, stdout, stderr io.Writer) int {
	// Ctrl-C cancels the command's context: network steps, lock waits and
	// fetches stop, temporary files are removed on the way out, and the
	// command exits 130. The first one also restores the default action,
	// so a second Ctrl-C ends the process at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	a := &app{stdout: stdout, stderr: stderr, proc: p}
	root := newRootCmd(a)
	root.SetArgs(args)
	_, err := root.ExecuteContextC(ctx)
	if cerr := a.close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil && ctx.Err() != nil {
		// Whatever the interrupted step made of the cancellation (a
		// failed download, a timeout), the user stopped it.
		err = interrupted()
	}
	a.maybeReport(nil, false)
	return shell.Exit(shell.Ending{Prog: "wharf", Args: args, Stderr: a.stderr, JSON: a.cfg.JSON, Running: a.running}, err)
}

// typeInterrupted marks a command stopped by Ctrl-C: exit 130.
const typeInterrupted = shell.TypeInterrupted

// interrupted is the error of a command the user stopped while it ran.
func interrupted() error { return shell.Interrupted() }

// exitCode is shell.ExitCode: the one place where errors become exit codes.
func exitCode(err error) int { return shell.ExitCode(err) }

// typeUsage marks command-line mistakes (exit 2).
const typeUsage = shell.TypeUsage

func usageError(err error) error { return shell.UsageError("wharf", err) }

// exactArgs is cobra.ExactArgs with a message that names the arguments.
func exactArgs(n int, names string) cobra.PositionalArgs { return shell.ExactArgs(n, names) }

// maxArgs is cobra.MaximumNArgs with a message that names the arguments.
func maxArgs(n int, names string) cobra.PositionalArgs { return shell.MaxArgs(n, names) }

// running is set once cobra has parsed flags and arguments and a command's
// own code starts; errors before that are usage errors.
func (a *app) markRunning(*cobra.Command) { a.running = true }

// load resolves the configuration for cmd.
func (a *app) load(cmd *cobra.Command) error {
	v := viper.New()
	v.SetEnvPrefix("WHARF")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_", ".", "_"))
	v.AutomaticEnv()
	userHome, _ := os.UserHomeDir()
	v.SetDefault("home", filepath.Join(userHome, ".wharf"))
	home.Default().SetDefaults(v)
	for _, k := range []string{"home", "json"} {
		if err := v.BindPFlag(k, cmd.Flags().Lookup(k)); err != nil {
			return err
		}
	}
	a.cfg.JSON = v.GetBool("json") // so a config error below prints in the right form
	dir := v.GetString("home")
	if f := cmd.Flags().Lookup("home"); f != nil && f.Changed && strings.TrimSpace(f.Value.String()) == "" {
		return usageError(errors.New("--home is empty; it must name wharf's state directory"))
	}
	if strings.TrimSpace(dir) == "" {
		return usageError(errors.New("WHARF_HOME is empty; it must name wharf's state directory"))
	}
	if dir == "~" || strings.HasPrefix(dir, "~/") {
		dir = filepath.Join(userHome, strings.TrimPrefix(dir, "~"))
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return configError("home", err)
	}
	a.env = layout.New(abs)
	a.cfg.Home = abs
	if err := a.readConfigFile(v); err != nil {
		return err
	}
	if err := a.cfg.Parse(v); err != nil {
		return err
	}
	if err := a.cfg.Validate(); err != nil {
		return err
	}
	a.cfg.Policy = a.policyConfig()
	h, err := home.Open(home.Options{Paths: a.env, Config: a.cfg, Progress: a.progress(), Warn: func(msg string) { a.warnf("%s", msg) }, Clock: a.proc.now})
	if err != nil {
		return err
	}
	a.h = h
	return nil
}

// policyConfig is what the flags and the environment add to the managed
// policy layers: --policy, --policy-url (WHARF_SERVER), --token
// (WHARF_TOKEN), --policy-key (WHARF_POLICY_KEY) and WHARF_MANAGED_DIR.
func (a *app) policyConfig() home.PolicyConfig {
	pc := home.PolicyConfig{Paths: a.policyPaths, ExtraManagedDir: os.Getenv("WHARF_MANAGED_DIR"),
		URL: a.remote.url, Token: a.remote.token, KeyFile: a.remote.keyFile}
	if pc.URL == "" {
		// The server setting (login.go): WHARF_SERVER, the deprecated
		// WHARF_POLICY_URL, else the server recorded in the home. It adds
		// a policy server; the managed settings' servers stay in force.
		u, err := configuredServer(a.io(), "", a.cfg.Home)
		if err != nil {
			a.warnf("%v", err)
		}
		pc.URL = u
	}
	if pc.Token == "" {
		pc.Token = os.Getenv("WHARF_TOKEN")
	}
	if pc.Token == "" {
		// The signed-in user's token goes to its server only (TokenFor).
		pc.LoginServer, pc.LoginToken = a.loginToken()
	}
	if pc.KeyFile == "" {
		pc.KeyFile = os.Getenv("WHARF_POLICY_KEY")
	}
	return pc
}

func (a *app) readConfigFile(v *viper.Viper) error {
	return cliconfig.Read(v, a.env.ConfigFiles(), a.stderr, "wharf")
}

func configError(key string, err error) error { return cliconfig.Error(key, err) }

// Store opens state.db on first use (home.Home.Store).
func (a *app) Store() (store.Store, error) { return a.h.Store() }

func (a *app) close() error {
	if a.h == nil {
		return nil
	}
	return a.h.Close()
}

// readOnlyHome reports whether this process cannot write WHARF_HOME (or
// its state.db); false before the home is known.
func (a *app) readOnlyHome() bool { return a.h != nil && a.h.ReadOnly() }

// Marketplaces returns a Manager over the store and WHARF_HOME/marketplaces.
func (a *app) Marketplaces() (*marketplace.Manager, error) { return a.h.Marketplaces() }

// progress returns where progress (git's, download and install bars)
// goes: stderr when it is a terminal and output is for humans, without
// --quiet; nowhere otherwise.
func (a *app) progress() io.Writer {
	if a.cfg.JSON || a.quiet {
		return nil
	}
	isTerminal := a.proc.isTerminal
	if isTerminal == nil {
		isTerminal = fileIsTerminal
	}
	if isTerminal(a.stderr) {
		return a.stderr
	}
	return nil
}

// fileIsTerminal reports whether w is a terminal.
func fileIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
