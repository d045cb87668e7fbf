package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"
	"golang.org/x/term"

	"github.com/wharfhq/wharf/internal/cli/cliconfig"
	"github.com/wharfhq/wharf/internal/cli/cliusage"
	"github.com/wharfhq/wharf/internal/cli/shell"
	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/toolpin"
	"github.com/wharfhq/wharf/plugin"
)

// app is what every command gets: configuration, paths, output streams and
// the lazily opened store. One app serves one command invocation.
type app struct {
	stdout io.Writer
	stderr io.Writer
	cfg    config
	env    Env

	// gate is consulted before marketplace sources are fetched; nil allows all.
	gate marketplace.Gate

	st      *store.OnUse
	running bool
	quiet   bool  // --quiet: no progress output
	roHome  *bool // readOnlyHome, once known
	// mktWriter marks a command that changes marketplaces; mktUnlock
	// releases the shared marketplace lock a reading command holds.
	mktWriter bool
	mktUnlock func()

	// policyPaths are the --policy layers, after the managed directory.
	policyPaths []string
	pol         *policy.Engine
	remote      remotePolicyFlags // --policy-url, --token, --policy-key

	// usedPlugins marks a command that read the installed plugins, and
	// hasPolicyServer one whose policy names a server: after it, a
	// background inventory report may be due (maybeReport).
	usedPlugins     bool
	hasPolicyServer bool
	reporting       bool // wharf inventory report: starts no background report
	reportStarted   bool // one background report per process at most
	// bundlePins are the tool pins of the policy bundles the last policy
	// load pulled (loadPolicy); the engine holds them.
	bundlePins []toolpin.Pin
	// admissions are those of the policy bundles loadPolicy last pulled,
	// one per server that carries some.
	admissions []*policy.Admissions
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
	a := &app{stdout: stdout, stderr: stderr}
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
	return a.cfg.Validate()
}

func (a *app) readConfigFile(v *viper.Viper) error {
	return cliconfig.Read(v, a.env.ConfigFiles(), a.stderr, "wharf")
}

func configError(key string, err error) error { return cliconfig.Error(key, err) }

// getenv is the environment as the marketplace package sees it, with
// configured values (github-host) in place of the raw variables.
func (a *app) getenv(k string) string {
	if k == "WHARF_GITHUB_HOST" {
		return a.cfg.GitHubHost
	}
	return os.Getenv(k)
}

// Store opens state.db on first use. A second wharf process waits up to
// lock-timeout for the first to finish, then fails with a clear message.
func (a *app) Store() (store.Store, error) {
	if a.st != nil {
		return a.st, nil
	}
	// The file is held only while a transaction runs, so a long command
	// (an install fetching plugins) does not lock out an agent starting
	// or a `wharf list` meanwhile.
	// A home this process cannot write (a baked image, a sandboxed agent)
	// is opened read-only: reading commands work, writing ones fail on
	// their first write with the hint below.
	a.st = store.OpenBoltOnUse(a.env.StateDB(), store.Options{LockTimeout: a.cfg.LockTimeout, ReadOnly: a.readOnlyHome()}, func(err error) error { return storeOpenError(a.env, err) })
	return a.st, nil
}

func (a *app) close() error {
	a.saveMemo()
	if a.mktUnlock != nil {
		a.mktUnlock()
		a.mktUnlock = nil
	}
	if a.st == nil {
		return nil
	}
	err := a.st.Close()
	a.st = nil
	return err
}

// marketplaceLock is $WHARF_HOME/marketplaces/.lock: marketplace add,
// update and remove hold it exclusively around each change (a git update
// rewrites its clone in place); every other command that reads the clones
// holds it shared, from its first use of the marketplaces to its end, so it
// never copies a plugin out of a half-updated clone. Readers do not wait
// for each other.
func (a *app) marketplaceLock() string { return a.env.MarketplacesLock() }

// lockWait bounds how long a command waits for the marketplace lock.
func (a *app) lockWait() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), a.cfg.LockTimeout)
}

