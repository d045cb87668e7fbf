package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
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
	// ActionFetchSource is a plugin's tree fetched from a source (the one
	// its marketplace entry names, or one a redirect leads to): the
	// source goes in Marketplace.Source. blockedMarketplaces applies.
	ActionFetchSource Action = "fetch_source"
)

var actions = map[Action]bool{ActionAddMarketplace: true, ActionUpdateMarketplace: true, ActionInstall: true,
	ActionEnable: true, ActionDisable: true, ActionUninstall: true, ActionLoad: true, ActionLoadComponent: true,
	ActionRunHook: true, ActionSideload: true, ActionCrossDependency: true, ActionFetchSource: true}

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
	Name   string                    `json:"name"`
	Source *plugin.MarketplaceSource `json:"source,omitempty"`
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
	// Signatures are the key ids whose signatures over the plugin's
	// statement verified (trust did the verifying; policy only requires
	// them), and LegacySignature tokens for old-form signatures (over the
	// bare digest only), which satisfy requireSignatures only in a layer
	// whose legacySignatureKeys names the key (SignatureKeys builds both).
	Signatures []string         `json:"signatures,omitempty"`
	Surface    settings.Surface `json:"surface,omitempty"`
	From       string           `json:"from,omitempty"` // plugin, managed, user, project, builtin
	Path       string           `json:"path,omitempty"` // sideload directory
	// ManagedDir, for a component from managed settings, is the managed
	// directory whose settings declare it ("" for the highest managed
	// layer's). A managed component counts as managed for the layer of
	// that directory and the layers below it only: hooks a further
	// managed directory declares do not pass the system's
	// allowManagedHooksOnly or strictPluginOnlyCustomization.
	ManagedDir string `json:"managedDir,omitempty"`
	// Content, when the caller has the plugin's tree, is its capability
	// set and findings: input.capabilities and input.findings.
	Content *Content `json:"content,omitempty"`
}

// memoKey is the one function that builds the key of a memoized decision
// (the engine's memo and memo file, see WithMemoFile): every field of the
// request, and what of the environment its evaluation input depends on
// besides the policy version (the GitHub host owner/repo sources point to,
// the resolved path of a local marketplace source), NUL-separated. It sits
// next to Request so that a field added to Request is added here too
// (TestMemoKeyChangesWithEveryRequestField fails otherwise). Building it
// costs a fraction of building the evaluation input, which a memo hit never
// does.
func memoKey(dst []byte, req Request, x *factIndex) []byte {
	dst = append(dst, req.Action...)
	for _, s := range []string{req.Plugin.Name, req.Plugin.Source, req.RequiredBy.Name, req.RequiredBy.Source,
		string(req.Surface), req.From, req.Path, req.Marketplace.Name, req.ManagedDir} {
		dst = append(dst, 0)
		dst = append(dst, s...)
	}
	for _, l := range [][]string{req.DeclaredCross, req.Signatures} {
		dst = append(dst, 0)
		for _, s := range l {
			dst = append(append(dst, s...), 1)
		}
	}
	dst = append(dst, 0)
	dst = append(dst, req.Content.memoKey()...)
	dst = append(dst, 0)
	if x != nil {
		dst = append(dst, x.githubHost...)
	} else {
		dst = append(dst, envGitHubHost()...)
	}
	dst = append(dst, 0)
	if s := req.Marketplace.Source; s != nil {
		dst = settings.AppendSourceKey(dst, *s)
		if s.IsLocal() {
			// Policy matches a local source by its resolved path: a link
			// repointed since the decision was memoized is a new request.
			dst = append(dst, 0)
			dst = append(dst, plugin.ResolvePath(s.Path)...)
		}
	}
	return dst
}

