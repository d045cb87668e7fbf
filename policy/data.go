package policy

import (
	"regexp"
	"sort"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/wharfhq/wharf/settings"
)

// The layers' merged settings become two things:
//
//   - data.wharf_index (buildIndex): per-layer flags, a handful of layer
//     indexes per key, which the Rego module reads directly;
//   - a Go index of the big lists (factIndex), from which every evaluation
//     gets input.facts: which layers list this request's marketplace source,
//     plugin, surface or marketplace name. A lookup is a map access whatever
//     the list sizes.
//
// What a match means (allowlists intersect, blocklists union, the highest
// forced state wins, invalid values fail closed) is decided in Rego; see the
// layout at the top of rego/wharf.rego.

// buildIndex builds data.wharf_index.
func buildIndex(layers []compiledLayer) map[string]any {
	idx := map[string]any{}
	names := []any{}
	lists := map[string][]any{}
	for _, k := range []string{"strict_set", "strict_invalid", "blocked_invalid", "surfaces_all", "cross_set",
		"managed_hooks_only", "disable_sideload", "signatures_invalid"} {
		lists[k] = []any{}
	}
	flag := func(k string, on bool, i int) {
		if on {
			lists[k] = append(lists[k], i)
		}
	}
	for i, cl := range layers {
		s := cl.Settings
		names = append(names, cl.Name)
		strict, blocked := effectiveLists(cl)
		flag("strict_invalid", strict.Invalid, i)
		flag("strict_set", strict.Set && !strict.Invalid, i)
		flag("blocked_invalid", blocked.Invalid, i)
		flag("signatures_invalid", s.RequireSignatures.Invalid || cl.Lockdown, i)
		surf := s.StrictPluginOnlyCustomization
		flag("surfaces_all", surf.All || surf.Invalid || cl.Lockdown, i)
		flag("cross_set", s.AllowCrossMarketplaceDependenciesOn.Set, i)
		flag("managed_hooks_only", s.AllowManagedHooksOnly.On() || cl.Lockdown, i)
		flag("disable_sideload", s.DisableSideloadFlags.On() || cl.Lockdown, i)
	}
	idx["names"] = names
	for k, v := range lists {
		idx[k] = v
	}
	return idx
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
	strictExact, strictOwner   map[string][]int
	blockedExact, blockedOwner map[string][]int
	strictHost, strictPath     []patternEntry
	blockedHost, blockedPath   []patternEntry
	enabled                    map[string][]*ast.Term // plugin id -> [[layer, true|false|"invalid"], ...]
	signatures                 map[string][]sigEntry  // marketplace -> entries in layer order
	surfacesLocked             map[string][]int       // surface -> layers that list it
	crossAllowed               map[string][]int       // marketplace -> layers that list it
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

func buildFacts(layers []compiledLayer) *factIndex {
	x := &factIndex{
		strictExact: map[string][]int{}, strictOwner: map[string][]int{},
		blockedExact: map[string][]int{}, blockedOwner: map[string][]int{},
		enabled: map[string][]*ast.Term{}, signatures: map[string][]sigEntry{},
		surfacesLocked: map[string][]int{}, crossAllowed: map[string][]int{},
	}
	for i, cl := range layers {
		s := cl.Settings
		strict, blocked := effectiveLists(cl)
		for _, e := range strict.Entries {
			switch e.Source {
			case settings.KindOwnerWildcard:
				addLayer(x.strictOwner, e.RepoOwnerWildcard(), i)
			case settings.KindHostPattern:
				x.strictHost = append(x.strictHost, compilePattern(i, e.HostPattern))
			case settings.KindPathPattern:
				x.strictPath = append(x.strictPath, compilePattern(i, e.PathPattern))
			default:
				addLayer(x.strictExact, e.Key(), i)
			}
		}
		for _, e := range blocked.Entries {
			switch e.Source {
			case settings.KindOwnerWildcard:
				addLayer(x.blockedOwner, e.RepoOwnerWildcard(), i)
			case settings.KindHostPattern:
				x.blockedHost = append(x.blockedHost, compilePattern(i, e.HostPattern))
			case settings.KindPathPattern:
				x.blockedPath = append(x.blockedPath, compilePattern(i, e.PathPattern))
			default:
				addLayer(x.blockedExact, e.Key(), i)
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
	}
	return x
}

// facts computes input.facts for one request: only what the request's
// action reads.
//
//	strict_listing  [layer, ...] whose strictKnownMarketplaces lists the
//	                source; empty when the source is unknown
//	blocked_by      [[layer, "exact"|"owner"|"host"|"path", pattern], ...]
//	enabled         [[layer, true|false|"invalid"], ...] for the plugin
//	signatures      [[layer, {keyid, ...}, invalid, signed], ...] for the
//	                plugin's marketplace; signed: a verified key is listed
//	                (never for an invalid entry)
//	surface_listing [layer, ...] whose strictPluginOnlyCustomization lists
//	                the surface (hooks for run_hook)
//	cross_listing   [layer, ...] whose allowCrossMarketplaceDependenciesOn
//	                lists the plugin's marketplace
func (x *factIndex) facts(r *Request, pluginStr, pluginMkt string, src *sourceFacets) *ast.Term {
	items := make([][2]*ast.Term, 0, 5)
	add := func(k, v *ast.Term) { items = append(items, ast.Item(k, v)) }
	switch r.Action {
	case ActionAddMarketplace, ActionUpdateMarketplace, ActionInstall, ActionEnable, ActionLoad:
		var listing []int
		if src.known {
			// An unknown source cannot be listed.
			// The full slice expression makes any append copy: the index
			// is shared by every evaluation.
			exact := x.strictExact[src.key]
			listing = append(exact[:len(exact):len(exact)], x.strictOwner[src.owner]...)
		}
		if src.host != "" {
			for _, p := range x.strictHost {
				if p.re != nil && p.re.MatchString(src.host) {
					listing = append(listing, p.layer)
				}
			}
		}
		if src.path != "" {
			for _, p := range x.strictPath {
				if p.re != nil && p.re.MatchString(src.path) {
					listing = append(listing, p.layer)
				}
			}
		}
		add(keyStrictListing, layerArray(listing))
		var blocked []*ast.Term
		hit := func(layer int, kind, pattern string) {
			blocked = append(blocked, ast.ArrayTerm(ast.IntNumberTerm(layer), ast.StringTerm(kind), ast.StringTerm(pattern)))
		}
		for _, i := range x.blockedExact[src.key] {
			hit(i, "exact", "")
		}
		for _, i := range x.blockedOwner[src.owner] {
			hit(i, "owner", "")
		}
		if src.host != "" {
			for _, p := range x.blockedHost {
				if p.re != nil && p.re.MatchString(src.host) {
					hit(p.layer, "host", p.pattern)
				}
			}
		}
		if src.path != "" {
			for _, p := range x.blockedPath {
				if p.re != nil && p.re.MatchString(src.path) {
					hit(p.layer, "path", p.pattern)
				}
			}
		}
		add(keyBlockedBy, termArray(blocked))
	case ActionLoadComponent:
		add(keySurfaceListing, layerArray(x.surfacesLocked[string(r.Surface)]))
	case ActionRunHook:
		add(keySurfaceListing, layerArray(x.surfacesLocked[string(settings.SurfaceHooks)]))
	}
	if r.Action == ActionInstall {
		var sigs []*ast.Term
		for _, e := range x.signatures[pluginMkt] {
			signed := false // an invalid entry is never satisfied
			for _, k := range r.Signatures {
				if e.keys[k] {
					signed = true
					break
				}
			}
			sigs = append(sigs, ast.ArrayTerm(ast.IntNumberTerm(e.layer), e.keySet, ast.BooleanTerm(e.invalid), ast.BooleanTerm(signed)))
		}
		add(keySignatures, termArray(sigs))
	}
	if r.Action == ActionInstall || r.Action == ActionCrossDependency {
		add(keyCrossListing, layerArray(x.crossAllowed[pluginMkt]))
	}
	if pluginStr != "" {
		add(keyEnabled, termArray(x.enabled[pluginStr]))
	}
	return ast.NewTerm(ast.NewObject(items...))
}

func layerArray(l []int) *ast.Term {
	if len(l) == 0 {
		return emptyArray
	}
	ts := make([]*ast.Term, len(l))
	for i, n := range l {
		ts[i] = ast.IntNumberTerm(n)
	}
	return ast.ArrayTerm(ts...)
}

var emptyArray = ast.ArrayTerm()

func termArray(ts []*ast.Term) *ast.Term {
	if len(ts) == 0 {
		return emptyArray
	}
	return ast.ArrayTerm(ts...)
}

var (
	keyStrictListing  = ast.StringTerm("strict_listing")
	keyBlockedBy      = ast.StringTerm("blocked_by")
	keySurfaceListing = ast.StringTerm("surface_listing")
	keySignatures     = ast.StringTerm("signatures")
	keyCrossListing   = ast.StringTerm("cross_listing")
	keyEnabled        = ast.StringTerm("enabled")
)