// withMarketplaceLock runs fn holding the marketplace lock exclusively.
// Only commands that started with marketplaceWriter may call it.
func (a *app) withMarketplaceLock(ctx context.Context, fn func(context.Context) error) error {
	wait, cancel := a.lockWait()
	defer cancel()
	unlock, err := cache.LockFile(wait, a.marketplaceLock())
	if err != nil {
		return err
	}
	defer unlock()
	return fn(ctx)
}

// marketplaceWriter returns the Manager for a command that changes
// marketplaces: it takes the marketplace lock exclusively per change
// (withMarketplaceLock), never shared.
func (a *app) marketplaceWriter() (*marketplace.Manager, error) {
	a.mktWriter = true
	return a.Marketplaces()
}

// saveMemo keeps the policy decisions this command made for the next one.
// Nothing is written when WHARF_HOME does not exist (a command that only
// read policy); a write that fails costs the next command speed, not
// correctness, so it is a warning.
func (a *app) saveMemo() {
	if a.pol == nil || a.env.Home() == "" || a.readOnlyHome() {
		return
	}
	if fi, err := os.Stat(a.env.Home()); err != nil || !fi.IsDir() {
		return
	}
	if err := a.pol.SaveMemo(); err != nil {
		if hint := plugin.HintOf(err); hint != "" {
			a.warnf("%v (%s)", err, hint)
			return
		}
		a.warnf("%v", err)
	}
}

// readOnlyHome reports whether this process cannot write WHARF_HOME (or
// its state.db). Reading commands then create, lock for writing and
// rewrite nothing there: no lock file, no policy memo, state.db opened
// read-only.
func (a *app) readOnlyHome() bool {
	if a.roHome != nil {
		return *a.roHome
	}
	ro := false
	home := a.env.Home()
	if home != "" {
		if _, err := os.Stat(home); err == nil {
			ro = !writable(home)
			if _, err := os.Stat(a.env.StateDB()); err == nil && !writable(a.env.StateDB()) {
				ro = true
			}
		}
	}
	a.roHome = &ro
	return ro
}

// readOnlyRLock takes the marketplace lock shared without creating or
// writing anything: the lock file is opened read-only (flock needs no
// write access). When it does not exist, no marketplace was ever changed
// through a lock here, and a home this process cannot write needs none.
func readOnlyRLock(ctx context.Context, path string) (func(), error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil
	}
	l := flock.New(path, flock.SetFlag(os.O_RDONLY))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := l.TryRLock()
		if ok {
			return func() { l.Unlock() }, nil
		}
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) && pe.Op == "open" {
				return nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: plugin.TypeSource, Object: path, Err: err,
					Hint: "make the file readable, or run wharf as a user who can read " + filepath.Dir(path)}
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			return nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: "store-locked", Object: path, Err: ctx.Err(),
				Hint: "a marketplace add, update or remove is running; wait for it, or raise WHARF_LOCK_TIMEOUT"}
		case <-tick.C:
		}
	}
}

// Marketplaces returns a Manager over the store and WHARF_HOME/marketplaces.
func (a *app) Marketplaces() (*marketplace.Manager, error) {
	st, err := a.Store()
	if err != nil {
		return nil, err
	}
	if !a.mktWriter && a.mktUnlock == nil {
		wait, cancel := a.lockWait()
		var unlock func()
		var err error
		if a.readOnlyHome() {
			unlock, err = readOnlyRLock(wait, a.marketplaceLock())
		} else {
			unlock, err = cache.RLockFile(wait, a.marketplaceLock())
		}
		cancel()
		if err != nil {
			return nil, err
		}
		a.mktUnlock = unlock
	}
	return marketplace.NewManager(st, marketplace.Options{
		Dir:         a.env.Marketplaces(),
		Gate:        a.marketGate(),
		ProgressBar: a.progress(),
		Fetch:       a.cfg.Fetch,
	}), nil
}

// progress returns where progress (git's, download and install bars)
// goes: stderr when it is a terminal and output is for humans, without
// --quiet; nowhere otherwise.
func (a *app) progress() io.Writer {
	if a.cfg.JSON || a.quiet {
		return nil
	}
	if isTerminal(a.stderr) {
		return a.stderr
	}
	return nil
}

// isTerminal reports whether w is a terminal (a variable for tests).
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
