package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/wharfhq/wharf/plugin"
	"github.com/wharfhq/wharf/policy"
	"github.com/wharfhq/wharf/policy/remote"
)

// remotePolicyFlags are the global flags naming a policy server: its
// layers apply after the managed directory and before --policy paths.
type remotePolicyFlags struct {
	url     string
	token   string
	keyFile string
}

func addRemotePolicyFlags(pf *pflag.FlagSet, f *remotePolicyFlags) {
	pf.StringVar(&f.url, "policy-url", "", "a wharf server whose policy bundle applies after the managed directory (env WHARF_POLICY_URL)")
	pf.StringVar(&f.token, "token", "", "bearer token for the wharf server (env WHARF_TOKEN)")
	pf.StringVar(&f.keyFile, "policy-key", "", "PEM public key the policy bundle must be signed with (env WHARF_POLICY_KEY); without it the server's key is trusted on first use and stored")
}

// policyURL is --policy-url, else WHARF_POLICY_URL.
func (a *app) policyURL() string {
	if a.remote.url != "" {
		return a.remote.url
	}
	return strings.TrimSpace(os.Getenv("WHARF_POLICY_URL"))
}

// pullPolicy pulls (or reads from the cache) the policy server's bundle and
// prints its warnings.
func (a *app) pullPolicy(ctx context.Context) (*remote.Result, error) {
	raw := a.policyURL()
	if raw == "" {
		return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Err: errors.New("no policy server"),
			Hint: "pass --policy-url URL or set WHARF_POLICY_URL"}
	}
	base, err := remote.BaseURL(raw)
	if err != nil {
		return nil, err
	}
	dir, err := remote.CacheDir(a.env.Home(), base)
	if err != nil {
		return nil, usageError(err)
	}
	token := a.remote.token
	if token == "" {
		token = os.Getenv("WHARF_TOKEN")
	}
	keyFile := a.remote.keyFile
	if keyFile == "" {
		keyFile = os.Getenv("WHARF_POLICY_KEY")
	}
	var key []byte
	if keyFile != "" {
		if key, err = os.ReadFile(keyFile); err != nil {
			return nil, &plugin.Error{Layer: plugin.LayerIntent, Type: typeUsage, Object: keyFile, Err: fmt.Errorf("--policy-key: %w", err),
				Hint: "give the PEM public key of the policy server (GET /v1/policy/bundle/key)"}
		}
	}
	res, err := remote.Options{URL: base, Token: token, CacheDir: dir, Key: key}.Fetch(ctx)
	if err != nil {
		return nil, err
	}
	for _, w := range res.Warnings {
		a.warnf("policy: %s", w)
	}
	return res, nil
}

// loadPolicyLayers reads src's layers and, with a policy server, puts the
// server's layers after the managed directory and before the --policy
// paths. Like every layer they can only tighten. A --policy layer whose
// name a server layer already has is renamed (name_2, ...).
func (a *app) loadPolicyLayers(ctx context.Context, src policy.Sources) ([]policy.Layer, error) {
	layers, err := src.Load()
	if err != nil || a.policyURL() == "" {
		return layers, err
	}
	res, err := a.pullPolicy(ctx)
	if err != nil {
		return nil, err
	}
	n := 0 // the managed layer, when there is one, stays first
	if len(layers) > 0 && src.ManagedDir != "" && layers[0].Name == "managed" && layers[0].Origin == src.ManagedDir {
		n = 1
	}
	taken := map[string]bool{}
	for _, l := range layers[:n] {
		taken[l.Name] = true
	}
	for _, l := range res.Layers {
		taken[l.Name] = true
	}
	out := append(append([]policy.Layer{}, layers[:n]...), res.Layers...)
	for _, l := range layers[n:] {
		base := l.Name
		for i := 2; taken[l.Name]; i++ {
			l.Name = fmt.Sprintf("%s_%d", base, i)
		}
		taken[l.Name] = true
		out = append(out, l)
	}
	return out, nil
}

// openPolicy compiles src's layers with the policy server's; a reload
// pulls again.
func (a *app) openPolicy(src policy.Sources) (*policy.Engine, error) {
	load := func() ([]policy.Layer, error) { return a.loadPolicyLayers(context.Background(), src) }
	layers, err := load()
	if err != nil {
		return nil, err
	}
	opts := []policy.Option{policy.WithLoader(load)}
	if a.env.Home() != "" {
		opts = append(opts, policy.WithMemoFile(a.env.PolicyMemo()))
	}
	return policy.NewEngine(layers, opts...)
}
