package api

import (
	"context"
	"encoding/json"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/plugin"
)

// PolicyEngine is the PolicyCompiler backed by package policy: the built-in
// Rego for the standard keys plus each layer's admin modules (package
// wharf.admin.<layer>). It reads owner/repo sources on WHARF_GITHUB_HOST.
func PolicyEngine(ctx context.Context, layers []PolicyLayer) (Decider, error) {
	return policyEngine(ctx, layers)
}

// PolicyEngineOn is PolicyEngine reading owner/repo sources on the GitHub
// host ghHost (the server's github-host; "" for github.com).
func PolicyEngineOn(ghHost string) PolicyCompiler {
	return func(ctx context.Context, layers []PolicyLayer) (Decider, error) {
		return policyEngine(ctx, layers, policy.WithGitHubHost(ghHost))
	}
}

func policyEngine(_ context.Context, layers []PolicyLayer, opts ...policy.Option) (Decider, error) {
	pl := make([]policy.Layer, len(layers))
	for i, l := range layers {
		pl[i] = policy.Layer{Name: l.Name, Settings: l.Settings, Modules: l.Modules, Origin: "server layer " + l.Name}
	}
	e, err := policy.NewEngine(pl, append([]policy.Option{policy.WithCache(4096)}, opts...)...)
	if err != nil {
		return nil, err
	}
	return policyDecider{e}, nil
}

type policyDecider struct{ e *policy.Engine }

// Warnings passes on the engine's warnings (unknown keys, values that fail
// closed) so that a layer write can report them.
func (d policyDecider) Warnings() []string { return d.e.Warnings() }

// DecideMarketplace asks whether the marketplace may be added (update=false)
// or refreshed from source.
func (d policyDecider) DecideMarketplace(ctx context.Context, name string, source json.RawMessage, update bool) (Decision, error) {
	req := policy.Request{Action: policy.ActionAddMarketplace, Marketplace: policy.Marketplace{Name: name}}
	if update {
		req.Action = policy.ActionUpdateMarketplace
	}
	req.Marketplace.Source = decisionSource(source)
	pd, err := d.e.Decide(ctx, req)
	if err != nil {
		return Decision{}, err
	}
	return fromPolicy(pd), nil
}

// AllowFetch decides whether a plugin's tree may come from src, the
// source its entry names or one a fetch is redirected to (fetch_source:
// managed blockedMarketplaces): what channel builds ask.
func (d policyDecider) AllowFetch(ctx context.Context, id string, src plugin.Source) error {
	return d.e.AllowFetch(ctx, id, src)
}

func fromPolicy(pd policy.Decision) Decision {
	out := Decision{Allowed: pd.Allowed, Forced: pd.Forced, Warnings: pd.Warnings, Reasons: make([]Reason, len(pd.Reasons))}
	for i, r := range pd.Reasons {
		out.Reasons[i] = Reason{Layer: r.Layer, Rule: r.Rule, Message: r.Message}
	}
	return out
}

// Decide asks whether the plugin may be installed from its marketplace (as a
// dependency of RequiredBy when set).
func (d policyDecider) Decide(ctx context.Context, in DecisionInput) (Decision, error) {
	req := policy.Request{Action: policy.ActionInstall, Plugin: in.Plugin, RequiredBy: in.RequiredBy,
		Marketplace: policy.Marketplace{Name: in.Plugin.Source}, Content: in.Content}
	if len(in.MarketplaceSource) > 0 {
		req.Marketplace.Source = decisionSource(in.MarketplaceSource)
	}
	pd, err := d.e.Decide(ctx, req)
	if err != nil {
		return Decision{}, err
	}
	return fromPolicy(pd), nil
}

// decisionSource reads a marketplace source as the marketplace manager
// will (the string forms "owner/repo", a git URL or a path included), else
// as a settings file writes it, else as far as it reads, for policy to
// match; nil when it is not a source, which strictKnownMarketplaces
// refuses.
func decisionSource(raw json.RawMessage) *plugin.MarketplaceSource {
	var ms plugin.MarketplaceSource
	if err := json.Unmarshal(raw, &ms); err == nil {
		return &ms
	}
	if s, err := plugin.DecodeMarketplaceSource(raw); err == nil {
		return &s
	}
	// The fields as written, without the checks of the two forms above
	// (which the type's own UnmarshalJSON would apply).
	type asWritten plugin.MarketplaceSource
	var s asWritten
	if err := json.Unmarshal(raw, &s); err == nil && s.Kind != "" {
		src := plugin.MarketplaceSource(s)
		return &src
	}
	return nil
}
