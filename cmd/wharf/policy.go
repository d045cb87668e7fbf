package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// policyOptions are the flags of `wharf policy`.
type policyOptions struct {
	managedDir string
}

func newPolicyCmd(a *app) *cobra.Command {
	o := &policyOptions{}
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Inspect, evaluate, test and export managed policy",
		Long: "Policy layers are the system managed directory (" + settings.SystemManagedDir() + "), the managed directory --managed-dir (env WHARF_MANAGED_DIR) adds after it, " +
			"the layers of the policy servers the managed settings name (policyUrl) or --policy-url adds, then each --policy layer in order. " +
			"Lower layers only tighten: allowlists intersect, blocklists and admin denies union, a forced state set higher wins.",
	}
	cmd.PersistentFlags().StringVar(&o.managedDir, "managed-dir", "", "a further managed policy directory (managed-settings.json, managed-settings.d/*.json, *.rego) read after the system one, which it cannot replace; default WHARF_MANAGED_DIR")
	cmd.AddCommand(newPolicyCheckCmd(a, o), newPolicyEvalCmd(a, o), newPolicyTestCmd(a), newPolicyExportCmd(a, o), newPolicyPullCmd(a))
	return cmd
}

func (o *policyOptions) sources(a *app) policy.Sources { return policySources(a.h, o.managedDir) }

// policySources are the home's policy layers, with managedDir (when set)
// as the further managed directory.
func policySources(h *home.Home, managedDir string) policy.Sources {
	src := h.PolicySources()
	if managedDir != "" {
		src.ExtraManagedDir = settings.ExtraManagedDir(managedDir)
	}
	return src
}

func (o *policyOptions) engine(a *app) (*policy.Engine, []policy.Layer, error) {
	return policyEngine(a.io(), a.h, o.managedDir)
}

// policyEngine compiles the home's policy layers (managedDir as the
// further managed directory) and prints the engine's warnings.
func policyEngine(io streams, h *home.Home, managedDir string) (*policy.Engine, []policy.Layer, error) {
	layers, revs, err := h.LoadPolicy(context.Background(), policySources(h, managedDir))
	if err != nil {
		return nil, nil, err
	}
	e, err := policy.NewEngine(layers, policy.WithRevocations(revs), policy.WithGitHubHost(h.Config().GitHubHost))
	if err != nil {
		return nil, nil, err
	}
	for _, w := range e.Warnings() {
		io.warnf("policy: %s", w)
	}
	return e, layers, nil
}

// checkResult is `wharf policy check --json`.
type checkResult struct {
	Plugin        string                    `json:"plugin"`
	Source        *plugin.MarketplaceSource `json:"source,omitempty"`
	PolicyVersion string                    `json:"policyVersion"`
	Layers        []checkLayer              `json:"layers"`
	Actions       []checkAction             `json:"actions"`
	Warnings      []string                  `json:"warnings"`
}

type checkLayer struct {
	Name   string `json:"name"`
	Origin string `json:"origin,omitempty"`
}

type checkAction struct {
	Action  policy.Action   `json:"action"`
	Allowed bool            `json:"allowed"`
	Forced  string          `json:"forced,omitempty"`
	Reasons []policy.Reason `json:"reasons"`
	// ByLayer is each layer's verdict on its own, highest first.
	ByLayer []layerVerdict `json:"byLayer"`
}

type layerVerdict struct {
	Layer   string          `json:"layer"`
	Allowed bool            `json:"allowed"`
	Forced  string          `json:"forced,omitempty"`
	Reasons []policy.Reason `json:"reasons"`
}

