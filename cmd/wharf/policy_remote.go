package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/wharfhq/wharf/internal/client/policyremote"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/toolpin"
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
	pf.StringVar(&f.url, "policy-url", "", "a wharf server whose policy bundle applies after the managed directory (env WHARF_POLICY_URL); adds to any server the managed settings name (policyUrl), never replaces it")
	pf.StringVar(&f.token, "token", "", "bearer token for the wharf server (env WHARF_TOKEN)")
	pf.StringVar(&f.keyFile, "policy-key", "", "PEM public key the policy bundle must be signed with (env WHARF_POLICY_KEY); without it the server's key is trusted on first use and stored")
}

// policyURL is --policy-url, else WHARF_POLICY_URL: a policy server the
// user adds. It never removes a server the managed settings name.
func (a *app) policyURL() string {
	if a.remote.url != "" {
		return a.remote.url
	}
	return strings.TrimSpace(os.Getenv("WHARF_POLICY_URL"))
}

// policyServer is one policy server to enforce: named by managed settings
// (Managed, with their key pin and maxAge) or by --policy-url.
type policyServer struct {
	URL     string
	KeyPEM  []byte
	KeyID   string
	MaxAge  time.Duration
	Managed string // the managed file that names it; "" for --policy-url
	Layer   string // the managed layer that names it; "" for --policy-url
}

// policyServers lists the servers whose bundles apply: every server the
// managed layers name, then --policy-url (WHARF_POLICY_URL) unless it is
// one of them. A --policy-key pins the key of a server the managed
// settings do not pin.
func (a *app) policyServers(layers []policy.Layer) ([]policyServer, error) {
	ms, err := policy.ManagedServers(layers)
	if err != nil {
		return nil, err
	}
	var out []policyServer
	seen := map[string]int{}
	for _, m := range ms {
		base, err := policyremote.BaseURL(m.URL)
		if err != nil {
			var pe *plugin.Error
			if errors.As(err, &pe) {
				c := *pe
				c.Layer, c.Object = plugin.LayerPolicy, m.File
				c.Hint = "an administrator must fix policyUrl in " + m.File + "; until then every request is refused"
				return nil, &c
			}
			return nil, err
		}
		if _, dup := seen[base]; dup {
			continue
		}
		seen[base] = len(out)
		out = append(out, policyServer{URL: base, KeyPEM: m.KeyPEM, KeyID: m.KeyID, MaxAge: m.MaxAge, Managed: m.File, Layer: m.Layer})
	}
	raw := a.policyURL()
	if raw == "" {
		return out, nil
	}
	base, err := policyremote.BaseURL(raw)
	if err != nil {
		return nil, err
	}
	key, err := a.policyKeyFlag()
	if err != nil {
		return nil, err
	}
	if i, ok := seen[base]; ok {
		if out[i].KeyPEM == nil && out[i].KeyID == "" {
			out[i].KeyPEM = key
		}
		return out, nil
	}
	return append(out, policyServer{URL: base, KeyPEM: key}), nil
}

// policyKeyFlag reads --policy-key (WHARF_POLICY_KEY); nil without one.
func (a *app) policyKeyFlag() ([]byte, error) {
	keyFile := a.remote.keyFile
	if keyFile == "" {
		keyFile = os.Getenv("WHARF_POLICY_KEY")
	}
	if keyFile == "" {
		return nil, nil
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: keyFile, Err: fmt.Errorf("--policy-key: %w", err),
			Hint: "give the PEM public key of the policy server (GET /v1/policy/bundle/key)"}
	}
	if _, err := policy.ParseBundleKey(key); err != nil {
		// A file the user named that is not a key: a usage error, not a
		// key that failed to verify.
		return nil, keyFileError("--policy-key", keyFile, err, "give the PEM public key of the policy server (GET /v1/policy/bundle/key)")
	}
	return key, nil
}

// keyFileError is a key file given on the command line that is not a key
// of the expected kind: a usage error (exit 2) naming the flag and the
// file, whatever layer the parser gave it.
func keyFileError(flag, file string, err error, hint string) error {
	msg := err.Error()
	if pe, ok := errors.AsType[*plugin.Error](err); ok && pe.Err != nil {
		msg = pe.Err.Error()
	}
	return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: file,
		Err: fmt.Errorf("%s %s is not a usable key: %s", flag, file, msg), Hint: hint}
}

// managedPolicyServers reads the managed layers for `wharf policy pull`.
func (a *app) managedPolicyServers() ([]policyServer, error) {
	layers, err := a.policySources().Load()
	if err != nil {
		return nil, err
	}
	return a.policyServers(layers)
}

