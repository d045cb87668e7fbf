package agent

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/wharfhq/wharf/internal/client/agentlink"
	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// Policy is what a Runtime decides with: the policy layers the embedding
// program adds, below the machine's managed layers. Its value is opaque;
// LoadPolicy makes one, and the zero Policy, like LoadPolicy(), is the
// managed layers alone. A Policy can be given to any number of Opens.
type Policy struct {
	// paths are LoadPolicy's layers, absolute.
	paths []string
	// engine, when set, is a compiled policy wharf's own commands give
	// (agentlink.Policy); the Runtime asks it as it is, under the guard.
	engine load.Policy
}

// LoadPolicy reads the policy layers an embedding program adds below the
// machine's managed layers. Each path is a JSON settings file (the
// managed-settings.json format), a .rego file of admin rules (package
// wharf.admin.<layer>, where the layer is named after the file), or a
// directory laid out like the managed directory; layers rank in the order
// given. With no path the policy is the managed layers alone.
//
// The layers are read and compiled now, so a missing file or a bad rule is
// reported here, naming it (a *plugin.Error of layer policy). Open reads
// them again, under the managed layers, and every Runtime.Load after the
// first re-reads them. Whatever they say can only tighten what the managed
// layers say: a lower layer cannot allow what a higher one denies, nor
// turn a plugin a higher one forces on or off.
func LoadPolicy(paths ...string) (*Policy, error) {
	p := &Policy{}
	for _, path := range paths {
		if path == "" {
			return nil, plugin.Errorf(plugin.LayerPolicy, policy.TypeLayerInvalid, "LoadPolicy", "pass the path of a settings file, a .rego file or a directory", "an empty policy path")
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, plugin.Errorf(plugin.LayerPolicy, policy.TypeLayerInvalid, path, "pass an absolute path", "policy layer: %v", err)
		}
		p.paths = append(p.paths, abs)
	}
	if _, err := policy.Open(policy.Sources{Paths: p.paths}); err != nil {
		return nil, err
	}
	return p, nil
}

// Layers are the paths LoadPolicy read, absolute, highest first; nil for a
// policy of the managed layers alone.
func (p *Policy) Layers() []string {
	if p == nil {
		return nil
	}
	return append([]string(nil), p.paths...)
}

// enginePolicy is what the loader asks before it loads a plugin, a surface
// of components, a hook or a session plugin dir. *policy.Engine implements
// it. Implementations must be safe for concurrent use, and Decide must be
// a pure function of the request and Version: *policy.Engine memoizes
// decisions by version (in memory; opened with policy.WithMemoFile it
// keeps them between processes, and the Runtime reads that file early and
// saves it after each load unless Options.NoMemo is set).
type enginePolicy = load.Policy

// ErrNoPolicy is wrapped by the error of Open without Options.Policy: a
// Runtime never runs without a policy.
var ErrNoPolicy = errors.New("agent: Options.Policy is required")

// compile returns the engine the Runtime asks for p: the one wharf's
// commands gave, or one over the machine's managed directories and p's
// layers, keeping its decisions in the home's memo file unless noMemo.
func (p *Policy) compile(paths settings.Paths, home string, noMemo bool) (enginePolicy, error) {
	if p.engine != nil {
		return p.engine, nil
	}
	var opts []policy.Option
	if home != "" && !noMemo {
		opts = append(opts, policy.WithMemoFile(layout.New(home).PolicyMemo()))
	}
	e, err := policy.Open(policy.Sources{ManagedDir: paths.ManagedDir, ExtraManagedDir: paths.ExtraManagedDir, Paths: p.paths}, opts...)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func init() {
	agentlink.Register(
		func(e *policy.Engine) any { return &Policy{engine: e} },
		func(options any, w agentlink.Wiring) { options.(*Options).wiring = &w },
	)
}

// PolicyDecision is the session's policy's answer to one request.
type PolicyDecision struct {
	Allowed bool `json:"allowed"`
	// Forced is "on" or "off" when managed enabledPlugins forces the plugin.
	Forced        string         `json:"forced,omitempty"`
	Reasons       []PolicyReason `json:"reasons"`
	Warnings      []string       `json:"warnings"`
	PolicyVersion string         `json:"policyVersion"`
	// Message is the denial as wharf reports it, with the next step; ""
	// when the request is allowed.
	Message string `json:"message,omitempty" doc:"the denial as wharf reports it, with the next step"`
}

// PolicyReason is one rule that denied a request: the layer it is in
// ("managed", a LoadPolicy layer's name, ...), the rule, and why.
type PolicyReason struct {
	Layer   string `json:"layer"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// CheckPolicy asks the session's policy (the machine's managed layers and
// the program's) one request: a JSON object with the fields `wharf policy
// eval --input` takes ({"action": "install", "plugin": "deploy@corp",
// "marketplace": {"name": "corp", "source": {...}}, ...}). A request that
// does not parse is an error naming the field; a denial is a decision with
// Allowed false, not an error.
func (r *Runtime) CheckPolicy(ctx context.Context, request []byte) (PolicyDecision, error) {
	req, err := policy.ParseRequest(request)
	if err != nil {
		return PolicyDecision{}, err
	}
	d, err := r.o.Policy.Decide(ctx, req)
	if err != nil {
		return PolicyDecision{}, err
	}
	out := PolicyDecision{Allowed: d.Allowed, Forced: d.Forced, Reasons: make([]PolicyReason, len(d.Reasons)),
		Warnings: d.Warnings, PolicyVersion: d.PolicyVersion}
	for i, rs := range d.Reasons {
		out.Reasons[i] = PolicyReason{Layer: rs.Layer, Rule: rs.Rule, Message: rs.Message}
	}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	if err := d.Err(req); err != nil {
		out.Message = err.Error()
		if h := plugin.HintOf(err); h != "" {
			out.Message += "; " + h
		}
	}
	return out, nil
}

// AllowHook asks the session's policy whether a hook from a source kind
// ("plugin", "user", "project" or "managed") may run; id is the plugin of
// a plugin hook (allowManagedHooksOnly, strictPluginOnlyCustomization). It
// makes a Runtime a hooks.Gate, for hooks the embedding program runs from
// elsewhere than the current Set: the load already left out the hooks of
// the Set that policy refuses.
func (r *Runtime) AllowHook(ctx context.Context, from string, id plugin.ID) error {
	return r.dec.Check(ctx, policy.Request{Action: policy.ActionRunHook, Surface: settings.SurfaceHooks, From: from, Plugin: id})
}
