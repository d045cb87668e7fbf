package policy

import (
	"encoding/json"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/wharfhq/wharf/plugin"
	"github.com/wharfhq/wharf/settings"
)

// Action is what a Request asks to do.
type Action string

// The actions policy decides.
const (
	ActionAddMarketplace    Action = "add_marketplace"
	ActionUpdateMarketplace Action = "update_marketplace"
	ActionInstall           Action = "install"
	ActionEnable            Action = "enable"
	ActionDisable           Action = "disable"
	ActionUninstall         Action = "uninstall"
	ActionLoad              Action = "load"           // a plugin at agent start
	ActionLoadComponent     Action = "load_component" // a surface from a source kind
	ActionRunHook           Action = "run_hook"
	ActionSideload          Action = "sideload"         // --plugin-dir
	ActionCrossDependency   Action = "cross_dependency" // a dependency on another marketplace's plugin
)

var actions = map[Action]bool{ActionAddMarketplace: true, ActionUpdateMarketplace: true, ActionInstall: true,
	ActionEnable: true, ActionDisable: true, ActionUninstall: true, ActionLoad: true, ActionLoadComponent: true,
	ActionRunHook: true, ActionSideload: true, ActionCrossDependency: true}

// Source kinds of a component or hook (load_component, run_hook).
const (
	FromPlugin  = "plugin"
	FromManaged = "managed"
	FromUser    = "user"
	FromProject = "project"
	FromBuiltin = "builtin"
)

var sourceKinds = map[string]bool{FromPlugin: true, FromManaged: true, FromUser: true, FromProject: true, FromBuiltin: true}

// Marketplace names a marketplace and, when known, its source.
type Marketplace struct {
	Name   string                      `json:"name"`
	Source *settings.MarketplaceSource `json:"source,omitempty"`
}

// Request is one question to policy. Which fields matter depends on Action:
// marketplace actions need Marketplace (with its Source: strictKnownMarketplaces
// cannot allow a marketplace whose source is unknown); plugin actions need
// Plugin (and Marketplace for install, enable and load); a dependency install
// sets RequiredBy; load_component and run_hook set Surface and From.
type Request struct {
	Action      Action      `json:"action"`
	Plugin      plugin.ID   `json:"-"`
	Marketplace Marketplace `json:"marketplace"`
	// RequiredBy is the plugin that depends on Plugin (install of a
	// dependency, cross_dependency).
	RequiredBy plugin.ID `json:"-"`
	// DeclaredCross is the intent side of allowCrossMarketplaceDependenciesOn:
	// the dependent marketplace's marketplace.json list plus the user's and
	// project's settings. Policy layers can only narrow it.
	DeclaredCross []string `json:"declaredCross,omitempty"`
	// Signatures are the key ids whose signatures over the plugin's digest
	// verified (trust did the verifying; policy only requires them).
	Signatures []string         `json:"signatures,omitempty"`
	Surface    settings.Surface `json:"surface,omitempty"`
	From       string           `json:"from,omitempty"` // plugin, managed, user, project, builtin
	Path       string           `json:"path,omitempty"` // sideload directory
}

type wireRequest struct {
	Action        Action                      `json:"action"`
	Plugin        string                      `json:"plugin,omitempty"`
	Marketplace   *Marketplace                `json:"marketplace,omitempty"`
	RequiredBy    string                      `json:"requiredBy,omitempty"`
	DeclaredCross []string                    `json:"declaredCross,omitempty"`
	Signatures    []string                    `json:"signatures,omitempty"`
	Surface       settings.Surface            `json:"surface,omitempty"`
	From          string                      `json:"from,omitempty"`
	Path          string                      `json:"path,omitempty"`
	Source        *settings.MarketplaceSource `json:"-"`
}

// MarshalJSON writes plugin ids as "name@marketplace" strings.
func (r Request) MarshalJSON() ([]byte, error) {
	w := wireRequest{Action: r.Action, DeclaredCross: r.DeclaredCross, Signatures: r.Signatures,
		Surface: r.Surface, From: r.From, Path: r.Path}
	if !r.Plugin.IsZero() {
		w.Plugin = r.Plugin.String()
	}
	if !r.RequiredBy.IsZero() {
		w.RequiredBy = r.RequiredBy.String()
	}
	if r.Marketplace.Name != "" || r.Marketplace.Source != nil {
		m := r.Marketplace
		w.Marketplace = &m
	}
	return json.Marshal(w)
}

// ParseRequest decodes a request document (wharf policy eval --input) and
// validates it.
func ParseRequest(data []byte) (Request, error) {
	var raw struct {
		wireRequest
		Marketplace *struct {
			Name   string          `json:"name"`
			Source json.RawMessage `json:"source"`
		} `json:"marketplace"`
	}
	bad := func(format string, args ...any) (Request, error) {
		return Request{}, plugin.Errorf(plugin.LayerIntent, TypeRequestInvalid, "request", "see docs/policy.md for the request fields", format, args...)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return bad("request is not valid: %v", err)
	}
	req := Request{Action: raw.Action, DeclaredCross: raw.DeclaredCross, Signatures: raw.Signatures,
		Surface: raw.Surface, From: raw.From, Path: raw.Path}
	var err error
	if raw.Plugin != "" {
		if req.Plugin, err = plugin.ParseID(raw.Plugin); err != nil {
			return bad("plugin: %v", err)
		}
	}
	if raw.RequiredBy != "" {
		if req.RequiredBy, err = plugin.ParseID(raw.RequiredBy); err != nil {
			return bad("requiredBy: %v", err)
		}
	}
	if raw.Marketplace != nil {
		req.Marketplace.Name = raw.Marketplace.Name
		if len(raw.Marketplace.Source) > 0 && string(raw.Marketplace.Source) != "null" {
			src, err := settings.ParseSource(raw.Marketplace.Source)
			if err != nil {
				return bad("marketplace.source: %v", err)
			}
			req.Marketplace.Source = &src
		}
	}
	if err := req.Validate(); err != nil {
		return Request{}, err
	}
	return req, nil
}