// pullPolicy pulls (or reads from the cache) one server's bundle and
// prints its warnings.
func (a *app) pullPolicy(ctx context.Context, srv policyServer) (*policyremote.Result, error) {
	dir, err := policyremote.CacheDir(a.env.Home(), srv.URL)
	if err != nil {
		return nil, usageError(err)
	}
	token := a.remote.token
	if token == "" {
		token = os.Getenv("WHARF_TOKEN")
	}
	res, err := policyremote.Options{URL: srv.URL, Token: token, CacheDir: dir, Key: srv.KeyPEM, KeyID: srv.KeyID, MaxAge: srv.MaxAge}.Fetch(ctx)
	if err != nil {
		return nil, err
	}
	for _, w := range res.Warnings {
		a.warnf("policy: %s", w)
	}
	return res, nil
}

// noPolicyServer is the error of `wharf policy pull` with no server.
func noPolicyServer() error {
	return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Err: errors.New("no policy server"),
		Hint: "pass --policy-url URL or set WHARF_POLICY_URL (or name one with policyUrl in the managed settings)"}
}

// loadPolicy reads src's layers and, with policy servers (named by
// the managed settings, or --policy-url), puts each server's layers after
// the managed directories and before the --policy paths; the servers the
// system managed directory names come before the further managed
// directory. Like every layer
// they can only tighten. A layer whose name an earlier layer already has is
// renamed (name_2, ...).
// It also returns the revocations the servers' bundles carry, in server
// order.
func (a *app) loadPolicy(ctx context.Context, src policy.Sources) ([]policy.Layer, policy.Revocations, error) {
	layers, err := src.Load()
	if err != nil {
		return nil, nil, err
	}
	servers, err := a.policyServers(layers)
	if err != nil || len(servers) == 0 {
		return layers, nil, err
	}
	a.hasPolicyServer = true
	n := 0 // the managed layers stay first
	for n < len(layers) && layers[n].Managed {
		n++
	}
	// The system directory's servers come right after it, above the
	// further managed directory (WHARF_MANAGED_DIR): a layer the user
	// chose never ranks above one the administrator named, where the
	// higher layer decides (a forced enabledPlugins state).
	sys := n
	if n == 2 && layers[0].Name == "managed" {
		sys = 1
	}
	taken := map[string]bool{}
	for _, l := range layers[:n] {
		taken[l.Name] = true
	}
	out := append([]policy.Layer{}, layers[:sys]...)
	add := func(l policy.Layer) {
		base := l.Name
		for i := 2; taken[l.Name]; i++ {
			l.Name = fmt.Sprintf("%s_%d", base, i)
		}
		taken[l.Name] = true
		out = append(out, l)
	}
	pulled := make([][]policy.Layer, len(servers))
	var revs policy.Revocations
	var pins []toolpin.Pin
	var adms []*policy.Admissions
	for i, srv := range servers {
		res, err := a.pullPolicy(ctx, srv)
		if err != nil {
			return nil, nil, err
		}
		pulled[i] = res.Layers
		revs = append(revs, res.Info.Revocations...)
		for _, p := range res.Info.ToolPins {
			p.Origin = "the policy server " + srv.URL
			pins = append(pins, p)
		}
		if res.Info.Admissions != nil {
			adms = append(adms, res.Info.Admissions)
		}
	}
	a.bundlePins = pins
	a.admissions = adms
	// Server layers keep their names unless two servers share one; the
	// --policy layers give way to them.
	addServers := func(system bool) {
		for i, ls := range pulled {
			if (sys < n && servers[i].Layer == layers[0].Name) != system {
				continue
			}
			for _, l := range ls {
				add(l)
			}
		}
	}
	addServers(true)
	out = append(out, layers[sys:n]...)
	addServers(false)
	for _, l := range layers[n:] {
		add(l)
	}
	return out, revs, nil
}

// openPolicy compiles src's layers with the policy server's; a reload
// pulls again.
func (a *app) openPolicy(src policy.Sources) (*policy.Engine, error) {
	layers, revs, err := a.loadPolicy(context.Background(), src)
	if err != nil {
		return nil, err
	}
	// A reload pulls again and sets the revocations of the bundle it got.
	var e *policy.Engine
	load := func() ([]policy.Layer, error) {
		layers, revs, err := a.loadPolicy(context.Background(), src)
		if err == nil && e != nil {
			e.SetRevocations(revs)
			e.SetToolPins(a.bundlePins)
			e.SetAdmissions(a.admissions)
		}
		return layers, err
	}
	opts := []policy.Option{policy.WithLoader(load), policy.WithRevocations(revs), policy.WithToolPins(a.bundlePins), policy.WithAdmissions(a.admissions), policy.WithGitHubHost(a.cfg.GitHubHost)}
	opts = append(opts, waiverClock()...)
	if a.env.Home() != "" {
		opts = append(opts, policy.WithMemoFile(a.env.PolicyMemo()))
	}
	e, err = policy.NewEngine(layers, opts...)
	return e, err
}
