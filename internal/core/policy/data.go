package policy

import (
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// The layers' merged settings become two things:
//
//   - data.wharf_index (buildIndex): the layers' names, for reasons;
//   - a Go index of the lists (factIndex), from which every evaluation gets
//     input.facts: which layers list (or fail to list) this request's
//     marketplace source, plugin, surface or marketplace name, and the
//     layers where a key is invalid or a flag is set. A lookup is a map
//     access whatever the list sizes.
//
// What a match means (allowlists intersect, blocklists union, the highest
// forced state wins, invalid values fail closed) is decided in Rego; see the
// layout at the top of rego/wharf.rego.

// buildIndex builds data.wharf_index: the layers' names.
func buildIndex(layers []compiledLayer) map[string]any {
	names := []any{}
	for _, cl := range layers {
		names = append(names, cl.Name)
	}
	return map[string]any{"names": names}
}

// layerFlags are the input.facts entries every request gets: the layers
// where a key is invalid or (for the last four) set. A flag no layer has is
// left out.
func layerFlags(layers []compiledLayer) [][2]*ast.Term {
	var out [][2]*ast.Term
	flag := func(k string, on func(cl compiledLayer) bool) {
		var l []int
		for i, cl := range layers {
			if on(cl) {
				l = append(l, i)
			}
		}
		if len(l) > 0 {
			out = append(out, ast.Item(ast.StringTerm(k), layerArray(l)))
		}
	}
	flag("strict_invalid", func(cl compiledLayer) bool { s, _ := effectiveLists(cl); return s.Invalid })
	flag("blocked_invalid", func(cl compiledLayer) bool { _, b := effectiveLists(cl); return b.Invalid })
	flag("signatures_invalid", func(cl compiledLayer) bool { return cl.Settings.RequireSignatures.Invalid || cl.Lockdown })
	flag("surfaces_all", func(cl compiledLayer) bool {
		surf := cl.Settings.StrictPluginOnlyCustomization
		return surf.All || surf.Invalid || cl.Lockdown
	})
	flag("managed_hooks_only", func(cl compiledLayer) bool { return cl.Settings.AllowManagedHooksOnly.On() || cl.Lockdown })
	flag("disable_sideload", func(cl compiledLayer) bool { return cl.Settings.DisableSideloadFlags.On() || cl.Lockdown })
	return out
}

// effectiveLists returns a layer's strictKnownMarketplaces and
// blockedMarketplaces. When a document of the layer could not be read at
// all, every restriction it might have held is assumed (fail closed).
func effectiveLists(cl compiledLayer) (strict, blocked settings.SourceList) {
	if cl.Lockdown {
		return settings.SourceList{Set: true, Invalid: true}, settings.SourceList{Set: true, Invalid: true}
	}
	return cl.Settings.StrictKnownMarketplaces, cl.Settings.BlockedMarketplaces
}

type patternEntry struct {
	layer   int
	pattern string
	re      *regexp.Regexp // nil when the pattern does not compile: it matches nothing
}

// factIndex holds every layer's lists indexed by what a request looks up.
// Lists of layer indexes are in layer order (highest first) without
// repeats.
type factIndex struct {
	flags                      [][2]*ast.Term          // layerFlags, in every request's facts
	githubHost                 string                  // where owner/repo requests are fetched from (WithGitHubHost)
	blockedRepo                map[string][]blockEntry // canonical RepoKey -> blocks, in layer order
	blockedLocal               map[string][]int        // blocked directory (resolved and as written) -> layers
	strictSet                  []int                   // layers whose strictKnownMarketplaces is set (and valid)
	crossSet                   []int                   // layers that set allowCrossMarketplaceDependenciesOn
	strictExact, strictOwner   map[string][]int
	blockedExact, blockedOwner map[string][]int
	strictHost, strictPath     []patternEntry
	blockedHost, blockedPath   []patternEntry
	enabled                    map[string][]*ast.Term // plugin id -> [[layer, true|false|"invalid"], ...]
	signatures                 map[string][]sigEntry  // marketplace -> entries in layer order
	surfacesLocked             map[string][]int       // surface -> layers that list it
	crossAllowed               map[string][]int       // marketplace -> layers that list it
	// bindings: marketplace name -> the source each layer's
	// extraKnownMarketplaces declares for it, in layer order; boundNames:
	// a declared source's key -> the names declared for it. Managed
	// enabledPlugins entries bind to these (see bind).
	bindings   map[string][]binding
	boundNames map[string][]string
	// origins: a layer's directory (cleaned) -> the first layer read
	// from it; nLayers: how many layers there are.
	origins map[string]int
	nLayers int
	// caps: the layers with capability keys (capdeny.go), in layer order.
	caps []layerCaps
}

type layerCaps struct {
	layer int
	rules *capabilityRules
}

// binding is one layer's extraKnownMarketplaces entry: the marketplace
// that layer means by a name.
type binding struct {
	layer   int
	key     string // the source's identity, as sourceFacets.key
	display string
}

type sigEntry struct {
	layer   int
	keys    map[string]bool
	keySet  *ast.Term // the keys as a Rego set, for messages
	invalid bool
}

func addLayer(m map[string][]int, key string, i int) {
	l := m[key]
	if n := len(l); n > 0 && l[n-1] == i {
		return
	}
	m[key] = append(l, i)
}

func compilePattern(layer int, p string) patternEntry {
	re, err := regexp.Compile(p)
	if err != nil {
		re = nil
	}
	return patternEntry{layer: layer, pattern: p, re: re}
}

func buildFacts(layers []compiledLayer, githubHost string) *factIndex {
	x := &factIndex{
		strictExact: map[string][]int{}, strictOwner: map[string][]int{},
		blockedExact: map[string][]int{}, blockedOwner: map[string][]int{},
		enabled: map[string][]*ast.Term{}, signatures: map[string][]sigEntry{},
		surfacesLocked: map[string][]int{}, crossAllowed: map[string][]int{},
		flags:       layerFlags(layers),
		githubHost:  githubHost,
		blockedRepo: map[string][]blockEntry{}, blockedLocal: map[string][]int{},
		bindings: map[string][]binding{}, boundNames: map[string][]string{},
		origins: map[string]int{}, nLayers: len(layers),
	}
	for i := range layers {
		if !layers[i].Caps.empty() {
			x.caps = append(x.caps, layerCaps{layer: i, rules: &layers[i].Caps})
		}
	}
	for i, cl := range layers {
		if o := filepath.Clean(cl.Origin); cl.Origin != "" {
			if _, ok := x.origins[o]; !ok {
				x.origins[o] = i
			}
		}
		s := cl.Settings
		strict, blocked := effectiveLists(cl)
		if strict.Set && !strict.Invalid {
			x.strictSet = append(x.strictSet, i)
		}
		if s.AllowCrossMarketplaceDependenciesOn.Set {
			x.crossSet = append(x.crossSet, i)
		}
		for _, e := range strict.Entries {
			switch e.Pattern {
			case settings.PatternOwner:
				for _, h := range x.ownerHosts(layerGitHubHost(cl), false) {
					addLayer(x.strictOwner, h+"/"+e.RepoOwnerWildcard(), i)
				}
			case settings.PatternHost:
				x.strictHost = append(x.strictHost, compilePattern(i, e.HostPattern))
			case settings.PatternPath:
				x.strictPath = append(x.strictPath, compilePattern(i, e.PathPattern))
			default:
				x.addStrict(e, i, layerGitHubHost(cl))
			}
		}
		for _, e := range blocked.Entries {
			switch e.Pattern {
			case settings.PatternOwner:
				for _, h := range x.ownerHosts(layerGitHubHost(cl), true) {
					addLayer(x.blockedOwner, h+"/"+e.RepoOwnerWildcard(), i)
				}
			case settings.PatternHost:
				x.blockedHost = append(x.blockedHost, compilePattern(i, e.HostPattern))
			case settings.PatternPath:
				x.blockedPath = append(x.blockedPath, compilePattern(i, e.PathPattern))
			default:
				x.addBlocked(e, i, layerGitHubHost(cl))
			}
		}
		ids := make([]string, 0, len(s.EnabledPlugins)+len(s.EnabledInvalid))
		vals := map[string]*ast.Term{}
		for id, v := range s.EnabledPlugins {
			ids = append(ids, id.String())
			vals[id.String()] = ast.BooleanTerm(v)
		}
		sort.Strings(ids)
		for _, id := range ids {
			x.enabled[id] = append(x.enabled[id], ast.ArrayTerm(ast.IntNumberTerm(i), vals[id]))
		}
		for _, id := range s.EnabledInvalid {
			x.enabled[id.String()] = append(x.enabled[id.String()], ast.ArrayTerm(ast.IntNumberTerm(i), ast.StringTerm("invalid")))
		}
		sig := s.RequireSignatures
		mkts := make([]string, 0, len(sig.Keys))
		for mkt := range sig.Keys {
			mkts = append(mkts, mkt)
		}
		sort.Strings(mkts)
		for _, mkt := range mkts {
			e := sigEntry{layer: i, keys: map[string]bool{}}
			set := ast.NewSet()
			for _, k := range sig.Keys[mkt] {
				e.keys[k] = true
				set.Add(ast.StringTerm(k))
				// An old-form signature satisfies this layer only for the
				// keys this same layer opts in: a lower layer's opt-in
				// cannot loosen a higher layer's requirement.
				if legacy := s.LegacySignatureKeys; !legacy.Invalid {
					for _, l := range legacy.Keys {
						if l == k || strings.HasPrefix(l, k) && len(k) == 16 {
							e.keys[LegacySignature(l)] = true
						}
					}
				}
			}
			e.keySet = ast.NewTerm(set)
			x.signatures[mkt] = append(x.signatures[mkt], e)
		}
		for _, mkt := range sig.InvalidMarketplaces {
			x.signatures[mkt] = append(x.signatures[mkt], sigEntry{layer: i, keySet: ast.SetTerm(), invalid: true})
		}
		for _, sf := range s.StrictPluginOnlyCustomization.List {
			addLayer(x.surfacesLocked, string(sf), i)
		}
		for _, n := range s.AllowCrossMarketplaceDependenciesOn.Names {
			addLayer(x.crossAllowed, n, i)
		}
		names := make([]string, 0, len(s.ExtraKnownMarketplaces))
		for n := range s.ExtraKnownMarketplaces {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			src := s.ExtraKnownMarketplaces[n].Source
			key := entryKey(src, layerGitHubHost(cl))
			x.bindings[n] = append(x.bindings[n], binding{layer: i, key: key, display: displaySource(src)})
			if !slices.Contains(x.boundNames[key], n) {
				x.boundNames[key] = append(x.boundNames[key], n)
			}
		}
	}
	return x
}

// entryKey is the identity of a layer's marketplace source: its canonical
// key, as strictKnownMarketplaces compares a request's source with an
// entry (sourceFacets.key on the request side). A github entry means the
// declaring layer's GitHub host (layerGitHubHost), never the user's.
func entryKey(e plugin.MarketplaceSource, layerHost string) string {
	if c, ok := canonicalOf(&e, layerHost); ok {
		return c.Key()
	}
	return settings.SourceKey(e)
}

// bind applies the layers' marketplace declarations (extraKnownMarketplaces)
// to the enabledPlugins entries l of the request's plugin p@m. A
// marketplace is its source, not its local name: the name m stands for the
// marketplace the layers declare under it, so
//
//   - when the request names m's source (or asks to install, enable or
//     load, which always name it when it is known) and that source is not
//     the one every declaring layer names, the declaring layers are
//     returned as unbound (the request is refused) and l keeps only its
//     forced-off entries: a marketplace that took a declared name gets
//     neither forced-on nor managed-hook status;
//   - when the request names a source that a layer declares under another
//     name n, the forced-off entries of p@n apply too: forcing a plugin
//     off cannot be escaped by adding its marketplace under a new name.
//
// A request about a plugin that names no source (disable, uninstall, a
// hook or component without its marketplace) is decided by name.
func (x *factIndex) bind(r *Request, f *requestFacets, l []*ast.Term) ([]*ast.Term, []*ast.Term) {
	src := &f.src
	var unbound []*ast.Term
	check := src.known || r.Action == ActionInstall || r.Action == ActionEnable || r.Action == ActionLoad
	if bs := x.bindings[f.pluginMkt]; len(bs) > 0 && check {
		for _, b := range bs {
			if !src.known || src.key != b.key {
				unbound = append(unbound, ast.ArrayTerm(ast.InternedTerm(b.layer), ast.StringTerm(b.display)))
			}
		}
		if len(unbound) > 0 {
			l = forcedOff(l, nil)
		}
	}
	if src.known {
		extra := false
		for _, n := range x.boundNames[src.key] {
			if n == f.pluginMkt {
				continue
			}
			id := r.Plugin.Name + "@" + n
			for _, e := range forcedOff(x.enabled[id], nil) {
				if !extra {
					l = slices.Clone(l)
					extra = true
				}
				// [layer, value, the id the layer names]
				a := e.Value.(*ast.Array)
				l = append(l, ast.ArrayTerm(a.Elem(0), a.Elem(1), ast.StringTerm(id)))
			}
		}
		if extra {
			// Highest layer first, as the built-in module reads them.
			sort.SliceStable(l, func(i, j int) bool { return entryLayer(l[i]) < entryLayer(l[j]) })
		}
	}
	return l, unbound
}

// managedLayer is the layer a managed component's settings belong to:
// the layer read from r.ManagedDir, 0 when the request names no directory
// (the highest managed layer), and past the last layer when no layer was
// read from it (it then counts as managed for no layer).
func (x *factIndex) managedLayer(r *Request) int {
	if r.From != FromManaged || r.ManagedDir == "" {
		return 0
	}
	if i, ok := x.origins[filepath.Clean(r.ManagedDir)]; ok {
		return i
	}
	return x.nLayers
}

// forcedOff appends to out the entries of l that force the plugin off
// (false, or an invalid value).
func forcedOff(l, out []*ast.Term) []*ast.Term {
	for _, e := range l {
		if v := e.Value.(*ast.Array).Elem(1).Value; v.Compare(ast.Boolean(true)) != 0 {
			out = append(out, e)
		}
	}
	return out
}

// entryLayer is the layer of an enabledPlugins entry [layer, value].
func entryLayer(e *ast.Term) int {
	n, _ := e.Value.(*ast.Array).Elem(0).Value.(ast.Number).Int()
	return n
}

// facts computes input.facts for one request: only what the request's
// action reads, and only keys that are not empty (see the layout at the top
// of rego/wharf.rego).
//
//	strict_unlisted [layer, ...] whose strictKnownMarketplaces is set and
//	                does not list the source; every such layer when the
//	                source is unknown
//	blocked_by      [[layer, "exact"|"owner"|"host"|"path", pattern], ...]
//	enabled         [[layer, true|false|"invalid"], ...] for the plugin;
//	                [layer, false|"invalid", "name@other"] when the layer
//	                forces it off under another name declared for the
//	                request's source (see bind)
//	signatures      [[layer, {keyid, ...}, invalid, signed, marketplace],
//	                ...] for the plugin's marketplace, and for the names
//	                its source is declared as; signed: a verified key is
//	                listed (never for an invalid entry)
//	surface_listing [layer, ...] whose strictPluginOnlyCustomization lists
//	                the surface (hooks for run_hook)
//	strict_invalid, blocked_invalid, signatures_invalid, surfaces_all,
//	managed_hooks_only, disable_sideload
//	                the same for every request: see layerFlags
//	unbound         [[layer, declared source], ...] whose
//	                extraKnownMarketplaces declares the plugin's
//	                marketplace name for another source than the
//	                request's (see bind); enabled then keeps only
//	                forced-off entries
//	managed_layer   for a component from managed settings
//	                (load_component, run_hook) of a layer below the
//	                highest: that layer's index (see managedLayer)
//	capabilities_invalid
//	                for install and load: [[layer, field], ...] whose
//	                deniedCapabilities cannot be read (every plugin is
//	                refused)
//	capabilities_denied
//	                for install and load with the plugin's content:
//	                [[layer, rule, message], ...], one per capability or
//	                finding a layer's deniedCapabilities,
//	                requireDeclaredHosts or deniedFindings denies
//	cross           for a dependency on another marketplace's plugin:
//	                {"unlisted": [layer, ...] whose
//	                allowCrossMarketplaceDependenciesOn is set and does not
//	                list the plugin's marketplace}
func (x *factIndex) facts(r *Request, f *requestFacets) *ast.Term {
	var buf [12][2]*ast.Term
	items := append(buf[:0], x.flags...)
	add := func(k, v *ast.Term) { items = append(items, ast.Item(k, v)) }
	src := &f.src
	switch r.Action {
	case ActionAddMarketplace, ActionUpdateMarketplace, ActionInstall, ActionEnable, ActionLoad:
		if len(x.strictSet) > 0 {
			var listed uint64 // bit i: layer i lists the source (layers < 64)
			var listedBig map[int]bool
			mark := func(i int) {
				if i < 64 {
					listed |= 1 << uint(i)
					return
				}
				if listedBig == nil {
					listedBig = map[int]bool{}
				}
				listedBig[i] = true
			}
			if src.known {
				// An unknown source cannot be listed.
				for _, i := range x.strictExact[src.key] {
					mark(i)
				}
				for _, i := range x.strictOwner[src.ownerKey] {
					mark(i)
				}
			}
			if src.host != "" {
				for _, p := range x.strictHost {
					if p.re != nil && p.re.MatchString(src.host) {
						mark(p.layer)
					}
				}
			}
			if src.path != "" {
				for _, p := range x.strictPath {
					if p.re != nil && p.re.MatchString(src.path) {
						mark(p.layer)
					}
				}
			}
			var unlisted []int
			for _, i := range x.strictSet {
				if i < 64 && listed&(1<<uint(i)) == 0 || i >= 64 && !listedBig[i] {
					unlisted = append(unlisted, i)
				}
			}
			if len(unlisted) > 0 {
				add(keyStrictUnlisted, layerArray(unlisted))
			}
		}
		if b := x.blockedBy(src); b != nil {
			add(keyBlockedBy, b)
		}
	case ActionSideload, ActionFetchSource:
		// Content that arrives without a marketplace add: blocklists
		// apply to it as to a marketplace.
		if b := x.blockedBy(src); b != nil {
			add(keyBlockedBy, b)
		}
	case ActionLoadComponent:
		if l := x.surfacesLocked[string(r.Surface)]; len(l) > 0 {
			add(keySurfaceListing, layerArray(l))
		}
		if i := x.managedLayer(r); i > 0 {
			add(keyManagedLayer, ast.InternedTerm(i))
		}
	case ActionRunHook:
		if l := x.surfacesLocked[string(settings.SurfaceHooks)]; len(l) > 0 {
			add(keySurfaceListing, layerArray(l))
		}
		if i := x.managedLayer(r); i > 0 {
			add(keyManagedLayer, ast.InternedTerm(i))
		}
	}
	if r.Action == ActionInstall {
		var sigs []*ast.Term
		need := func(mkt string, entries []sigEntry) {
			for _, e := range entries {
				signed := false // an invalid entry is never satisfied
				for _, k := range r.Signatures {
					if e.keys[k] {
						signed = true
						break
					}
				}
				sigs = append(sigs, ast.ArrayTerm(ast.InternedTerm(e.layer), e.keySet, ast.InternedTerm(e.invalid), ast.InternedTerm(signed), strTerm(mkt)))
			}
		}
		need(f.pluginMkt, x.signatures[f.pluginMkt])
		if src.known {
			// Like forcing off, requiring signatures follows the source:
			// a marketplace declared as n needs n's signatures under
			// any name it is added as.
			for _, n := range x.boundNames[src.key] {
				if n != f.pluginMkt {
					need(n, x.signatures[n])
				}
			}
		}
		if len(sigs) > 0 {
			add(keySignatures, ast.ArrayTerm(sigs...))
		}
	}
	if (r.Action == ActionInstall || r.Action == ActionCrossDependency) && f.requiredByMkt != "" && f.requiredByMkt != f.pluginMkt {
		var unlisted []int
		allowed := x.crossAllowed[f.pluginMkt]
		for _, i := range x.crossSet {
			if !slices.Contains(allowed, i) {
				unlisted = append(unlisted, i)
			}
		}
		cross := emptyObject
		if len(unlisted) > 0 {
			cross = ast.NewTerm(ast.NewObject(ast.Item(keyUnlisted, layerArray(unlisted))))
		}
		add(keyCross, cross)
	}
	if (r.Action == ActionInstall || r.Action == ActionLoad) && len(x.caps) > 0 {
		var invalid, denied []*ast.Term
		for _, lc := range x.caps {
			if lc.rules.invalid {
				invalid = append(invalid, ast.ArrayTerm(ast.InternedTerm(lc.layer), ast.StringTerm(lc.rules.invalidWhy)))
				continue
			}
			if r.Content == nil {
				continue
			}
			for _, h := range lc.rules.hits(f.plugin, r.Content) {
				denied = append(denied, ast.ArrayTerm(ast.InternedTerm(lc.layer), ast.StringTerm(h.rule), ast.StringTerm(h.message)))
			}
		}
		if len(invalid) > 0 {
			add(keyCapsInvalid, ast.ArrayTerm(invalid...))
		}
		if len(denied) > 0 {
			add(keyCapsDenied, ast.ArrayTerm(denied...))
		}
	}
	if f.plugin != "" {
		l := x.enabled[f.plugin]
		if len(x.bindings) > 0 {
			var unbound []*ast.Term
			l, unbound = x.bind(r, f, l)
			if len(unbound) > 0 {
				add(keyUnbound, ast.ArrayTerm(unbound...))
			}
		}
		if len(l) > 0 {
			add(keyEnabled, ast.ArrayTerm(l...))
		}
	}
	if len(items) == 0 {
		return emptyObject
	}
	return ast.NewTerm(ast.NewObject(items...))
}

// blockedBy is input.facts.blocked_by of a source: every layer's
// blockedMarketplaces entry that names or covers it; nil for none.
func (x *factIndex) blockedBy(src *sourceFacets) *ast.Term {
	var blocked []*ast.Term
	hit := func(layer int, kind, pattern string) {
		blocked = append(blocked, ast.ArrayTerm(ast.InternedTerm(layer), strTerm(kind), strTerm(pattern)))
	}
	x.blockedHits(src, func(i int) { hit(i, "exact", "") })
	for _, i := range x.blockedOwner[src.ownerKey] {
		hit(i, "owner", "")
	}
	if src.host != "" {
		for _, p := range x.blockedHost {
			if p.re != nil && p.re.MatchString(src.host) {
				hit(p.layer, "host", p.pattern)
			}
		}
	}
	if src.path != "" || src.lexPath != "" {
		for _, p := range x.blockedPath {
			if p.re != nil && (src.path != "" && p.re.MatchString(src.path) || src.lexPath != "" && p.re.MatchString(src.lexPath)) {
				hit(p.layer, "path", p.pattern)
			}
		}
	}
	if len(blocked) == 0 {
		return nil
	}
	return ast.ArrayTerm(blocked...)
}

func layerArray(l []int) *ast.Term {
	ts := make([]*ast.Term, len(l))
	for i, n := range l {
		ts[i] = ast.InternedTerm(n)
	}
	return ast.ArrayTerm(ts...)
}

var (
	keyStrictUnlisted = ast.StringTerm("strict_unlisted")
	keyCross          = ast.StringTerm("cross")
	keyUnlisted       = ast.StringTerm("unlisted")
	keyBlockedBy      = ast.StringTerm("blocked_by")
	keySurfaceListing = ast.StringTerm("surface_listing")
	keySignatures     = ast.StringTerm("signatures")
	keyEnabled        = ast.StringTerm("enabled")
	keyUnbound        = ast.StringTerm("unbound")
	keyManagedLayer   = ast.StringTerm("managed_layer")
	keyCapsInvalid    = ast.StringTerm("capabilities_invalid")
	keyCapsDenied     = ast.StringTerm("capabilities_denied")
)
