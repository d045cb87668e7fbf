package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/client/userconfig"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// Mode selects a loader.
type Mode int

// The loaders.
const (
	// CacheOnly reads the registry, the installed manifests and components,
	// and checks each plugin's stat fingerprint. No network, no re-hash.
	CacheOnly Mode = iota + 1
	// Full re-hashes every installed plugin against its trust pin.
	Full
)

func (m Mode) String() string {
	switch m {
	case CacheOnly:
		return "cache-only"
	case Full:
		return "full"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// registry is the installed registry as the loader reads it. *cache.Cache
// implements it. List must be safe to call while another process writes.
type registry interface {
	List() ([]cache.Record, error)
}

// registryScanner is a registry that also reports the records it cannot
// decode (*cache.Cache does): the loader lists each such plugin as failed,
// with the way out, instead of leaving it out without a word.
type registryScanner interface {
	Scan() ([]cache.Record, []cache.BrokenRecord, error)
}

// leaser leases version directories for the session. *cache.Cache
// implements it.
type leaser interface {
	Acquire(ctx context.Context, paths ...string) (*cache.Lease, error)
}

// PluginStatus is one plugin's state after a load: the row `wharf list`
// shows for it (made by the same load pass, so the two agree), plus where
// it came from and how many of its components are live. Its JSON form is
// a row of `wharf agent status --json`.
type PluginStatus struct {
	ID plugin.ID `json:"id"`
	// Version, Scope, InstallPath and Digest are the installed record's
	// ("" for a plugin that is not installed).
	Version     string `json:"version"`
	Scope       string `json:"scope"`
	Enabled     bool   `json:"enabled"`
	InstallPath string `json:"installPath"`
	// Auto: installed as another plugin's dependency.
	Auto bool `json:"auto,omitempty"`
	// Status is "active", "demoted", "failed" or "disabled".
	Status string `json:"status"`
	// Forced is "on" or "off" when managed enabledPlugins forces the
	// plugin's state.
	Forced string `json:"forced,omitempty"`
	// Delisted: the plugin's marketplace no longer lists it.
	Delisted bool `json:"delisted,omitempty"`
	// Errors are the messages of ErrorDetails.
	Errors       []string      `json:"errors"`
	ErrorDetails []ErrorDetail `json:"errorDetails"`
	// Chain explains a demotion: "a@m needs b@m; b@m is disabled".
	Chain  string `json:"chain,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Failed describes each component the plugin declares that cannot be
	// used (kind, name, file, field, reason). The rest of the plugin loads.
	Failed []string `json:"failed,omitempty"`
	// Source is "installed", "inline" (a session plugin dir) or
	// "settings" (enabled in settings but not installed).
	Source string `json:"source"`
	// Components counts the plugin's live components.
	Components int `json:"components"`
	// Skipped names components of the plugin that were not loaded, and why.
	Skipped []string `json:"skipped,omitempty"`
}

// ErrorDetail is one error of a plugin: its *plugin.Error type and layer,
// the object it names, its message and the next step.
type ErrorDetail struct {
	Type    string `json:"type"`
	Layer   string `json:"layer"`
	Object  string `json:"object,omitempty"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// statusOf is the PluginStatus of a load pass's row.
func statusOf(r load.Row, source string, components int, skipped []string) PluginStatus {
	p := PluginStatus{ID: r.ID, Version: r.Version, Scope: r.Scope, Enabled: r.Enabled, InstallPath: r.InstallPath, Auto: r.Auto,
		Status: r.Status, Forced: r.Forced, Delisted: r.Delisted, Errors: r.Errors, Chain: r.Chain, Digest: r.Digest, Failed: r.Failed,
		Source: source, Components: components, Skipped: skipped}
	if p.Errors == nil {
		p.Errors = []string{}
	}
	p.ErrorDetails = make([]ErrorDetail, len(r.ErrorDetails))
	for i, d := range r.ErrorDetails {
		p.ErrorDetails[i] = ErrorDetail(d)
	}
	return p
}

// Skipped is a component that was found but not loaded.
type Skipped struct {
	Component Component
	// Err says why: a *plugin.Error of layer policy (a locked surface, a
	// hook policy refuses) or active (a collision with a builtin or a
	// shadowing component).
	Err error
}

// TypeCollision is the *plugin.Error type (layer active) of a component
// that is not loaded because it would shadow a builtin or is shadowed by a
// component of a higher source.
const TypeCollision = "component-collision"

// loadInput is what one load reads besides the filesystem.
type loadInput struct {
	snap     *settings.Snapshot
	recs     []cache.Record
	broken   []cache.BrokenRecord
	inline   []string
	dec      *load.Decider
	index    *componentIndex
	contents *load.Contents
	mode     Mode
	o        *config
	workers  int

	// project is the project folder's trust; projectOnly the plugins
	// that only project-folder settings enable (their code needs it).
	project     FolderTrust
	projectOnly map[plugin.ID]bool
	// httpAllow is allowedHttpHookUrls: a URL must match a pattern of
	// each list (nil: no restriction).
	httpAllow [][]string
	// noConfig holds the userConfig directories (one per marketplace)
	// that do not exist: a plugin whose two directories are absent has no
	// value set, and is not asked file by file (two stats per marketplace
	// instead of two per plugin).
	noConfig map[string]bool
}

// unit is one plugin's load: its status row, dependencies and version dir
// (the load pass's unit) and its candidate components.
type unit struct {
	*load.Unit
	source string // "installed", "inline" or "settings"
	// comps point into the component index's entry or the parsed tree,
	// which nothing changes after the load; a component the load changes
	// (a hook, prepared) is a new one. The merge copies them into the Set.
	comps []*Component
	skips []Skipped
	warns []string
	// secret holds the plugin's sensitive userConfig values; they are
	// substituted after the component index, so it never stores them.
	secret map[string]string
	// options are the plugin's userConfig values as environment entries
	// (optionEnv), given to its hooks and servers after the index.
	options []string
}

// dataDir is CLAUDE_PLUGIN_DATA of id: under WHARF_HOME, keyed by source and
// name (not version), so it survives updates. Without a home there is none.
func (in *loadInput) dataDir(id plugin.ID) string {
	if in.o.Home == "" {
		return ""
	}
	return layout.New(in.o.Home).Data(id.Source, id.Name)
}

// build computes a complete Set. It has no side effects beyond reading
// (and the policy memo).
func build(ctx context.Context, in *loadInput) (*Set, error) {
	o := in.o
	set := &Set{mode: in.mode, settingsHash: in.snap.Hash}
	if o.Policy != nil {
		set.policyVersion = o.Policy.Version()
	}
	for _, is := range in.snap.Merged.Issues {
		set.warnings = append(set.warnings, "settings: "+is.String())
	}
	enabled := in.snap.Merged.EnabledPlugins
	in.project = FolderTrust{Trusted: true}
	if o.Project != "" {
		var warns []string
		in.project, warns = decideFolderTrust(o.Home, o.Project, in.snap)
		set.warnings = append(set.warnings, warns...)
		if !in.project.Trusted {
			in.projectOnly = projectOnlyPlugins(in.snap)
		}
	}
	set.project = in.project
	var hw []string
	in.httpAllow, hw = httpHookAllowlist(in.snap)
	set.warnings = append(set.warnings, hw...)

	in.noConfig = noConfigDirs(o.Home, in.recs)

	// The load pass: policy, revocations, trust, then this package's
	// reading of each admitted plugin's components (index or tree).
	extra := make([]*unit, len(in.recs))
	lo := load.Options{Decider: in.dec, Revocations: o.Revocations, Mode: in.mode.trust(),
		MarketplaceSource: o.MarketplaceSource, Entries: o.Entries, Workers: in.workers, Contents: in.contents}
	lunits, err := load.Pass(ctx, lo, load.Input{Records: in.recs, Broken: in.broken, Enabled: enabled, Docs: in.snap.Docs},
		func(ctx context.Context, i int, r cache.Record, entry *plugin.Entry, lu *load.Unit) {
			u := &unit{Unit: lu, source: "installed"}
			extra[i] = u
			in.readInstalled(ctx, r, entry, u)
		})
	if err != nil {
		return nil, err
	}
	units := make([]*unit, 0, len(lunits)+len(in.inline))
	for i, lu := range lunits {
		if i < len(extra) && extra[i] != nil {
			units = append(units, extra[i])
			continue
		}
		// Past the records: a broken record (installed) or a plugin
		// enabled in settings but not installed.
		src := "installed"
		if lu.Type(load.TypeNotInstalled) {
			src = "settings"
		}
		units = append(units, &unit{Unit: lu, source: src})
	}
	// Session plugin dirs, in parallel as installed plugins are.
	inline := make([]*unit, len(in.inline))
	var wg sync.WaitGroup
	for i, dir := range in.inline {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inline[i] = in.loadInline(ctx, dir)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	units = append(units, inline...)

	// Inline plugins are loaded for this session; one that has the name
	// of another inline plugin is a conflict.
	seen := map[plugin.ID]bool{}
	for _, u := range units {
		if seen[u.ID] {
			u.AddError(plugin.Errorf(plugin.LayerIntent, plugin.TypeConflict, u.ID.String(),
				"pass each --plugin-dir once, or rename one of the plugins",
				"two session plugin dirs define %s", u.ID))
		}
		seen[u.ID] = true
	}

	// Demotion: a plugin is active only if it is enabled, passed every
	// check and its dependencies are active.
	lus := make([]*load.Unit, len(units))
	for i, u := range units {
		lus[i] = u.Unit
	}
	load.Demote(lus)

	n := 0
	for _, u := range units {
		if u.Status == load.StatusActive {
			n += len(u.comps)
		}
	}
	cands := make([]*Component, 0, n)
	var skips []Skipped
	for _, u := range units {
		set.warnings = append(set.warnings, u.warns...)
		if u.Status != load.StatusActive {
			continue
		}
		cands = append(cands, u.comps...)
		skips = append(skips, u.skips...)
		if u.Path != "" && u.source == "installed" {
			set.paths = append(set.paths, u.Path)
		}
	}
	own, ownSkips, ownWarns := in.ownComponents(ctx)
	cands = append(cands, own...)
	skips = append(skips, ownSkips...)
	set.warnings = append(set.warnings, ownWarns...)

	comps, mergeSkips := merge(o.Builtins, cands)
	skips = append(skips, mergeSkips...)
	set.comps = comps
	sort.SliceStable(skips, func(i, j int) bool { return lessComponent(&skips[i].Component, &skips[j].Component) })
	set.skipped = skips

	count := map[plugin.ID]int{}
	for _, c := range comps {
		if c.Source == SourcePlugin {
			count[c.Plugin]++
		}
	}
	skipped := map[plugin.ID][]string{}
	for _, s := range skips {
		if s.Component.Source == SourcePlugin {
			skipped[s.Component.Plugin] = append(skipped[s.Component.Plugin], s.Component.Name+": "+s.Err.Error())
		}
	}
	set.plugins = make([]PluginStatus, len(units))
	for i, u := range units {
		set.plugins[i] = statusOf(u.Row, u.source, count[u.ID], skipped[u.ID])
	}
	sort.SliceStable(set.plugins, func(i, j int) bool { return set.plugins[i].ID.String() < set.plugins[j].ID.String() })
	return set, nil
}

// trust is the load pass's trust check of a mode.
func (m Mode) trust() load.Mode {
	if m == Full {
		return load.Full
	}
	return load.Fast
}

// readInstalled reads the components of an installed plugin the load pass
// admitted (enabled, allowed, not revoked, trusted): from the component
// index when its key still matches on the cache-only path, else from the
// tree.
func (in *loadInput) readInstalled(ctx context.Context, r cache.Record, entry *plugin.Entry, u *unit) {
	x := expander{root: r.InstallPath, data: in.dataDir(r.ID), project: in.o.Project}
	if in.o.Home != "" {
		var uc, secret map[string]string
		if !in.hasNoConfig(r.ID) {
			var err error
			uc, secret, err = userconfig.LoadSplit(in.o.Home, r.ID)
			if err != nil {
				u.AddError(plugin.Errorf(plugin.LayerMaterialization, plugin.TypeComponentLoad, r.ID.String(),
					"fix or remove the file, then set the options again with: wharf config "+r.ID.String(), "userConfig values: %v", err))
				return
			}
		}
		x.uc, x.held, u.secret = uc, sortedKeys(secret), secret
		u.options = optionEnv(uc, secret)
	}
	key := indexKey(r, entry, x)
	if e, ok := in.index.get(r.InstallPath, key); ok && in.mode == CacheOnly {
		u.Deps = e.Deps
		u.Failed = slices.Clone(e.Failed)
		in.filter(ctx, u, r.ID, in.expandEnv(u, e.Comps))
	} else {
		comps := in.parseTree(u, r.ID, r.InstallPath, entry, x)
		if len(u.Errors) > 0 {
			return
		}
		in.index.put(r.InstallPath, indexEntry{Key: key, Comps: comps, Deps: u.Deps, Failed: slices.Clone(u.Failed)})
		in.filter(ctx, u, r.ID, in.expandEnv(u, comps))
	}
	if in.projectOnly[r.ID] && u.Forced != "on" {
		in.gateProjectCode(u)
	}
}

// noConfigDirs returns the userConfig directories of recs' plugins that
// do not exist under home. Any other answer of stat (a directory, an
// error) leaves the plugin to userconfig.LoadSplit.
func noConfigDirs(home string, recs []cache.Record) map[string]bool {
	if home == "" {
		return nil
	}
	out := map[string]bool{}
	asked := map[string]bool{}
	for _, r := range recs {
		plain, secret := userconfig.Files(home, r.ID)
		for _, d := range []string{filepath.Dir(plain), filepath.Dir(secret)} {
			if !asked[d] {
				asked[d] = true
				_, err := os.Stat(d)
				out[d] = errors.Is(err, fs.ErrNotExist)
			}
		}
	}
	return out
}

// hasNoConfig reports whether id's userConfig files cannot exist: both
// their directories were absent when the load began.
func (in *loadInput) hasNoConfig(id plugin.ID) bool {
	plain, secret := userconfig.Files(in.o.Home, id)
	return in.noConfig[filepath.Dir(plain)] && in.noConfig[filepath.Dir(secret)]
}

// gateProjectCode skips the hooks and servers of a plugin that only the
// untrusted project folder's settings enable: its prompts still load.
func (in *loadInput) gateProjectCode(u *unit) {
	kept := make([]*Component, 0, len(u.comps))
	for _, c := range u.comps {
		if runsCode(c.Kind) {
			u.skips = append(u.skips, Skipped{Component: *c, Err: in.project.Err})
			continue
		}
		kept = append(kept, c)
	}
	u.comps = kept
}

func runsCode(k plugin.ComponentKind) bool {
	return k == plugin.KindHook || k == plugin.KindMCPServer || k == plugin.KindLSPServer
}

// projectOnlyPlugins lists the plugins enabled by the project or local
// settings and by no user, flag or managed document.
func projectOnlyPlugins(snap *settings.Snapshot) map[plugin.ID]bool {
	out := map[plugin.ID]bool{}
	enabled := func(doc settings.Document, each func(plugin.ID)) {
		if doc.Missing || len(doc.Data) == 0 || !bytes.Contains(doc.Data, []byte("nabledPlugins")) && bytes.IndexByte(doc.Data, '\\') < 0 {
			return
		}
		s, err := settings.Parse(doc.Name, doc.Data)
		if err != nil {
			return
		}
		for id, on := range s.EnabledPlugins {
			if on {
				each(id)
			}
		}
	}
	projectScope := func(doc settings.Document) bool {
		return doc.Scope == settings.ScopeProject || doc.Scope == settings.ScopeLocal
	}
	for _, doc := range snap.Docs {
		if projectScope(doc) {
			enabled(doc, func(id plugin.ID) { out[id] = true })
		}
	}
	// Only then the other documents, which can only take plugins out: a
	// project that enables nothing (the common case) does not have the
	// user's settings, listing every enabled plugin, parsed again.
	for _, doc := range snap.Docs {
		if len(out) == 0 {
			break
		}
		if !projectScope(doc) {
			enabled(doc, func(id plugin.ID) { delete(out, id) })
		}
	}
	return out
}

func (in *loadInput) loadInline(ctx context.Context, dir string) *unit {
	p, _, err := plugin.Load(dir, nil)
	name := filepath.Base(dir)
	if p != nil {
		name = p.Manifest.Name
	}
	id := plugin.ID{Name: name, Source: plugin.SourceInline}
	u := &unit{Unit: &load.Unit{Row: load.NewRow(id)}, source: plugin.SourceInline}
	u.Scope = string(settings.ScopeFlag)
	u.InstallPath = dir
	u.Enabled = true
	if p != nil {
		u.Version = p.Manifest.Version
	}
	// The plugin goes by name@inline: managed enabledPlugins can force it off.
	req := policy.Request{Action: policy.ActionSideload, Path: dir, Plugin: id}
	if perr := in.dec.Check(ctx, req); perr != nil {
		u.AddError(perr)
		return u
	}
	if err != nil {
		u.AddError(err)
		return u
	}
	comps := in.parseTree(u, id, dir, nil, expander{root: dir, data: in.dataDir(id), project: in.o.Project})
	if len(u.Errors) == 0 {
		in.filter(ctx, u, id, in.expandEnv(u, comps))
	}
	return u
}

// parseTree reads the components of a plugin whose tree passed the trust
// check. Errors go to u's status; the components are returned normalized.
func (in *loadInput) parseTree(u *unit, id plugin.ID, root string, entry *plugin.Entry, x expander) []Component {
	p, diags := load.ReadManifest(u.Unit, root, entry)
	if p == nil {
		return nil
	}
	for _, d := range diags {
		if d.Severity == plugin.SeverityWarning && in.mode == Full {
			u.warns = append(u.warns, id.String()+": "+d.String())
		}
	}
	if opts, err := p.Manifest.UserConfigOptions(); err == nil {
		// An option left unset takes its default, as in Claude Code.
		for _, o := range opts {
			if _, ok := x.uc[o.Key]; !ok && !slices.Contains(x.held, o.Key) && o.DefaultString() != "" {
				if x.uc == nil {
					x.uc = map[string]string{}
				} else {
					x.uc = maps.Clone(x.uc)
				}
				x.uc[o.Key] = o.DefaultString()
			}
		}
	}
	if id.Source == plugin.SourceInline {
		u.Deps = nil // a session dir has no marketplace to resolve names in
	}
	pc := &pluginComponents{in: in, u: u, p: p, id: id, x: x, parsed: map[string]any{}}
	var comps []Component
	for _, pcomp := range p.Components {
		cs, err := pc.expand(pcomp)
		if err != nil {
			u.AddError(err)
			continue
		}
		for i := range cs {
			normalize(&cs[i])
		}
		comps = append(comps, cs...)
	}
	if len(u.Errors) > 0 {
		return nil
	}
	return comps
}

// expandEnv substitutes environment references (${VAR}, ${VAR:-default})
// in the MCP and LSP servers of comps, as Claude Code does when it starts
// them, and checks each server once substituted: one that cannot be used
// (a URL that is empty, invalid, or still needs a variable that is not set)
// is recorded as failed on u's row and left out; the plugin's other
// components load. It runs after the component index, which keeps
// configurations as written, so a changed environment counts on the next
// load. comps is not modified.
//
// The plugin's sensitive userConfig values are substituted here too (in
// servers and hook commands), never before the index.
func (in *loadInput) expandEnv(u *unit, comps []Component) []Component {
	var out []Component
	for i := range comps {
		c := &comps[i]
		var next Component
		var missing []string
		var field, reason string
		switch {
		case c.Hook != nil && len(u.secret) > 0 && hookRefs(c.Hook):
			next = *c
			next.Hook = &Hook{Event: c.Hook.Event, Matchers: expander{uc: u.secret}.matchers(c.Hook.Matchers)}
		case c.MCP != nil && mcpRefs(c.MCP):
			s, m := plugin.Vars{Env: os.LookupEnv, UserConfig: u.secret}.ExpandMCP(*c.MCP)
			next, missing = *c, m
			next.MCP = &s
			field, reason = plugin.CheckMCPServer(s)
			if reason == "" && s.IsRemote() && len(plugin.References(s.URL)) > 0 {
				field, reason = "url", "needs "+strings.Join(plugin.References(s.URL), ", ")+", which is not set and has no default"
			}
		case c.LSP != nil && lspRefs(c.LSP):
			s, m := plugin.Vars{Env: os.LookupEnv, UserConfig: u.secret}.ExpandLSP(*c.LSP)
			next, missing = *c, m
			next.LSP = &s
		case len(u.options) > 0 && (c.Hook != nil || c.MCP != nil || c.LSP != nil):
			next = *c
		default:
			if out != nil {
				out = append(out, *c)
			}
			continue
		}
		if c.Hook != nil || c.MCP != nil || c.LSP != nil {
			next.options = u.options
		}
		if out == nil {
			out = append(make([]Component, 0, len(comps)), comps[:i]...)
		}
		if reason != "" {
			u.Failed = append(u.Failed, plugin.FailedComponent{Kind: c.Kind, Name: c.Local,
				Path: c.Path, Field: field, Reason: reason + " (after substituting the environment)"}.String())
			continue
		}
		if len(missing) > 0 && in.mode == Full {
			u.warns = append(u.warns, fmt.Sprintf("%s: %s %s: %s not set and without a default; left as written",
				c.Plugin, c.Kind, c.Name, strings.Join(missing, ", ")))
		}
		next.seal()
		out = append(out, next)
	}
	if out == nil {
		return comps
	}
	return out
}

func hookRefs(h *Hook) bool {
	for _, m := range h.Matchers {
		for _, k := range m.Hooks {
			if hasRef(k.Command, k.Prompt) {
				return true
			}
		}
	}
	return false
}

func mcpRefs(s *plugin.MCPServer) bool {
	return hasRef(s.Command, s.Cwd, s.URL) || hasRef(s.Args...) || hasRefMap(s.Env) || hasRefMap(s.Headers)
}

func lspRefs(s *plugin.LSPServer) bool {
	return hasRef(s.Command) || hasRef(s.Args...) || hasRefMap(s.Env)
}

func hasRef(ss ...string) bool {
	for _, s := range ss {
		if strings.Contains(s, "${") {
			return true
		}
	}
	return false
}

func hasRefMap(m map[string]string) bool {
	for _, s := range m {
		if strings.Contains(s, "${") {
			return true
		}
	}
	return false
}

// filter applies the per-surface and hook policy to a plugin's components,
// asking once per surface the plugin has.
func (in *loadInput) filter(ctx context.Context, u *unit, id plugin.ID, comps []Component) {
	var src *plugin.MarketplaceSource
	if in.o.MarketplaceSource != nil && id.Source != plugin.SourceInline {
		src = in.o.MarketplaceSource(id.Source)
	}
	gate := in.dec.Surfaces(policy.FromPlugin, id, src)
	surfaceOK := func(k plugin.ComponentKind) error { return gate.Allow(ctx, k) }
	// Nothing refused (the common case): every component is used as it
	// is; nothing writes to a unit's components after the load.
	refused := false
	for i := range comps {
		if surfaceOK(comps[i].Kind) != nil {
			refused = true
			break
		}
	}
	u.comps = make([]*Component, 0, len(comps))
	for i := range comps {
		if refused {
			if err := surfaceOK(comps[i].Kind); err != nil {
				u.skips = append(u.skips, Skipped{Component: comps[i], Err: err})
				continue
			}
		}
		u.comps = append(u.comps, &comps[i])
	}
	var warns []string
	u.comps, u.skips, warns = in.prepareHooks(u.comps, u.skips)
	u.warns = append(u.warns, warns...)
}

type pluginComponents struct {
	in     *loadInput
	u      *unit
	p      *plugin.Plugin
	id     plugin.ID
	x      expander
	parsed map[string]any // JSON component file (or "" / manifest for inline) → parsed config
}

// expand turns one discovered component into live components: a Markdown
// file with its front matter, or the hook/server configuration it names.
func (pc *pluginComponents) expand(c plugin.Component) ([]Component, error) {
	base := Component{Kind: c.Kind, Local: c.Name, Plugin: pc.id, Source: SourcePlugin, Root: pc.p.Root, DataDir: pc.x.data}
	if c.Path != "" && c.Path != ".claude-plugin/plugin.json" {
		base.Path = filepath.Join(pc.p.Root, filepath.FromSlash(c.Path))
	} else if c.Path != "" {
		base.Path = plugin.ManifestFile(pc.p.Root)
	}
	switch c.Kind {
	case plugin.KindCommand, plugin.KindSkill, plugin.KindAgent, plugin.KindOutputStyle:
		base.Name = plugin.ComponentName(c.Kind, pc.p.Namespace(), c.Name)
		if err := readMarkdown(&base); err != nil {
			return nil, plugin.Errorf(plugin.LayerActive, plugin.TypeComponentLoad, pc.id.String(),
				"fix the file and reload", "%s %s: %v", c.Kind, base.Path, err)
		}
		return []Component{base}, nil
	case plugin.KindHook:
		cfg, err := pc.config(c)
		if err != nil {
			return nil, err
		}
		h := cfg.(*plugin.HooksConfig)
		base.Name = plugin.ComponentName(c.Kind, pc.p.Namespace(), c.Name)
		base.Hook = &Hook{Event: plugin.HookEvent(c.Name), Matchers: pc.x.matchers(h.Hooks[plugin.HookEvent(c.Name)])}
		return []Component{base}, nil
	case plugin.KindMCPServer:
		cfg, err := pc.config(c)
		if err != nil {
			return nil, err
		}
		base.Name = plugin.ComponentName(c.Kind, pc.p.Namespace(), c.Name)
		base.MCP = pc.x.mcp(cfg.(*plugin.MCPConfig).Servers[c.Name])
		return []Component{base}, nil
	case plugin.KindLSPServer:
		cfg, err := pc.config(c)
		if err != nil {
			return nil, err
		}
		base.Name = plugin.ComponentName(c.Kind, pc.p.Namespace(), c.Name)
		base.LSP = pc.x.lsp(cfg.(*plugin.LSPConfig).Servers[c.Name])
		return []Component{base}, nil
	}
	return nil, plugin.Errorf(plugin.LayerActive, plugin.TypeComponentLoad, pc.id.String(), "", "unknown component kind %q", c.Kind)
}

// config parses the file (or inline object) that defines a JSON component,
// once per file.
func (pc *pluginComponents) config(c plugin.Component) (any, error) {
	key := string(c.Kind) + "\x00" + c.Path
	if v, ok := pc.parsed[key]; ok {
		return v, nil
	}
	var data []byte
	file := c.Path
	if c.Path == "" || c.Path == ".claude-plugin/plugin.json" {
		switch c.Kind {
		case plugin.KindHook:
			data = pc.p.Manifest.Hooks.Inline
		case plugin.KindMCPServer:
			data = pc.p.Manifest.MCPServers.Inline
		case plugin.KindLSPServer:
			data = pc.p.Manifest.LSPServers.Inline
		}
		if file == "" {
			file = "marketplace entry"
		}
	} else {
		file = filepath.Join(pc.p.Root, filepath.FromSlash(c.Path))
		b, err := readLimited(file)
		if err != nil {
			return nil, plugin.Errorf(plugin.LayerActive, plugin.TypeComponentLoad, pc.id.String(), "reinstall the plugin", "%v", err)
		}
		data = b
	}
	var v any
	var err error
	switch c.Kind {
	case plugin.KindHook:
		var h *plugin.HooksConfig
		h, _, err = plugin.ParseHooks(data, file)
		v = h
	case plugin.KindMCPServer:
		var m *plugin.MCPConfig
		m, _, err = plugin.ParseMCPServers(data, file)
		v = m
	case plugin.KindLSPServer:
		var l *plugin.LSPConfig
		l, _, err = plugin.ParseLSPServers(data, file)
		v = l
	}
	if err != nil {
		return nil, err
	}
	pc.parsed[key] = v
	return v, nil
}

func readLimited(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > plugin.MaxManifestSize {
		return nil, &plugin.SizeError{File: file, Size: fi.Size(), Limit: plugin.MaxManifestSize}
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		// The file shrank while it was read: it is changing under us.
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return b, nil
}

// readMarkdown reads c.Path's front matter into Description and Meta.
// Front matter that cannot be read is not fatal (agents show such a command
// without a description); an unreadable file is.
func readMarkdown(c *Component) error {
	data, err := readLimited(c.Path)
	if err != nil {
		return err
	}
	meta, _, err := plugin.ParseFrontMatter(data)
	if err != nil {
		return nil
	}
	var kv []string
	for k, v := range meta {
		var s string
		switch v := v.(type) {
		case string:
			s = v
		case bool, int, int64, uint64, float64:
			s = fmt.Sprint(v)
		default:
			continue
		}
		if kv == nil {
			kv = make([]string, 0, 2*len(meta))
		}
		kv = append(kv, k, s)
	}
	c.Meta = metaOfPairs(kv)
	c.Description, _ = c.Meta.Get("description")
	return nil
}

// ownComponents reads the user's and project's own commands, skills and
// agents and the hooks and MCP servers configured in settings, applying
// strictPluginOnlyCustomization and allowManagedHooksOnly.
func (in *loadInput) ownComponents(ctx context.Context) (live []*Component, skips []Skipped, warns []string) {
	var comps []Component
	o := in.o
	// managedDir is the managed directory of the settings document being
	// read: what it declares is managed for that directory's policy layer
	// and the layers below it only.
	managedDir := ""
	allow := func(s settings.Surface, from string) error {
		dir := ""
		if from == SourceManaged {
			dir = managedDir
		}
		err := in.dec.Check(ctx, policy.Request{Action: policy.ActionLoadComponent, Surface: s, From: from, ManagedDir: dir})
		if err == nil && s == settings.SurfaceHooks {
			err = in.dec.Check(ctx, policy.Request{Action: policy.ActionRunHook, Surface: settings.SurfaceHooks, From: from, ManagedDir: dir})
		}
		return err
	}
	add := func(cs []Component, s settings.Surface, from string) {
		if len(cs) == 0 {
			return
		}
		for i := range cs {
			normalize(&cs[i])
		}
		if err := allow(s, from); err != nil {
			for _, c := range cs {
				skips = append(skips, Skipped{Component: c, Err: err})
			}
			return
		}
		comps = append(comps, cs...)
	}
	type dirSrc struct{ dir, from string }
	var dirs []dirSrc
	if o.Home != "" {
		dirs = append(dirs, dirSrc{o.Home, SourceUser})
	}
	// A project whose .wharf is WHARF_HOME itself (a project at ~) has no
	// components apart from the user's.
	if pd := filepath.Join(o.Project, ".wharf"); o.Project != "" && filepath.Clean(pd) != filepath.Clean(o.Home) {
		dirs = append(dirs, dirSrc{pd, SourceProject})
	}
	x := expander{project: o.Project}
	for _, d := range dirs {
		cmds, w1 := markdownDir(filepath.Join(d.dir, "commands"), plugin.KindCommand, d.from)
		agents, w2 := markdownDir(filepath.Join(d.dir, "agents"), plugin.KindAgent, d.from)
		skills, w3 := skillDir(filepath.Join(d.dir, "skills"), d.from)
		warns = append(append(append(warns, w1...), w2...), w3...)
		add(cmds, settings.SurfaceCommands, d.from)
		add(skills, settings.SurfaceSkills, d.from)
		add(agents, settings.SurfaceAgents, d.from)
	}
	for _, doc := range in.snap.Docs {
		if doc.Missing || len(doc.Data) == 0 || !mayConfigure(doc.Data) {
			continue
		}
		from := scopeSource(doc.Scope)
		managedDir = doc.Dir
		s, err := settings.Parse(doc.Name, doc.Data)
		if err != nil {
			continue // already an issue of the merged snapshot
		}
		add := add
		if (doc.Scope == settings.ScopeProject || doc.Scope == settings.ScopeLocal) && !in.project.Trusted {
			// The project folder's code waits for its trust.
			add = func(cs []Component, s settings.Surface, from string) {
				err := allow(s, from) // a locked surface says so first
				if err == nil {
					err = in.project.Err
				}
				for i := range cs {
					normalize(&cs[i])
					skips = append(skips, Skipped{Component: cs[i], Err: err})
				}
			}
		}
		if len(s.Hooks) > 0 && string(s.Hooks) != "null" {
			h, _, err := plugin.ParseHooks(s.Hooks, doc.Name)
			if err != nil {
				warns = append(warns, fmt.Sprintf("%s: hooks not loaded: %v", doc.Describe(), err))
			} else {
				var cs []Component
				for _, ev := range hookEvents(h) {
					cs = append(cs, Component{Kind: plugin.KindHook, Name: string(ev), Local: string(ev), Source: from, Path: doc.Name,
						Hook: &Hook{Event: ev, Matchers: x.matchers(h.Hooks[ev])}})
				}
				add(cs, settings.SurfaceHooks, from)
			}
		}
		if len(s.MCPServers) > 0 {
			raw, _ := json.Marshal(map[string]any{"mcpServers": s.MCPServers})
			m, _, err := plugin.ParseMCPServers(raw, doc.Name)
			if err != nil {
				warns = append(warns, fmt.Sprintf("%s: mcpServers not loaded: %v", doc.Describe(), err))
			} else {
				var cs []Component
				for _, n := range m.Names() {
					cs = append(cs, Component{Kind: plugin.KindMCPServer, Name: n, Local: n, Source: from, Path: doc.Name, MCP: x.mcp(m.Servers[n])})
				}
				add(cs, settings.SurfaceMCPServers, from)
			}
		}
	}
	live = make([]*Component, len(comps))
	for i := range comps {
		live[i] = &comps[i]
	}
	var hw []string
	live, skips, hw = in.prepareHooks(live, skips)
	warns = append(warns, hw...)
	return live, skips, warns
}

// mayConfigure reports whether a settings document can hold hooks or MCP
// servers. Without a backslash no JSON key is escaped, so such a key must
// appear literally; a document with neither word (a user's settings listing
// hundreds of enabled plugins, typically) is not parsed a second time.
func mayConfigure(data []byte) bool {
	return bytes.IndexByte(data, '\\') >= 0 || bytes.Contains(data, []byte(`"hooks"`)) || bytes.Contains(data, []byte(`"mcpServers"`))
}

func hookEvents(h *plugin.HooksConfig) []plugin.HookEvent {
	var evs []plugin.HookEvent
	for ev, ms := range h.Hooks {
		if len(ms) > 0 {
			evs = append(evs, ev)
		}
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i] < evs[j] })
	return evs
}

// scopeSource maps a settings scope to the source its components report:
// local settings belong to the project, the flag scope to the user.
func scopeSource(s settings.Scope) string {
	switch s {
	case settings.ScopeManaged:
		return SourceManaged
	case settings.ScopeProject, settings.ScopeLocal:
		return SourceProject
	}
	return SourceUser
}

func markdownDir(dir string, kind plugin.ComponentKind, from string) ([]Component, []string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	var out []Component
	var warns []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || filepath.Ext(n) != ".md" {
			continue
		}
		name := n[:len(n)-3]
		if plugin.ValidateName(name) != nil {
			warns = append(warns, fmt.Sprintf("%s: %q is not a valid %s name; skipped", dir, name, kind))
			continue
		}
		c := Component{Kind: kind, Name: name, Local: name, Source: from, Path: filepath.Join(dir, n)}
		if err := readMarkdown(&c); err != nil {
			warns = append(warns, fmt.Sprintf("%s: %v", c.Path, err))
			continue
		}
		out = append(out, c)
	}
	return out, warns
}

func skillDir(dir, from string) ([]Component, []string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	var out []Component
	var warns []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		p := filepath.Join(dir, name, "SKILL.md")
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if plugin.ValidateName(name) != nil {
			warns = append(warns, fmt.Sprintf("%s: %q is not a valid skill name; skipped", dir, name))
			continue
		}
		c := Component{Kind: plugin.KindSkill, Name: name, Local: name, Source: from, Path: p}
		if err := readMarkdown(&c); err != nil {
			warns = append(warns, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		out = append(out, c)
	}
	return out, warns
}

// merge puts builtins first: a candidate whose invocation names hit a
// builtin of its kind is skipped, and a user component is shadowed by a
// project (or managed) one of the same kind and name. It sorts cands (the
// caller's, pointers rather than the large components) and returns the
// ones it keeps, in the Set's order; it changes no component.
func merge(builtins []Builtin, cands []*Component) ([]*Component, []Skipped) {
	type holder struct {
		who     string
		builtin bool
	}
	taken := map[string]holder{} // kind\x00name → who holds it
	for _, b := range builtins {
		taken[string(b.Kind)+"\x00"+b.Name] = holder{"builtin " + string(b.Kind) + " " + b.Name, true}
	}
	order := cands
	// The orders are total (the content sum breaks what the key does not),
	// so an unstable sort, about twice as fast here, gives one result.
	slices.SortFunc(order, func(a, b *Component) int {
		if ra, rb := sourceRank(a.Source), sourceRank(b.Source); ra != rb {
			return ra - rb
		}
		return cmpTotal(a, b)
	})
	kept := make([]*Component, 0, len(cands))
	var skips []Skipped
	for _, cp := range order {
		c := cp
		if c.Kind == plugin.KindHook {
			// Hooks never collide: every armed hook runs.
			kept = append(kept, cp)
			continue
		}
		var hit string
		for i, n := range c.invocationNames() {
			// A plugin's bare name yields to builtins only: its
			// namespaced name stays reachable next to a user's own.
			if h, ok := taken[string(c.Kind)+"\x00"+n]; ok && (i == 0 || h.builtin) {
				hit = h.who
				break
			}
		}
		if hit != "" {
			obj := c.Name
			if c.Source == SourcePlugin {
				obj = c.Plugin.String() + " " + string(c.Kind) + " " + c.Local
			}
			skips = append(skips, Skipped{Component: *c, Err: plugin.Errorf(plugin.LayerActive, TypeCollision, obj,
				"rename the component; builtins and higher sources keep their names",
				"%s %s %q is not loaded: it would shadow %s", c.Source, c.Kind, c.Name, hit)})
			continue
		}
		if c.Source != SourcePlugin {
			taken[string(c.Kind)+"\x00"+c.Name] = holder{c.Source + " " + string(c.Kind) + " " + c.Name, false}
		}
		kept = append(kept, cp)
	}
	slices.SortFunc(kept, cmpTotal)
	return kept, skips
}

func cmpTotal(a, b *Component) int {
	if c := cmpComponent(a, b); c != 0 {
		return c
	}
	return strings.Compare(a.sum, b.sum)
}

func defaultWorkers() int {
	n := runtime.GOMAXPROCS(0)
	if n < 1 {
		n = 1
	}
	return n
}
