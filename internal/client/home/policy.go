package home

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/cli/cliconfig"
	"github.com/wharfhq/wharf/internal/cli/shell"
	"github.com/wharfhq/wharf/internal/client/policyremote"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/internal/core/toolpin"
	"github.com/wharfhq/wharf/plugin"
)

const typeUsage = cliconfig.TypeUsage

// PolicyConfig is which policy applies beside the managed layers: what
// the command's flags and environment add. Each of them only adds layers
// under the managed ones; none replaces or drops the system managed
// directory, which is settings.SystemManagedDir and nothing here can name.
type PolicyConfig struct {
	// Paths are the --policy layers, after the managed layers and the
	// policy servers', highest first.
	Paths []string
	// ExtraManagedDir is a further managed directory (WHARF_MANAGED_DIR,
	// --managed-dir) read after the system one; "" for none.
	ExtraManagedDir string
	// URL is a policy server the user adds (--policy-url,
	// WHARF_POLICY_URL); it never removes one the managed settings name.
	URL string
	// Token is the bearer token for the policy server (--token,
	// WHARF_TOKEN).
	Token string
	// LoginServer and LoginToken are the signed-in user's server and
	// token (wharf login): sent to that server only, when Token is "".
	LoginServer string
	LoginToken  string
	// KeyFile is the PEM public key the bundle of URL must be signed
	// with (--policy-key, WHARF_POLICY_KEY); "" trusts the server's key
	// on first use.
	KeyFile string
}

// TokenFor is the bearer token for server: Token, else the login's
// token when server is the login's.
func (c PolicyConfig) TokenFor(server string) string {
	if c.Token == "" && c.LoginToken != "" && strings.TrimRight(server, "/") == strings.TrimRight(c.LoginServer, "/") {
		return c.LoginToken
	}
	return c.Token
}

// PolicySources are the managed directories and the --policy paths: the
// system managed directory always comes first.
func (h *Home) PolicySources() policy.Sources {
	return policy.Sources{ManagedDir: settings.SystemManagedDir(), ExtraManagedDir: settings.ExtraManagedDir(h.cfg.Policy.ExtraManagedDir), Paths: h.cfg.Policy.Paths}
}

// Policy compiles, on first use, the managed layers, the layers of the
// policy servers and the --policy layers, and warns about what the
// layers say that does not apply.
func (h *Home) Policy() (*policy.Engine, error) {
	if h.pol != nil {
		return h.pol, nil
	}
	e, err := h.OpenPolicy(h.PolicySources())
	if err != nil {
		return nil, err
	}
	for _, w := range e.Warnings() {
		h.warn("policy: " + w)
	}
	h.pol = e
	return e, nil
}

// OpenPolicy compiles src's layers with the policy servers'; a reload of
// the engine pulls again and takes the revocations of the bundle it got.
func (h *Home) OpenPolicy(src policy.Sources) (*policy.Engine, error) {
	layers, revs, err := h.LoadPolicy(context.Background(), src)
	if err != nil {
		return nil, err
	}
	var e *policy.Engine
	load := func() ([]policy.Layer, error) {
		layers, revs, err := h.LoadPolicy(context.Background(), src)
		if err == nil && e != nil {
			e.SetRevocations(revs)
			e.SetAdmissions(h.admissions)
			e.SetToolPins(h.bundlePins)
		}
		return layers, err
	}
	opts := []policy.Option{policy.WithLoader(load), policy.WithRevocations(revs), policy.WithToolPins(h.bundlePins), policy.WithAdmissions(h.admissions), policy.WithGitHubHost(h.cfg.GitHubHost)}
	opts = append(opts, policy.WithMemoFile(h.paths.PolicyMemo()))
	if h.clock != nil {
		opts = append(opts, policy.WithClock(h.clock))
	}
	e, err = policy.NewEngine(layers, opts...)
	return e, err
}

// Revocations are the revocations the policy in force carries (the
// signed bundles'); none before Policy.
func (h *Home) Revocations() policy.Revocations {
	if h.pol == nil {
		return nil
	}
	return h.pol.Revocations()
}

// PolicyServer is one policy server to enforce: named by managed settings
// (Managed, with their key pin and maxAge) or by PolicyConfig.URL.
type PolicyServer struct {
	URL     string
	KeyPEM  []byte
	KeyID   string
	MaxAge  time.Duration
	Managed string // the managed file that names it; "" for PolicyConfig.URL
	Layer   string // the managed layer that names it; "" for PolicyConfig.URL
}