func newPolicyCheckCmd(a *app, o *policyOptions) *cobra.Command {
	var sourceJSON string
	cmd := &cobra.Command{
		Use:   "check <plugin@marketplace>",
		Short: "Show what policy would do with a plugin, and why, layer by layer",
		Long: "Evaluates install, enable, load, disable and uninstall of the plugin under the combined policy and under each layer alone, " +
			"and exits 3 when install is denied. " +
			"The marketplace's source is taken from --source, else from the marketplaces wharf knows; without it strictKnownMarketplaces cannot allow the plugin.",
		Args: exactArgs(1, "one plugin@marketplace"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := plugin.ParseID(args[0])
			if err != nil {
				return err
			}
			e, layers, err := o.engine(a)
			if err != nil {
				return err
			}
			src, err := a.marketplaceSource(id.Source, sourceJSON)
			if err != nil {
				return err
			}
			res := checkResult{Plugin: id.String(), Source: src, PolicyVersion: e.Version(), Layers: []checkLayer{},
				Actions: []checkAction{}, Warnings: e.Warnings()}
			single := make([]*policy.Engine, len(layers))
			for i, l := range layers {
				res.Layers = append(res.Layers, checkLayer{Name: l.Name, Origin: l.Origin})
				if single[i], err = policy.NewEngine([]policy.Layer{l}, policy.WithGitHubHost(a.cfg.GitHubHost)); err != nil {
					return err
				}
			}
			ctx := cmd.Context()
			for _, act := range []policy.Action{policy.ActionInstall, policy.ActionEnable, policy.ActionLoad, policy.ActionDisable, policy.ActionUninstall} {
				req := policy.Request{Action: act, Plugin: id}
				if act != policy.ActionDisable && act != policy.ActionUninstall {
					req.Marketplace = policy.Marketplace{Name: id.Source, Source: src}
				}
				d, err := e.Decide(ctx, req)
				if err != nil {
					return err
				}
				ca := checkAction{Action: act, Allowed: d.Allowed, Forced: d.Forced, Reasons: d.Reasons, ByLayer: []layerVerdict{}}
				for i, se := range single {
					ld, err := se.Decide(ctx, req)
					if err != nil {
						return err
					}
					ca.ByLayer = append(ca.ByLayer, layerVerdict{Layer: layers[i].Name, Allowed: ld.Allowed, Forced: ld.Forced, Reasons: ld.Reasons})
				}
				res.Actions = append(res.Actions, ca)
				for _, w := range d.Warnings {
					if !contains(res.Warnings, w) {
						res.Warnings = append(res.Warnings, w)
					}
				}
			}
			if a.cfg.JSON {
				if err := a.printJSON(res); err != nil {
					return err
				}
			} else {
				a.printCheck(res)
			}
			// The exit code answers "may I install it?": 3 when install is denied.
			install := res.Actions[0]
			return shown(policy.Decision{Allowed: install.Allowed, Reasons: install.Reasons}.Err(
				policy.Request{Action: policy.ActionInstall, Plugin: id, Marketplace: policy.Marketplace{Name: id.Source, Source: src}}))
		},
	}
	cmd.Flags().StringVar(&sourceJSON, "source", "", `the marketplace's source as JSON, e.g. '{"source":"github","repo":"acme/plugins"}'`)
	return cmd
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// marketplaceSource is the source given with --source, else the one of the
// known marketplace, else nil (unknown).
func (a *app) marketplaceSource(name, sourceJSON string) (*plugin.MarketplaceSource, error) {
	if sourceJSON != "" {
		s, err := plugin.DecodeMarketplaceSource([]byte(sourceJSON))
		if err != nil {
			return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: "--source", Err: err,
				Hint: `write it like '{"source":"github","repo":"owner/repo"}'`}
		}
		return &s, nil
	}
	if _, err := os.Stat(a.env.StateDB()); err != nil {
		return nil, nil // nothing known yet; do not create state for a read-only check
	}
	mgr, err := a.Marketplaces()
	if err != nil {
		return nil, err
	}
	k, err := mgr.Get(name)
	if err != nil {
		a.warnf("marketplace %s is not known; its source is unknown (give it with --source)", name)
		return nil, nil
	}
	return &k.Source, nil
}

func (a *app) printCheck(res checkResult) {
	a.printf("%s under policy %s\n", res.Plugin, shortVersion(res.PolicyVersion))
	if len(res.Layers) == 0 {
		a.printf("no policy layers: everything is allowed\n")
	} else {
		var names []string
		for _, l := range res.Layers {
			names = append(names, fmt.Sprintf("%s (%s)", l.Name, l.Origin))
		}
		a.printf("layers, highest first: %s\n", strings.Join(names, ", "))
	}
	if res.Source == nil {
		a.printf("marketplace source: unknown\n")
	} else {
		b, _ := json.Marshal(res.Source)
		a.printf("marketplace source: %s\n", b)
	}
	for _, act := range res.Actions {
		verdict := "allowed"
		if !act.Allowed {
			verdict = "DENIED"
		}
		if act.Forced != "" {
			verdict += " (forced " + act.Forced + ")"
		}
		a.printf("\n%-10s %s\n", act.Action, verdict)
		for _, lv := range act.ByLayer {
			if lv.Allowed {
				a.printf("  %-12s allows\n", lv.Layer+":")
				continue
			}
			for _, r := range lv.Reasons {
				a.printf("  %-12s %s: %s\n", lv.Layer+":", r.Rule, r.Message)
			}
		}
		for _, r := range act.Reasons {
			if r.Layer == "default" || r.Rule == "admin" && len(act.ByLayer) == 0 {
				a.printf("  %-12s %s: %s\n", r.Layer+":", r.Rule, r.Message)
			}
		}
	}
	for _, w := range res.Warnings {
		a.printf("\nwarning: %s", w)
	}
	if len(res.Warnings) > 0 {
		a.printf("\n")
	}
}

