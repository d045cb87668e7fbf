package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/client/collect"
	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/client/install"
	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/client/policyremote"
	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// defaultInventoryInterval is inventory.interval when nothing sets it.
const defaultInventoryInterval = home.DefaultInventoryInterval

// InventoryReportOptions are wharf inventory report's inputs.
type InventoryReportOptions struct {
	IO   streams
	Home *home.Home
	reportOptions
	// Token is what the report is sent with (--token, WHARF_TOKEN).
	Token string
}

// reportOptions are the flags of `wharf inventory report`.
type reportOptions struct {
	from           string
	claudeHome     string
	claudeManaged  string
	copilotHome    string
	codexHome      string
	geminiHome     string
	server         string
	background     bool
	sessionPlugins []string
	agent          bool
}

func newInventoryCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inventory",
		Short: "Report this machine's installed plugins to the wharf server",
		Args:  exactArgs(0, "a subcommand (report)"),
		// Alone it prints its help, as every parent command does.
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newInventoryReportCmd(a))
	return cmd
}

func newInventoryReportCmd(a *app) *cobra.Command {
	opts := &InventoryReportOptions{}
	o := &opts.reportOptions
	cmd := &cobra.Command{
		Use:   "report [--from claude] [--claude-home DIR] [--server URL]",
		Short: "Send this machine's plugin inventory to the server now",
		Long: "Builds the inventory of this home (each installed plugin with its version, w1: digest, scope, how it got there, " +
			"whether it is enabled and its state at load) and sends it to the server the client takes policy from " +
			"(policyUrl of the managed settings, else --policy-url / WHARF_SERVER), with --token / WHARF_TOKEN. " +
			"--server sends it elsewhere.\n\n" +
			"--from claude reads an unmodified Claude Code home instead ($CLAUDE_CONFIG_DIR or ~/.claude, or --claude-home): " +
			"plugins/installed_plugins.json, enabledPlugins of its settings files, and the digest of each cached tree; " +
			"it is reported as client kind claude-code, under its own machine id (kept in <claude home>/wharf-machine-id).\n\n" +
			"--from copilot reads an unmodified GitHub Copilot CLI home ($COPILOT_HOME or ~/.copilot, or --copilot-home): installedPlugins of config.json " +
			"and the copies in installed-plugins/; --from codex an unmodified Codex home ($CODEX_HOME or ~/.codex, or --codex-home): the [plugins] tables of " +
			"config.toml and the copies in plugins/cache/; --from gemini an unmodified Gemini CLI home (~/.gemini, or --gemini-home): the extension copies in extensions/. " +
			"They are reported as client kinds copilot, codex and gemini.\n\n" +
			"The CLI also reports on its own, in the background, when the inventory changed (or a day after the last report) and at most every " +
			"inventory.interval (default 60m; \"off\" turns it off).",
		Example: "  wharf inventory report\n  wharf inventory report --from claude --json\n  wharf inventory report --server https://wharf.example.com",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A report never starts another one.
			a.reporting = true
			if o.background {
				return a.backgroundReport(o)
			}
			opts.IO, opts.Home, opts.Token = a.io(), a.h, a.givenToken()
			return runInventoryReport(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "wharf", "what to report: wharf (this wharf home), or an unmodified agent home: claude, copilot, codex or gemini")
	addAgentReportFlags(f, o)
	f.StringVar(&o.claudeHome, "claude-home", "", "with --from claude: Claude Code's directory (default $CLAUDE_CONFIG_DIR, else ~/.claude)")
	f.StringVar(&o.claudeManaged, "claude-managed-settings", collect.DefaultClaudeManagedFile(), "with --from claude: Claude Code's managed-settings.json (\"\" for none)")
	f.StringVar(&o.server, "server", "", "the wharf server to report to (default: the policy server)")
	f.BoolVar(&o.background, "background", false, "run as the background report: once per interval, only when changed, silent, never fails")
	f.StringArrayVar(&o.sessionPlugins, "session-plugin-dir", nil, "a plugin directory a session loaded (reported as sideloaded); repeatable")
	f.BoolVar(&o.agent, "agent", false, "report as the agent runtime (client kind wharf-agent)")
	_ = f.MarkHidden("agent")
	_ = f.MarkHidden("background")
	_ = f.MarkHidden("session-plugin-dir")
	return cmd
}

// reportResult is `wharf inventory report --json`.
type reportResult struct {
	Server  string           `json:"server"`
	Changed bool             `json:"changed"`
	Report  inventory.Report `json:"report"`
}

// runInventoryReport builds the report and sends it, with clear errors.
func runInventoryReport(ctx context.Context, opts *InventoryReportOptions) error {
	io, h, o := opts.IO, opts.Home, &opts.reportOptions
	if o.from != "wharf" && o.from != "claude" && !agentFrom[o.from] {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--from", Err: fmt.Errorf("unknown source %q", o.from),
			Hint: "use --from wharf (this home), or --from claude, copilot, codex or gemini (that agent's home)"}
	}
	if err := checkAgentReportFlags(o); err != nil {
		return err
	}
	if o.claudeHome != "" && o.from != "claude" {
		return usageError(errors.New("--claude-home needs --from claude"))
	}
	server, err := reportServer(h, o.server)
	if err != nil {
		return err
	}
	token := opts.Token
	if token == "" {
		token = h.Config().Policy.TokenFor(server) // the login's, for its server
	}
	if token == "" {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: server, Err: errors.New("no token for the inventory report"),
			Hint: "pass --token or set WHARF_TOKEN (any token of the server: wharf token create --role agent)"}
	}
	ctx, cancel := context.WithTimeout(ctx, h.Config().InventoryTimeout)
	defer cancel()
	var rep inventory.Report
	if o.from == "claude" {
		if rep, err = claudeHomeReport(io, o); err != nil {
			return err
		}
	} else if agentFrom[o.from] {
		if rep, err = agentReport(io, o); err != nil {
			return err
		}
	} else if rep, err = wharfReport(ctx, io, h, o); err != nil {
		return err
	}
	changed, err := collect.Send(ctx, http.DefaultClient, server, token, rep)
	if o.from == "wharf" && !h.ReadOnly() {
		recordReport(io, h.Paths(), server, collect.Hash(rep), err)
	}
	if err != nil {
		return err
	}
	if io.JSON {
		return io.printJSON(reportResult{Server: server, Changed: changed, Report: rep})
	}
	what := "unchanged"
	if changed {
		what = "updated"
	}
	io.printf("reported %d plugin(s) of machine %s (%s, %s) to %s: %s\n", len(rep.Plugins), rep.Machine.ID, rep.Machine.Hostname, rep.Client.Kind, server, what)
	return nil
}