type wireRequest struct {
	Action        Action                    `json:"action"`
	Plugin        string                    `json:"plugin,omitempty"`
	Marketplace   *Marketplace              `json:"marketplace,omitempty"`
	RequiredBy    string                    `json:"requiredBy,omitempty"`
	DeclaredCross []string                  `json:"declaredCross,omitempty"`
	Signatures    []string                  `json:"signatures,omitempty"`
	Surface       settings.Surface          `json:"surface,omitempty"`
	From          string                    `json:"from,omitempty"`
	Path          string                    `json:"path,omitempty"`
	ManagedDir    string                    `json:"managedDir,omitempty"`
	Content       *Content                  `json:"content,omitempty"`
	Source        *plugin.MarketplaceSource `json:"-"`
}

// MarshalJSON writes plugin ids as "name@marketplace" strings.
func (r Request) MarshalJSON() ([]byte, error) {
	w := wireRequest{Action: r.Action, DeclaredCross: r.DeclaredCross, Signatures: r.Signatures,
		Surface: r.Surface, From: r.From, Path: r.Path, ManagedDir: r.ManagedDir, Content: r.Content}
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
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		line, col := jsonPosition(data, err, dec.InputOffset())
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) {
			field := strings.TrimPrefix(te.Field, "wireRequest.")
			msg = fmt.Sprintf("field %q: expected %s, got JSON %s", field, te.Type, te.Value)
		}
		return bad("request is not valid JSON at line %d, column %d: %s", line, col, msg)
	}
	req := Request{Action: raw.Action, DeclaredCross: raw.DeclaredCross, Signatures: raw.Signatures,
		Surface: raw.Surface, From: raw.From, Path: raw.Path, ManagedDir: raw.ManagedDir, Content: raw.Content}
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
			src, err := plugin.DecodeMarketplaceSource(raw.Marketplace.Source)
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

// jsonPosition is the 1-based line and column a JSON decoding error points
// at: the offending byte of a syntax error, the end of a truncated document,
// or the decoder's offset for a value of the wrong type or an unknown field.
func jsonPosition(data []byte, err error, decoded int64) (int, int) {
	off := decoded
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		off = se.Offset - 1
	case errors.Is(err, io.ErrUnexpectedEOF):
		off = int64(len(data))
	default:
		// An unknown field: point at its key, the last one of that name
		// before where decoding stopped.
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok && off <= int64(len(data)) {
			if i := bytes.LastIndex(data[:off], []byte(name)); i >= 0 {
				off = int64(i)
			}
		}
	}
	off = max(0, min(off, int64(len(data))))
	prefix := data[:off]
	return bytes.Count(prefix, []byte("\n")) + 1, int(off) - bytes.LastIndexByte(prefix, '\n')
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
	case ActionFetchSource:
		if r.Marketplace.Source == nil {
			return bad("fetch_source needs the source (marketplace.source)")
		}
	case ActionSideload:
		if r.Path == "" {
			return bad("sideload needs the path")
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
	if r.ManagedDir != "" && r.From != FromManaged {
		return bad("managedDir names where a managed component comes from; it needs from: managed (got %q)", r.From)
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
	case r.Action == ActionFetchSource && r.Marketplace.Source != nil:
		return displaySource(*r.Marketplace.Source)
	case r.Marketplace.Name != "":
		return r.Marketplace.Name
	}
	return string(r.Action)
}

// Input is the request as the Rego module reads it, with the facets of the
// marketplace source precomputed (canonical key, owner, host, path). It is
// exported so that benchmarks and `wharf policy eval --json` can show what
// OPA sees; the engine adds input.facts (see factIndex.facts), which depends
// on the policy layers.
func (r Request) Input() map[string]any { return r.inputWith(envGitHubHost()) }

// Input is r as this engine's Rego module reads it (Request.Input), with
// the engine's GitHub host (WithGitHubHost).
func (e *Engine) Input(r Request) map[string]any { return r.inputWith(*e.githubHost) }

