package settings

import (
	"regexp"
	"sort"
)

// LayerMerge is the merge of managed policy layers (see MergeLayers).
type LayerMerge struct {
	// Settings is the effective policy. Its restrictions are the layers'
	// combined, and extraKnownMarketplaces the names they agree on; other
	// keys that are not restrictions (hooks, mcpServers, unknown keys) are
	// left empty.
	*Settings
	// StrictLayers is how many layers set strictKnownMarketplaces.
	StrictLayers int
	// SignatureOverlaps names, once per further layer, each marketplace
	// whose requireSignatures keys more than one layer sets.
	SignatureOverlaps []string
	// BindingConflicts names the marketplaces that layers declare
	// (extraKnownMarketplaces) for different sources: no source is that
	// marketplace, so policy refuses every plugin under the name.
	BindingConflicts []string
}

// MergeLayers merges managed policy layers, given highest first, each
// already merged from its own documents by Merge. Across layers a lower
// layer can only tighten what a higher one allows, so the rules differ from
// Merge's (where the highest document owns an allowlist) except where they
// are Merge's own:
//
//   - enabledPlugins: the highest layer naming a plugin wins (Merge's rule);
//   - blockedMarketplaces: the union, highest layer first (Merge's rule);
//   - strictKnownMarketplaces: the entries every layer that sets it allows
//     (see SourceList.Covers); an invalid list anywhere allows nothing
//     (Invalid, no entries);
//   - strictPluginOnlyCustomization: the union of locked surfaces, or All
//     when any layer locks all or is invalid;
//   - allowCrossMarketplaceDependenciesOn: the names every layer that sets
//     it lists, sorted;
//   - allowManagedHooksOnly, disableSideloadFlags: on when any layer's is;
//   - requireSignatures: per marketplace, the keys every layer naming it
//     accepts; a marketplace whose list is invalid in a layer accepts none;
//     Invalid when any layer's is.
//   - extraKnownMarketplaces: a name every layer that declares it declares
//     for one source (Key) keeps that source; a name declared for
//     different sources is left out and listed in BindingConflicts.
//
// These are the rules the policy's Rego applies request by request, for
// whatever needs the whole effective policy at once (wharf policy export).
func MergeLayers(layers []*Settings) LayerMerge {
	m := LayerMerge{Settings: &Settings{}}
	for i := len(layers) - 1; i >= 0; i-- {
		m.mergeEnabled(layers[i])
	}
	var strict []SourceList
	sigs := map[string][]string{}
	for _, s := range layers {
		if s.BlockedMarketplaces.Set {
			m.BlockedMarketplaces.unite(s.BlockedMarketplaces)
		}
		if s.StrictKnownMarketplaces.Set {
			strict = append(strict, s.StrictKnownMarketplaces)
		}
		m.StrictPluginOnlyCustomization.tighten(s.StrictPluginOnlyCustomization)
		m.AllowCrossMarketplaceDependenciesOn.intersect(s.AllowCrossMarketplaceDependenciesOn)
		m.AllowManagedHooksOnly.tighten(s.AllowManagedHooksOnly)
		m.DisableSideloadFlags.tighten(s.DisableSideloadFlags)
		m.SignatureOverlaps = append(m.SignatureOverlaps, m.RequireSignatures.intersect(s.RequireSignatures, sigs)...)
	}
	if len(sigs) > 0 {
		m.RequireSignatures.Keys = sigs
	}
	m.mergeBindings(layers)
	m.StrictLayers = len(strict)
	if len(strict) > 0 {
		m.StrictKnownMarketplaces = intersectSources(strict)
	}
	sort.Strings(m.AllowCrossMarketplaceDependenciesOn.Names)
	// The locked surfaces in the order of Surfaces.
	if l := &m.StrictPluginOnlyCustomization; l.Set {
		var list []Surface
		for _, x := range Surfaces {
			if containsSurface(l.List, x) {
				list = append(list, x)
			}
		}
		l.List = list
	}
	return m
}