// recordReport keeps the outcome of a report for the background reports:
// a report sent needs no resend; one that failed is pending.
func recordReport(io streams, paths layout.Paths, server, hash string, sendErr error) {
	path := paths.InventoryState()
	st := collect.ReadState(path)
	now := time.Now()
	if sendErr != nil {
		st.Failed(hash, now, sendErr)
	} else {
		st.Sent(server, hash, now)
	}
	st.Checked = now
	if err := st.Write(path); err != nil && !io.JSON {
		io.warnf("inventory: %v", err)
	}
}

// reportServer is --server, else the first policy server: one the managed
// settings name, else --policy-url / WHARF_SERVER.
func (a *app) reportServer(flag string) (string, error) { return reportServer(a.h, flag) }

func reportServer(h *home.Home, flag string) (string, error) {
	if flag != "" {
		return policyremote.BaseURL(flag)
	}
	servers, err := h.ManagedPolicyServers()
	if err != nil {
		return "", err
	}
	if len(servers) == 0 {
		return "", &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Err: errors.New("no server to report to"),
			Hint: "pass --server URL, or name the policy server: --policy-url, WHARF_POLICY_URL or policyUrl in the managed settings"}
	}
	return servers[0].URL, nil
}

// givenToken is the token given to this process: --token, else
// WHARF_TOKEN.
func (a *app) givenToken() string {
	if a.remote.token != "" {
		return a.remote.token
	}
	return strings.TrimSpace(os.Getenv("WHARF_TOKEN"))
}

// reportToken is the token for server: the given one, else the login's
// when server is the one signed in to.
func (a *app) reportToken(server string) string {
	if t := a.givenToken(); t != "" {
		return t
	}
	return a.cfg.Policy.TokenFor(server) // the login's, for its server
}

// inventoryRows are the installed plugins with their state at load, as the
// loader computes them (the rows of wharf list).
func inventoryRows(ctx context.Context, h *home.Home) ([]load.Row, error) {
	in, err := h.Installer()
	if err != nil {
		return nil, err
	}
	return in.List(ctx, install.StatusOptions{Revocations: revocations(h)})
}

// wharfReport is this home's report: the loader's rows, marked revoked by
// the revocations of the policy bundle in force, and the session plugin
// dirs of an agent as sideloaded.
func wharfReport(ctx context.Context, io streams, h *home.Home, o *reportOptions) (inventory.Report, error) {
	id, err := collect.MachineID(h.Paths().MachineID())
	if err != nil {
		return inventory.Report{}, err
	}
	rows, err := inventoryRows(ctx, h)
	if err != nil {
		return inventory.Report{}, err
	}
	pol, err := h.Policy()
	if err != nil {
		return inventory.Report{}, err
	}
	plugins := collect.FromStatus(rows, pol.Revocations())
	kind := inventory.KindWharf
	if o.agent {
		kind = inventory.KindWharfAgent
	}
	plugins = append(plugins, collect.FromSideloaded(sideloaded(o.sessionPlugins))...)
	rep := collect.New(collect.Machine(id), kind, plugins, time.Now())
	rep.MCPServers = reportedMCP(io, h.Paths())
	return rep, nil
}