func (r Request) inputWith(ghHost string) map[string]any {
	f := r.facetsWith(true, ghHost)
	mk := map[string]any{"name": f.mktName, "source_known": f.src.known, "key": f.src.key, "owner": f.src.owner,
		"host": f.src.host, "path": f.src.path, "display": f.src.display}
	dc := map[string]any{}
	for _, n := range r.DeclaredCross {
		dc[n] = true
	}
	sig := map[string]any{}
	for _, k := range r.Signatures {
		sig[k] = true
	}
	in := map[string]any{
		"action":                  string(r.Action),
		"plugin":                  f.plugin,
		"plugin_marketplace":      f.pluginMkt,
		"marketplace":             mk,
		"required_by":             f.requiredBy,
		"required_by_marketplace": f.requiredByMkt,
		"declared_cross":          dc,
		"signatures":              sig,
		"surface":                 string(r.Surface),
		"source_kind":             r.From,
		"path":                    r.Path,
		"managed_dir":             r.ManagedDir,
	}
	if r.Content != nil {
		in["capabilities"], in["findings"] = r.Content.generic()
	}
	return in
}

// sourceFacets are the parts of a marketplace source that policy compares,
// in canonical form (see sourcematch.go).
type sourceFacets struct {
	known                           bool
	key, owner, host, path, display string
	// ownerKey is "host/owner" of a repository on a GitHub host: what
	// "owner/*" entries are indexed by (see sourcematch.go).
	ownerKey string
	// rawKey is the source's key as written (settings.SourceKey),
	// for entries that have no canonical form.
	rawKey string
	// canon is the canonical form, when canonical is set.
	canon     plugin.CanonicalSource
	canonical bool
	// lexPath is a local source's path as written (absolute, symlinks not
	// resolved): blocks are matched against it too.
	lexPath string
}

type requestFacets struct {
	plugin, pluginMkt, mktName string
	requiredBy, requiredByMkt  string
	src                        sourceFacets
}

// facetsOf computes the facets of a source. ghHost is the GitHub host
// owner/repo sources point at. A local path is resolved (symlinks): the only
// disk access a decision makes.
func facetsOf(s *plugin.MarketplaceSource, ghHost string) sourceFacets {
	f := sourceFacets{known: true, rawKey: settings.SourceKey(*s), display: displaySource(*s)}
	c, ok := canonicalOf(s, ghHost)
	if !ok {
		f.key, f.owner, f.host, f.path = f.rawKey, s.RepoOwner(), s.Host(), s.LocalPath()
		if f.owner != "" {
			f.ownerKey = plugin.DefaultGitHubHost + "/" + f.owner
		}
		return f
	}
	f.canon, f.canonical = c, true
	f.key, f.owner, f.host = c.Key(), c.Owner(), c.Host
	if f.owner != "" {
		f.ownerKey = c.Host + "/" + f.owner
	}
	if c.Kind == plugin.CanonLocal {
		f.path = c.Path
		f.lexPath = lexicalPath(s)
	}
	return f
}

// facetsWith computes what policy compares of the request, reading
// owner/repo on ghHost. With withSource false the marketplace source is
// left out (see marketplaceTerm).
func (r Request) facetsWith(withSource bool, ghHost string) requestFacets {
	var f requestFacets
	if !r.Plugin.IsZero() {
		f.plugin, f.pluginMkt = r.Plugin.String(), r.Plugin.Source
	}
	f.mktName = r.Marketplace.Name
	if f.mktName == "" {
		f.mktName = f.pluginMkt
	}
	if s := r.Marketplace.Source; s != nil && withSource {
		f.src = facetsOf(s, ghHost)
	}
	if !r.RequiredBy.IsZero() {
		f.requiredBy, f.requiredByMkt = r.RequiredBy.String(), r.RequiredBy.Source
	}
	return f
}