// mergeBindings keeps each extraKnownMarketplaces name that the layers
// declaring it agree on (the highest layer's entry).
func (m *LayerMerge) mergeBindings(layers []*Settings) {
	conflict := map[string]bool{}
	for _, s := range layers {
		for name, km := range s.ExtraKnownMarketplaces {
			prev, ok := m.ExtraKnownMarketplaces[name]
			switch {
			case conflict[name]:
			case !ok:
				if m.ExtraKnownMarketplaces == nil {
					m.ExtraKnownMarketplaces = map[string]KnownMarketplace{}
				}
				m.ExtraKnownMarketplaces[name] = km
			case SourceKey(prev.Source) != SourceKey(km.Source):
				conflict[name] = true
				delete(m.ExtraKnownMarketplaces, name)
				m.BindingConflicts = append(m.BindingConflicts, name)
			}
		}
	}
	sort.Strings(m.BindingConflicts)
}

// tighten adds the surfaces o locks to l.
func (l *SurfaceLock) tighten(o SurfaceLock) {
	if !o.Set {
		return
	}
	l.Set = true
	l.All = l.All || o.All || o.Invalid
	for _, x := range o.List {
		if !containsSurface(l.List, x) {
			l.List = append(l.List, x)
		}
	}
}

// tighten turns f on when o is on.
func (f *Flag) tighten(o Flag) {
	if o.On() {
		*f = Flag{Set: true, Value: true}
	}
}

// intersect keeps the names of l that o lists too; the first list set is
// taken whole.
func (l *NameList) intersect(o NameList) {
	if !o.Set {
		return
	}
	l.Invalid = l.Invalid || o.Invalid
	if !l.Set {
		l.Set, l.Names = true, append([]string{}, o.Names...)
		return
	}
	l.Names = intersectStrings(l.Names, o.Names)
}

// intersect merges o into the keys accepted so far (sigs) and returns the
// marketplaces whose keys were already set by a higher layer.
func (g *Signatures) intersect(o Signatures, sigs map[string][]string) (overlaps []string) {
	g.Set = g.Set || o.Set
	g.Invalid = g.Invalid || o.Invalid
	for mkt, keys := range o.Keys {
		if prev, ok := sigs[mkt]; ok {
			// Both layers must be satisfied; one list can only say "one
			// of", so keep the keys both accept.
			sigs[mkt] = intersectStrings(prev, keys)
			overlaps = append(overlaps, mkt)
			continue
		}
		sigs[mkt] = append([]string{}, keys...)
	}
	for _, mkt := range o.InvalidMarketplaces {
		sigs[mkt] = []string{}
	}
	return overlaps
}

// intersectStrings is the elements of a that b holds, in a's order; never nil.
func intersectStrings(a, b []string) []string {
	out := []string{}
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
			}
		}
	}
	return out
}

// intersectSources is the entries every list allows. The exact
// intersection of lists with patterns is not a list, so it keeps the entries
// of each list that every other list covers: never wider than any list,
// possibly narrower. An invalid list allows nothing.
func intersectSources(lists []SourceList) SourceList {
	out := SourceList{Set: true}
	for _, l := range lists {
		if l.Invalid {
			out.Invalid = true
			return out
		}
	}
	for i, l := range lists {
		for _, cand := range l.Entries {
			if i > 0 && containsSource(out.Entries, cand) {
				continue
			}
			ok := true
			for j, other := range lists {
				if j != i && !other.Covers(cand) {
					ok = false
					break
				}
			}
			if ok {
				out.Entries = append(out.Entries, cand)
			}
		}
	}
	return out
}

// Covers reports whether every source that entry e matches is also allowed
// by l (conservatively: false when unsure). A pattern is covered only by
// the same pattern.
func (l SourceList) Covers(e PolicySource) bool {
	if l.Invalid {
		return false
	}
	for _, o := range l.Entries {
		if o.Key() == e.Key() {
			return true
		}
		if e.IsPattern() {
			continue
		}
		switch o.Pattern {
		case PatternOwner:
			if e.RepoOwner() != "" && e.RepoOwner() == o.RepoOwnerWildcard() {
				return true
			}
		case PatternHost:
			if h := e.Host(); h != "" && matchRE(o.HostPattern, h) {
				return true
			}
		case PatternPath:
			if p := e.LocalPath(); p != "" && matchRE(o.PathPattern, p) {
				return true
			}
		}
	}
	return false
}

// matchRE matches like Rego's regex.match (RE2, unanchored). Patterns were
// validated when the settings were parsed.
func matchRE(pattern, s string) bool {
	re, err := regexp.Compile(pattern)
	return err == nil && re.MatchString(s)
}

func containsSource(l []PolicySource, e PolicySource) bool {
	for _, x := range l {
		if x.Key() == e.Key() {
			return true
		}
	}
	return false
}