// sideloaded describes session plugin dirs by their manifest and digest.
func sideloaded(dirs []string) []collect.Sideloaded {
	var out []collect.Sideloaded
	for _, dir := range dirs {
		s := collect.Sideloaded{ID: filepath.Base(dir) + "@" + plugin.SourceInline, State: inventory.StateActive}
		p, _, err := plugin.Load(dir, nil)
		if p != nil {
			s.ID, s.Version = p.Manifest.Name+"@"+plugin.SourceInline, p.Manifest.Version
		}
		if err != nil {
			s.State, s.Reason = inventory.StateFailed, err.Error()
		}
		if t, err := trust.Digest(dir); err == nil {
			s.Digest = t.Digest
		} else if s.Reason == "" {
			s.State, s.Reason = inventory.StateFailed, err.Error()
		}
		out = append(out, s)
	}
	return out
}

// claudeHomeReport is the report of a Claude Code home.
func claudeHomeReport(io streams, o *reportOptions) (inventory.Report, error) {
	dir := o.claudeHome
	if dir == "" {
		d, err := collect.DefaultClaudeDir(os.Getenv)
		if err != nil {
			return inventory.Report{}, usageError(fmt.Errorf("cannot find Claude Code's home: %w; pass --claude-home", err))
		}
		dir = d
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return inventory.Report{}, usageError(err)
	}
	c := collect.Claude{Dir: abs, ManagedFile: o.claudeManaged}
	plugins, warns, err := c.Read()
	if err != nil {
		return inventory.Report{}, err
	}
	for _, w := range warns {
		io.warnf("claude: %s", w)
	}
	id, err := collect.MachineID(filepath.Join(abs, collect.ClaudeMachineIDFile))
	if err != nil {
		return inventory.Report{}, err
	}
	return collect.New(collect.Machine(id), inventory.KindClaudeCode, plugins, time.Now()), nil
}

// backgroundReport is the detached child a command starts: one at a time
// (a lock), at most once per interval, sent only when the report changed
// or a previous one is pending; whatever happens is kept in the state
// file and the exit is 0.
func (a *app) backgroundReport(o *reportOptions) error {
	home := a.env.Home()
	if a.cfg.InventoryInterval <= 0 || a.readOnlyHome() {
		return nil
	}
	// Bounded whatever a step does: the process ends after the timeout.
	stop := time.AfterFunc(a.cfg.InventoryTimeout+5*time.Second, func() { os.Exit(0) })
	defer stop.Stop()
	unlock, ok, err := collect.TryLock(layout.New(home).InventoryLock())
	if err != nil || !ok {
		return nil
	}
	defer unlock()
	path := layout.New(home).InventoryState()
	st := collect.ReadState(path)
	now := time.Now()
	if !st.Due(now, a.cfg.InventoryInterval) {
		return nil
	}
	st.Checked = now
	_ = st.Write(path)
	server, err := a.reportServer(o.server)
	if err != nil {
		st.Failed("", now, err)
		_ = st.Write(path)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.InventoryTimeout)
	defer cancel()
	rep, err := wharfReport(ctx, a.io(), a.h, o)
	if err != nil {
		st.Failed("", now, err)
		_ = st.Write(path)
		return nil
	}
	hash := collect.Hash(rep)
	if st.Unchanged(server, hash, now) {
		return nil
	}
	if _, err := collect.Send(ctx, http.DefaultClient, server, a.reportToken(server), rep); err != nil {
		st.Failed(hash, time.Now(), err)
	} else {
		st.Sent(server, hash, time.Now())
	}
	_ = st.Write(path)
	return nil
}

// maybeReport starts a background report when this command used the
// installed plugins, a server is known, reports are on and one is due. It
// never waits: the report runs in a detached process of its own.
func (a *app) maybeReport(sessionDirs []string, agentSession bool) {
	if a.proc.noBackgroundReports || a.h == nil || a.reporting || a.reportStarted || !a.h.UsedPlugins() || a.cfg.InventoryInterval <= 0 || a.env.Home() == "" || a.readOnlyHome() {
		return
	}
	if a.policyURL() == "" && !a.h.HasPolicyServer() {
		return
	}
	if !collect.ReadState(a.env.InventoryState()).Due(time.Now(), a.cfg.InventoryInterval) {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	args := []string{"inventory", "report", "--background", "--home", a.env.Home()}
	for _, p := range a.policyPaths {
		args = append(args, "--policy", p)
	}
	for _, d := range sessionDirs {
		args = append(args, "--session-plugin-dir", d)
	}
	if agentSession {
		args = append(args, "--agent")
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = os.Environ()
	for k, v := range map[string]string{"WHARF_SERVER": a.remote.url, "WHARF_TOKEN": a.remote.token, "WHARF_POLICY_KEY": a.remote.keyFile} {
		if v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return
	}
	a.reportStarted = true
	_ = cmd.Process.Release()
}