// PolicyServers lists the servers whose bundles apply: every server the
// managed layers name, then PolicyConfig.URL unless it is one of them. A
// PolicyConfig.KeyFile pins the key of a server the managed settings do
// not pin.
func (h *Home) PolicyServers(layers []policy.Layer) ([]PolicyServer, error) {
	ms, err := policy.ManagedServers(layers)
	if err != nil {
		return nil, err
	}
	var out []PolicyServer
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
		out = append(out, PolicyServer{URL: base, KeyPEM: m.KeyPEM, KeyID: m.KeyID, MaxAge: m.MaxAge, Managed: m.File, Layer: m.Layer})
	}
	raw := h.cfg.Policy.URL
	if raw == "" {
		return out, nil
	}
	base, err := policyremote.BaseURL(raw)
	if err != nil {
		return nil, err
	}
	key, err := h.policyKey()
	if err != nil {
		return nil, err
	}
	if i, ok := seen[base]; ok {
		if out[i].KeyPEM == nil && out[i].KeyID == "" {
			out[i].KeyPEM = key
		}
		return out, nil
	}
	return append(out, PolicyServer{URL: base, KeyPEM: key}), nil
}

// ManagedPolicyServers reads the managed layers and lists the servers
// whose bundles apply (for `wharf policy pull`).
func (h *Home) ManagedPolicyServers() ([]PolicyServer, error) {
	layers, err := h.PolicySources().Load()
	if err != nil {
		return nil, err
	}
	return h.PolicyServers(layers)
}

// policyKey reads PolicyConfig.KeyFile; nil without one.
func (h *Home) policyKey() ([]byte, error) {
	keyFile := h.cfg.Policy.KeyFile
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
		return nil, KeyFileError("--policy-key", keyFile, err, "give the PEM public key of the policy server (GET /v1/policy/bundle/key)")
	}
	return key, nil
}

// KeyFileError is a key file given on the command line that is not a key
// of the expected kind: a usage error (exit 2) naming the flag and the
// file, whatever layer the parser gave it.
func KeyFileError(flag, file string, err error, hint string) error {
	msg := err.Error()
	if pe, ok := errors.AsType[*plugin.Error](err); ok && pe.Err != nil {
		msg = pe.Err.Error()
	}
	return &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: file,
		Err: fmt.Errorf("%s %s is not a usable key: %s", flag, file, msg), Hint: hint}
}

// PullPolicy pulls (or reads from the cache) one server's bundle and warns
// about what it says.
func (h *Home) PullPolicy(ctx context.Context, srv PolicyServer) (*policyremote.Result, error) {
	dir, err := policyremote.CacheDir(h.paths.Home(), srv.URL)
	if err != nil {
		return nil, shell.UsageError("wharf", err)
	}
	res, err := policyremote.Options{URL: srv.URL, Token: h.cfg.Policy.TokenFor(srv.URL), CacheDir: dir, Key: srv.KeyPEM, KeyID: srv.KeyID, MaxAge: srv.MaxAge}.Fetch(ctx)
	if err != nil {
		return nil, err
	}
	for _, w := range res.Warnings {
		h.warn("policy: " + w)
	}
	return res, nil
}

// LoadPolicy reads src's layers and, with policy servers (named by the
// managed settings, or PolicyConfig.URL), puts each server's layers after
// the managed directories and before the --policy paths; the servers the
// system managed directory names come before the further managed
// directory. Like every layer they can only tighten. A layer whose name an
// earlier layer already has is renamed (name_2, ...). It also returns the
// revocations the servers' bundles carry, in server order.
func (h *Home) LoadPolicy(ctx context.Context, src policy.Sources) ([]policy.Layer, policy.Revocations, error) {
	layers, err := src.Load()
	if err != nil {
		return nil, nil, err
	}
	servers, err := h.PolicyServers(layers)
	if err != nil || len(servers) == 0 {
		return layers, nil, err
	}
	h.hasPolicyServer = true
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
	var adms []*policy.Admissions
	var pins []toolpin.Pin
	for i, srv := range servers {
		res, err := h.PullPolicy(ctx, srv)
		if err != nil {
			return nil, nil, err
		}
		pulled[i] = res.Layers
		revs = append(revs, res.Info.Revocations...)
		if res.Info.Admissions != nil {
			adms = append(adms, res.Info.Admissions)
		}
		for _, p := range res.Info.ToolPins {
			p.Origin = "the policy server " + srv.URL
			pins = append(pins, p)
		}
	}
	h.admissions = adms
	h.bundlePins = pins
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

// policyGate lets policy refuse a marketplace source before wharf touches
// the network or disk for it.
type policyGate struct{ h *Home }

func (g policyGate) AllowAdd(src plugin.MarketplaceSource) error {
	e, err := g.h.Policy()
	if err != nil {
		return err
	}
	// The marketplace's own name is only known after its manifest is read;
	// until then it goes by the last element of where it comes from.
	label := strings.TrimSuffix(path.Base(strings.TrimRight(src.String(), "/")), ".git")
	return e.AllowAdd(context.Background(), label, src)
}
