package policy

import (
	"github.com/wharfhq/wharf/settings"
)

// layerData is the index of one layer that the Rego module reads as
// data.wharf.layers[i]. Go does the parsing and canonicalizing (source keys,
// owners, sets for O(1) lookups); every decision is made in Rego.
func layerData(index int, name string, s *settings.Settings, lockdown bool) map[string]any {
	enabled := map[string]any{}
	for id, v := range s.EnabledPlugins {
		enabled[id.String()] = v
	}
	enabledInvalid := map[string]any{}
	for _, id := range s.EnabledInvalid {
		enabledInvalid[id.String()] = true
	}
	surf := s.StrictPluginOnlyCustomization
	locked := map[string]any{}
	for _, x := range surf.List {
		locked[string(x)] = true
	}
	cross := s.AllowCrossMarketplaceDependenciesOn
	crossAllowed := map[string]any{}
	for _, n := range cross.Names {
		crossAllowed[n] = true
	}
	sig := s.RequireSignatures
	keys := map[string]any{}
	for mkt, ks := range sig.Keys {
		set := map[string]any{}
		for _, k := range ks {
			set[k] = true
		}
		keys[mkt] = set
	}
	invalidMarkets := map[string]any{}
	for _, m := range sig.InvalidMarketplaces {
		invalidMarkets[m] = true
		keys[m] = map[string]any{}
	}
	d := map[string]any{
		"name":            name,
		"index":           index,
		"strict":          sourceIndex(s.StrictKnownMarketplaces),
		"blocked":         sourceIndex(s.BlockedMarketplaces),
		"enabled":         enabled,
		"enabled_invalid": enabledInvalid,
		"surfaces": map[string]any{
			"set": surf.Set, "all": surf.All || surf.Invalid, "locked": locked,
		},
		"cross": map[string]any{
			"set": cross.Set, "invalid": cross.Invalid, "allowed": crossAllowed,
		},
		"managed_hooks_only": s.AllowManagedHooksOnly.On(),
		"disable_sideload":   s.DisableSideloadFlags.On(),
		"signatures": map[string]any{
			"set": sig.Set, "invalid": sig.Invalid, "keys": keys, "invalid_markets": invalidMarkets,
		},
	}
	if lockdown {
		// A settings document of this layer could not be read at all: every
		// restriction it might have held is assumed.
		d["strict"] = map[string]any{"set": true, "invalid": true, "exact": map[string]any{}, "owners": map[string]any{}, "host_patterns": []any{}, "path_patterns": []any{}}
		d["blocked"] = map[string]any{"set": true, "invalid": true, "exact": map[string]any{}, "owners": map[string]any{}, "host_patterns": []any{}, "path_patterns": []any{}}
		d["surfaces"] = map[string]any{"set": true, "all": true, "locked": map[string]any{}}
		d["managed_hooks_only"] = true
		d["disable_sideload"] = true
		d["signatures"] = map[string]any{"set": true, "invalid": true, "keys": map[string]any{}, "invalid_markets": map[string]any{}}
	}
	return d
}

func sourceIndex(l settings.SourceList) map[string]any {
	exact := map[string]any{}
	owners := map[string]any{}
	hosts := []any{}
	paths := []any{}
	for _, e := range l.Entries {
		switch e.Source {
		case settings.KindOwnerWildcard:
			owners[e.RepoOwnerWildcard()] = true
		case settings.KindHostPattern:
			hosts = append(hosts, e.HostPattern)
		case settings.KindPathPattern:
			paths = append(paths, e.PathPattern)
		default:
			exact[e.Key()] = true
		}
	}
	return map[string]any{"set": l.Set, "invalid": l.Invalid, "exact": exact, "owners": owners,
		"host_patterns": hosts, "path_patterns": paths}
}