var (
	keyAction        = ast.StringTerm("action")
	keyPlugin        = ast.StringTerm("plugin")
	keyPluginMkt     = ast.StringTerm("plugin_marketplace")
	keyMarketplace   = ast.StringTerm("marketplace")
	keyRequiredBy    = ast.StringTerm("required_by")
	keyRequiredByMkt = ast.StringTerm("required_by_marketplace")
	keyDeclaredCross = ast.StringTerm("declared_cross")
	keySigs          = ast.StringTerm("signatures")
	keySurface       = ast.StringTerm("surface")
	keySourceKind    = ast.StringTerm("source_kind")
	keyPath          = ast.StringTerm("path")
	keyManagedDir    = ast.StringTerm("managed_dir")
	keyFacts         = ast.StringTerm("facts")
	keyName          = ast.StringTerm("name")
	keySourceKnown   = ast.StringTerm("source_known")
	keyKey           = ast.StringTerm("key")
	keyOwner         = ast.StringTerm("owner")
	keyHost          = ast.StringTerm("host")
	keyDisplay       = ast.StringTerm("display")
)

// evalInput builds the value of Input directly as an AST object, plus
// input.facts from x (nil: no facts, as in Input). Terms that do not depend
// on the request (keys, empty sets, common strings) are shared: OPA never
// modifies its input.
func (r Request) evalInput(x *factIndex) ast.Value {
	ghHost := envGitHubHost()
	if x != nil {
		ghHost = x.githubHost
	}
	f := r.facetsWith(false, ghHost)
	var mk *ast.Term
	f.src, mk = marketplaceTerm(f.mktName, r.Marketplace.Source, ghHost)
	trueSet := func(keys []string) *ast.Term {
		if len(keys) == 0 {
			return emptyObject
		}
		items := make([][2]*ast.Term, len(keys))
		for i, k := range keys {
			items[i] = ast.Item(ast.StringTerm(k), trueTerm)
		}
		return ast.NewTerm(ast.NewObject(items...))
	}
	items := [...][2]*ast.Term{
		ast.Item(keyAction, strTerm(string(r.Action))),
		ast.Item(keyPlugin, strTerm(f.plugin)),
		ast.Item(keyPluginMkt, strTerm(f.pluginMkt)),
		ast.Item(keyMarketplace, mk),
		ast.Item(keyRequiredBy, strTerm(f.requiredBy)),
		ast.Item(keyRequiredByMkt, strTerm(f.requiredByMkt)),
		ast.Item(keyDeclaredCross, trueSet(r.DeclaredCross)),
		ast.Item(keySigs, trueSet(r.Signatures)),
		ast.Item(keySurface, strTerm(string(r.Surface))),
		ast.Item(keySourceKind, strTerm(r.From)),
		ast.Item(keyPath, strTerm(r.Path)),
		ast.Item(keyManagedDir, strTerm(r.ManagedDir)),
		{},
	}
	if r.Content != nil {
		all := append(append([][2]*ast.Term{}, items[:len(items)-1]...), r.Content.contentItems()...)
		if x != nil {
			all = append(all, ast.Item(keyFacts, x.facts(&r, &f)))
		}
		return ast.NewObject(all...)
	}
	if x == nil {
		return ast.NewObject(items[:len(items)-1]...)
	}
	items[len(items)-1] = ast.Item(keyFacts, x.facts(&r, &f))
	return ast.NewObject(items[:]...)
}

// marketplaceKey is what input.marketplace depends on: the name, the
// source without its headers (headers are not identity) and the GitHub
// host. Local sources are not cached: their facets depend on the symlinks
// on disk at the time of the decision.
type marketplaceKey struct {
	name, ghHost         string
	known                bool
	kind                 plugin.MarketplaceKind
	repo, url, ref, path string
}

type marketplaceEntry struct {
	src  sourceFacets
	term *ast.Term
}

// marketplaceTerms keeps input.marketplace objects already built: requests
// about the plugins of one marketplace share it. Bounded: when full it
// starts over.
var marketplaceTerms struct {
	sync.RWMutex
	m map[marketplaceKey]marketplaceEntry
}

const marketplaceTermsMax = 1024