func shortVersion(v string) string {
	if len(v) > 19 {
		return v[:19]
	}
	return v
}

func newPolicyEvalCmd(a *app, o *policyOptions) *cobra.Command {
	var input string
	cmd := &cobra.Command{
		Use:   "eval --input request.json",
		Short: "Evaluate one policy request; exit 3 when it is denied",
		Long: "Reads a request ({\"action\": \"install\", \"plugin\": \"p@m\", \"marketplace\": {\"name\": \"m\", \"source\": {...}}, ...}; \"-\" reads stdin) " +
			"and prints the decision with its reasons. Actions: add_marketplace, update_marketplace, install, enable, disable, uninstall, load, load_component, run_hook, sideload, cross_dependency.",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if input == "" {
				return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Err: errors.New("--input is required"), Hint: "wharf policy eval --input request.json"}
			}
			var data []byte
			var err error
			if input == "-" {
				data, err = readAllLimited(cmd.InOrStdin())
			} else {
				data, err = os.ReadFile(input)
			}
			if err != nil {
				return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: input, Err: err, Hint: "give a readable request file"}
			}
			req, err := policy.ParseRequest(data)
			if pe := (*plugin.Error)(nil); errors.As(err, &pe) && pe.Type == policy.TypeRequestInvalid {
				// Name the file the user gave rather than "request".
				pe.Object = input
				if input == "-" {
					pe.Object = "stdin"
				}
			}
			if err != nil {
				return err
			}
			e, _, err := o.engine(a)
			if err != nil {
				return err
			}
			d, err := e.Decide(cmd.Context(), req)
			if err != nil {
				return err
			}
			if a.cfg.JSON {
				out := struct {
					policy.Decision
					Input map[string]any `json:"input"`
				}{d, e.Input(req)}
				if err := a.printJSON(out); err != nil {
					return err
				}
			} else {
				verdict := "allowed"
				if !d.Allowed {
					verdict = "denied"
				}
				if d.Forced != "" {
					verdict += " (forced " + d.Forced + ")"
				}
				a.printf("%s %s: %s (policy %s)\n", req.Action, displayTarget(req), verdict, shortVersion(d.PolicyVersion))
				for _, r := range d.Reasons {
					a.printf("  layer %s, %s: %s\n", r.Layer, r.Rule, r.Message)
				}
				for _, w := range d.Warnings {
					a.printf("  warning: %s\n", w)
				}
			}
			return d.Err(req)
		},
	}
	cmd.Flags().StringVar(&input, "input", "", "request JSON file (- for stdin)")
	return cmd
}

func displayTarget(r policy.Request) string {
	switch {
	case !r.Plugin.IsZero():
		return r.Plugin.String()
	case r.Path != "":
		return r.Path
	case r.Marketplace.Name != "":
		return r.Marketplace.Name
	case r.Surface != "":
		return string(r.Surface) + " from " + r.From
	}
	return r.From
}

func readAllLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, 4<<20+1))
	if err == nil && len(data) > 4<<20 {
		err = errors.New("request is larger than 4 MiB")
	}
	return data, err
}

func newPolicyTestCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "test <dir>",
		Short: "Run the admin Rego tests (test_* rules in *.rego) of a policy directory",
		Args:  exactArgs(1, "one directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := policy.RunTests(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			failed := 0
			for _, r := range res {
				if !r.Pass && !r.Skip {
					failed++
				}
			}
			if a.cfg.JSON {
				if err := a.printJSON(res); err != nil {
					return err
				}
			} else {
				for _, r := range res {
					status := "PASS"
					switch {
					case r.Skip:
						status = "SKIP"
					case !r.Pass:
						status = "FAIL"
					}
					a.printf("%s %s.%s (%s)", status, r.Package, r.Name, r.File)
					if r.Error != "" {
						a.printf(": %s", r.Error)
					}
					a.printf("\n")
				}
				a.printf("%d tests, %d failed\n", len(res), failed)
			}
			if len(res) == 0 {
				return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: args[0], Err: errors.New("no test_* rules found"), Hint: "name test rules test_<something> in *_test.rego files"}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d policy tests failed", failed, len(res))
			}
			return nil
		},
	}
}

// PolicyExportOptions are wharf policy export's inputs.
type PolicyExportOptions struct {
	IO   streams
	Home *home.Home
	// ManagedDir is --managed-dir: a further managed policy directory.
	ManagedDir string
	// Format is claude here; the other agents' are exportAgent's.
	Format string
	// Output is the file to write (crash-safe); "" writes to stdout.
	Output string
	// Channel, when set, fetches the channel's managed settings from the
	// policy server instead of merging the layers.
	Channel string
}

func newPolicyExportCmd(a *app, o *policyOptions) *cobra.Command {
	opts := &PolicyExportOptions{}
	cmd := &cobra.Command{
		Use:   "export --format claude|copilot|codex|gemini|opencode",
		Short: "Write the effective policy as a managed-settings.json a Claude Code client honours",
		Long: "Merges the layers the way wharf enforces them (allowlists intersect, blocklists union, the highest forced state wins) into the standard keys. " +
			"What the format cannot carry (admin Rego rules, an intersection of patterns) is reported as a warning.",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, ok := policy.AgentManagedFiles[opts.Format]; ok {
				return a.exportAgent(cmd.Context(), o, opts.Format, opts.Output, opts.Channel)
			}
			opts.IO, opts.Home, opts.ManagedDir = a.io(), a.h, o.managedDir
			return runPolicyExport(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "claude", "output format: claude (managed-settings.json), copilot (GitHub Copilot CLI's managed-settings.json), codex (Codex's requirements.toml), gemini (Gemini CLI's system settings.json) or opencode (OpenCode's managed opencode.json)")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "write to this file (crash-safe) instead of stdout")
	cmd.Flags().StringVar(&opts.Channel, "channel", "", "instead, fetch from the wharf server (--policy-url, --token) the managed settings, in --format, that allow only this channel as a marketplace")
	return cmd
}

// runPolicyExport writes the effective policy as Claude Code's
// managed-settings.json (or the channel's, from the server), to Output or
// stdout; what the format cannot carry is a warning.
func runPolicyExport(ctx context.Context, opts *PolicyExportOptions) error {
	io, output := opts.IO, opts.Output
	if opts.Format != "claude" {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Err: fmt.Errorf("unknown export format %q", opts.Format), Hint: "use --format claude, copilot, codex, gemini or opencode"}
	}
	if opts.Channel != "" {
		doc, err := channelSettings(ctx, opts.Home, opts.Channel)
		if err != nil {
			return err
		}
		if output != "" {
			if err := atomicfile.WriteFile(output, doc, 0o644); err != nil {
				return &plugin.Error{Layer: plugin.LayerMaterialization, Type: "write-failed", Object: output, Err: err, Hint: "check that the directory is writable"}
			}
			io.printf("wrote %s\n", output)
			return nil
		}
		_, err = io.Out.Write(doc)
		return err
	}
	e, _, err := policyEngine(io, opts.Home, opts.ManagedDir)
	if err != nil {
		return err
	}
	x := e.ExportClaude()
	policy.ForceRevokedOff(&x, e.Revocations(), "Claude Code")
	for _, w := range x.Warnings {
		io.warnf("export: %s", w)
	}
	doc, err := x.JSON()
	if err != nil {
		return err
	}
	if output != "" {
		if err := atomicfile.WriteFile(output, doc, 0o644); err != nil {
			return &plugin.Error{Layer: plugin.LayerMaterialization, Type: "write-failed", Object: output, Err: err, Hint: "check that the directory is writable"}
		}
	}
	if io.JSON {
		return io.printJSON(x)
	}
	if output == "" {
		_, err = io.Out.Write(doc)
		return err
	}
	io.printf("wrote %s\n", output)
	return nil
}
