package policy

import (
	"github.com/wharfhq/wharf/settings"
)

// buildIndex turns the layers' merged settings into data.wharf_index, which
// the Rego module reads. Go parses and canonicalizes (source keys, owners)
// and indexes the lists across layers so that one lookup finds every layer
// that lists a source, plugin or flag; which layer wins and what is denied is
// decided in Rego (see the layout at the top of rego/wharf.rego).
func buildIndex(layers []compiledLayer) map[string]any {
	idx := map[string]any{}
	names := []any{}
	lists := map[string][]any{}
	for _, k := range []string{"strict_set", "strict_invalid", "blocked_invalid", "surfaces_all", "cross_set",
		"managed_hooks_only", "disable_sideload", "signatures_invalid",
		"strict_host_patterns", "strict_path_patterns", "blocked_host_patterns", "blocked_path_patterns"} {
		lists[k] = []any{}
	}
	maps := map[string]map[string]any{}
	for _, k := range []string{"strict_exact", "strict_owner", "blocked_exact", "blocked_owner", "enabled",
		"signatures", "surfaces_locked", "cross_allowed"} {
		maps[k] = map[string]any{}
	}
	// add records that layer i lists key; lists stay in layer order, so the
	// first element is the highest layer's.
	add := func(m string, key string, v any) {
		list, _ := maps[m][key].([]any)
		if i, ok := v.(int); ok {
			if n := len(list); n > 0 && list[n-1] == i {
				return
			}
		}
		maps[m][key] = append(list, v)
	}
	flag := func(k string, on bool, i int) {
		if on {
			lists[k] = append(lists[k], i)
		}
	}
	for i, cl := range layers {
		s := cl.Settings
		names = append(names, cl.Name)
		strict, blocked := s.StrictKnownMarketplaces, s.BlockedMarketplaces
		if cl.Lockdown {
			// A document of this layer could not be read at all: every
			// restriction it might have held is assumed (fail closed).
			strict = settings.SourceList{Set: true, Invalid: true}
			blocked = settings.SourceList{Set: true, Invalid: true}
		}
		flag("strict_invalid", strict.Invalid, i)
		flag("strict_set", strict.Set && !strict.Invalid, i)
		flag("blocked_invalid", blocked.Invalid, i)
		for _, l := range []struct {
			name string
			list settings.SourceList
		}{{"strict", strict}, {"blocked", blocked}} {
			for _, e := range l.list.Entries {
				switch e.Source {
				case settings.KindOwnerWildcard:
					add(l.name+"_owner", e.RepoOwnerWildcard(), i)
				case settings.KindHostPattern:
					lists[l.name+"_host_patterns"] = append(lists[l.name+"_host_patterns"], []any{i, e.HostPattern})
				case settings.KindPathPattern:
					lists[l.name+"_path_patterns"] = append(lists[l.name+"_path_patterns"], []any{i, e.PathPattern})
				default:
					add(l.name+"_exact", e.Key(), i)
				}
			}
		}
		for id, v := range s.EnabledPlugins {
			add("enabled", id.String(), []any{i, v})
		}
		for _, id := range s.EnabledInvalid {
			add("enabled", id.String(), []any{i, "invalid"})
		}
		sig := s.RequireSignatures
		flag("signatures_invalid", sig.Invalid || cl.Lockdown, i)
		for mkt, keys := range sig.Keys {
			set := map[string]any{}
			for _, k := range keys {
				set[k] = true
			}
			add("signatures", mkt, []any{i, set, false})
		}
		for _, mkt := range sig.InvalidMarketplaces {
			add("signatures", mkt, []any{i, map[string]any{}, true})
		}
		surf := s.StrictPluginOnlyCustomization
		flag("surfaces_all", surf.All || surf.Invalid || cl.Lockdown, i)
		for _, x := range surf.List {
			add("surfaces_locked", string(x), i)
		}
		cross := s.AllowCrossMarketplaceDependenciesOn
		flag("cross_set", cross.Set, i)
		for _, n := range cross.Names {
			add("cross_allowed", n, i)
		}
		flag("managed_hooks_only", s.AllowManagedHooksOnly.On() || cl.Lockdown, i)
		flag("disable_sideload", s.DisableSideloadFlags.On() || cl.Lockdown, i)
	}
	idx["names"] = names
	for k, v := range lists {
		idx[k] = v
	}
	for k, v := range maps {
		idx[k] = v
	}
	return idx
}