// marketplaceTerm returns the facets of src and input.marketplace.
func marketplaceTerm(name string, src *plugin.MarketplaceSource, ghHost string) (sourceFacets, *ast.Term) {
	k := marketplaceKey{name: name}
	local := false
	if src != nil {
		k = marketplaceKey{name: name, ghHost: ghHost, known: true, kind: src.Kind, repo: src.Repo, url: src.URL, ref: src.Ref, path: src.Path}
		local = src.IsLocal() ||
			src.Kind == plugin.MktGit && strings.HasPrefix(strings.ToLower(strings.TrimSpace(src.URL)), "file:")
	}
	var e marketplaceEntry
	if !local {
		marketplaceTerms.RLock()
		cached, ok := marketplaceTerms.m[k]
		marketplaceTerms.RUnlock()
		if ok {
			return cached.src, cached.term
		}
	}
	if src != nil {
		e.src = facetsOf(src, ghHost)
	}
	e.term = ast.NewTerm(ast.NewObject(
		ast.Item(keyName, strTerm(name)),
		ast.Item(keySourceKnown, ast.InternedTerm(e.src.known)),
		ast.Item(keyKey, strTerm(e.src.key)),
		ast.Item(keyOwner, strTerm(e.src.owner)),
		ast.Item(keyHost, strTerm(e.src.host)),
		ast.Item(keyPath, strTerm(e.src.path)),
		ast.Item(keyDisplay, strTerm(e.src.display)),
	))
	if local {
		return e.src, e.term
	}
	marketplaceTerms.Lock()
	if marketplaceTerms.m == nil || len(marketplaceTerms.m) >= marketplaceTermsMax {
		marketplaceTerms.m = make(map[marketplaceKey]marketplaceEntry)
	}
	marketplaceTerms.m[k] = e
	marketplaceTerms.Unlock()
	return e.src, e.term
}

var (
	emptyObject = ast.NewTerm(ast.NewObject())
	trueTerm    = ast.InternedTerm(true)
	// commonStrings are the values most requests share.
	commonStrings = func() map[string]*ast.Term {
		m := map[string]*ast.Term{"": ast.StringTerm("")}
		for a := range actions {
			m[string(a)] = ast.StringTerm(string(a))
		}
		for k := range sourceKinds {
			m[k] = ast.StringTerm(k)
		}
		for _, k := range []string{"exact", "owner", "host", "path"} {
			m[k] = ast.StringTerm(k)
		}
		return m
	}()
)

func strTerm(s string) *ast.Term {
	if t, ok := commonStrings[s]; ok {
		return t
	}
	return ast.StringTerm(s)
}

func displaySource(s plugin.MarketplaceSource) string {
	switch s.Kind {
	case plugin.MktGitHub:
		d := "github:" + s.Repo
		if s.Ref != "" {
			d += "#" + s.Ref
		}
		return d
	case plugin.MktGit, plugin.MktURL:
		return string(s.Kind) + ":" + s.URL
	case plugin.MktDirectory, plugin.MktFile:
		return string(s.Kind) + ":" + s.Path
	}
	return string(s.Kind) + ":" + s.String()
}

// LegacySignature is the token standing, in Request.Signatures, for a valid
// old-form signature by the key ref (a key id, or the sha256 fingerprint of
// the public key): it matches only a layer that opts that key in with
// legacySignatureKeys, never a requireSignatures key id by itself.
func LegacySignature(ref string) string { return "legacy:" + ref }

// SignatureKeys is Request.Signatures for a plugin: keys whose signature
// covers its statement, and keys whose signature covers only its bare digest
// (old form), each given as its key id and the sha256 fingerprint of its
// public key (legacyFingerprints, same order; "" when unknown).
func SignatureKeys(keys, legacy, legacyFingerprints []string) []string {
	out := append([]string{}, keys...)
	for i, k := range legacy {
		out = append(out, LegacySignature(k))
		if i < len(legacyFingerprints) && legacyFingerprints[i] != "" {
			out = append(out, LegacySignature(legacyFingerprints[i]))
		}
	}
	return out
}