// TypeRequestInvalid is the error type of a malformed Request.
const TypeRequestInvalid = "policy-request-invalid"

// Validate checks that the fields the action needs are present.
func (r Request) Validate() error {
	bad := func(format string, args ...any) error {
		return plugin.Errorf(plugin.LayerIntent, TypeRequestInvalid, string(r.Action), "see docs/policy.md for the request fields", format, args...)
	}
	if !actions[r.Action] {
		return bad("unknown action %q", r.Action)
	}
	switch r.Action {
	case ActionInstall, ActionEnable, ActionDisable, ActionUninstall, ActionLoad, ActionCrossDependency:
		if r.Plugin.IsZero() {
			return bad("%s needs a plugin", r.Action)
		}
	case ActionAddMarketplace, ActionUpdateMarketplace:
		if r.Marketplace.Name == "" && r.Marketplace.Source == nil {
			return bad("%s needs a marketplace", r.Action)
		}
	case ActionLoadComponent:
		if !sourceKinds[r.From] {
			return bad("load_component needs from: one of plugin, managed, user, project, builtin (got %q)", r.From)
		}
		if r.Surface == "" {
			return bad("load_component needs a surface")
		}
	case ActionRunHook:
		if !sourceKinds[r.From] {
			return bad("run_hook needs from: one of plugin, managed, user, project, builtin (got %q)", r.From)
		}
	}
	if r.Action == ActionCrossDependency && r.RequiredBy.IsZero() {
		return bad("cross_dependency needs requiredBy")
	}
	if r.From == FromPlugin && r.Plugin.IsZero() {
		return bad("%s from a plugin needs the plugin", r.Action)
	}
	if !r.Plugin.IsZero() && r.Marketplace.Name != "" && r.Marketplace.Name != r.Plugin.Source {
		return bad("plugin %s is not from marketplace %s", r.Plugin, r.Marketplace.Name)
	}
	return nil
}

// target names the object a decision is about, for messages.
func (r Request) target() string {
	switch {
	case !r.Plugin.IsZero():
		return r.Plugin.String()
	case r.Action == ActionSideload:
		return r.Path
	case r.Marketplace.Name != "":
		return r.Marketplace.Name
	}
	return string(r.Action)
}

// Input is the request as the Rego module reads it, with the facets of the
// marketplace source precomputed (canonical key, owner, host, path). It is
// exported so that benchmarks and `wharf policy eval --json` can show exactly
// what OPA sees.
func (r Request) Input() map[string]any {
	m := map[string]any{
		"action": string(r.Action),
	}
	pluginStr, pluginMkt := "", ""
	if !r.Plugin.IsZero() {
		pluginStr, pluginMkt = r.Plugin.String(), r.Plugin.Source
	}
	m["plugin"] = pluginStr
	m["plugin_marketplace"] = pluginMkt
	mk := map[string]any{"name": r.Marketplace.Name, "source_known": false, "key": "", "owner": "", "host": "", "path": "", "display": ""}
	if mk["name"] == "" {
		mk["name"] = pluginMkt
	}
	if s := r.Marketplace.Source; s != nil {
		mk["source_known"] = true
		mk["key"] = s.Key()
		mk["owner"] = s.RepoOwner()
		mk["host"] = s.Host()
		mk["path"] = s.LocalPath()
		mk["display"] = displaySource(*s)
	}
	m["marketplace"] = mk
	rb, rbm := "", ""
	if !r.RequiredBy.IsZero() {
		rb, rbm = r.RequiredBy.String(), r.RequiredBy.Source
	}
	m["required_by"] = rb
	m["required_by_marketplace"] = rbm
	dc := map[string]any{}
	for _, n := range r.DeclaredCross {
		dc[n] = true
	}
	m["declared_cross"] = dc
	sig := map[string]any{}
	for _, k := range r.Signatures {
		sig[k] = true
	}
	m["signatures"] = sig
	m["surface"] = string(r.Surface)
	m["source_kind"] = r.From
	m["path"] = r.Path
	return m
}

// astInput builds the same value as Input directly as an AST object, which
// saves OPA a conversion per evaluation.
func (r Request) astInput() ast.Value {
	in, _ := ast.InterfaceToValue(r.Input())
	return in
}

func displaySource(s settings.MarketplaceSource) string {
	switch s.Source {
	case settings.KindGitHub:
		d := "github:" + s.Repo
		if s.Ref != "" {
			d += "#" + s.Ref
		}
		return d
	case settings.KindGit, settings.KindURL:
		return s.Source + ":" + s.URL
	case settings.KindDirectory, settings.KindFile:
		return s.Source + ":" + s.Path
	}
	return s.Source
}
