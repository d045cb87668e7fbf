package policy

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/wharfhq/wharf/settings"
)

// Export is the effective policy as one Claude Code managed-settings.json
// document (standard keys only), plus what could not be expressed in it.
type Export struct {
	Settings map[string]any `json:"settings"`
	Warnings []string       `json:"warnings"`
}

// ExportClaude merges the layers the way decisions combine them and writes
// the result with Claude Code's keys. Where an exact merge is not expressible
// (the intersection of two allowlists that use patterns), the export keeps
// only entries every layer allows: never wider than the layers, possibly
// narrower, and says so in Warnings.
func (e *Engine) ExportClaude() Export {
	st := e.cur.Load()
	out := map[string]any{}
	var warns []string
	var lockdown bool
	for _, l := range st.layers {
		lockdown = lockdown || l.Lockdown
	}

	// strictKnownMarketplaces: intersection over the layers that set it.
	var strictLayers []settings.SourceList
	blockedAll := false
	var blocked []settings.MarketplaceSource
	seenBlocked := map[string]bool{}
	for _, l := range st.layers {
		s := l.Settings
		if s.StrictKnownMarketplaces.Set {
			strictLayers = append(strictLayers, s.StrictKnownMarketplaces)
		}
		if s.BlockedMarketplaces.Invalid {
			blockedAll = true
		}
		for _, b := range s.BlockedMarketplaces.Entries {
			if !seenBlocked[b.Key()] {
				seenBlocked[b.Key()] = true
				blocked = append(blocked, b)
			}
		}
	}
	if lockdown || blockedAll {
		out["strictKnownMarketplaces"] = []any{}
		warns = append(warns, "a layer's blockedMarketplaces or settings file is invalid: exported strictKnownMarketplaces: [] (nothing allowed), as wharf enforces it")
	} else if len(strictLayers) > 0 {
		var allowed []settings.MarketplaceSource
		invalid := false
		for _, l := range strictLayers {
			invalid = invalid || l.Invalid
		}
		if !invalid {
			for _, cand := range strictLayers[0].Entries {
				ok := true
				for _, other := range strictLayers[1:] {
					if !entryWithin(cand, other) {
						ok = false
						break
					}
				}
				if ok {
					allowed = append(allowed, cand)
				}
			}
			// Entries of lower layers that the first layer allows only
			// through a pattern are kept too (e.g. org "acme/*", team
			// {"repo":"acme/tools"}).
			for i, l := range strictLayers {
				if i == 0 {
					continue
				}
				for _, cand := range l.Entries {
					if containsKey(allowed, cand) {
						continue
					}
					ok := true
					for j, other := range strictLayers {
						if j != i && !entryWithin(cand, other) {
							ok = false
							break
						}
					}
					if ok {
						allowed = append(allowed, cand)
					}
				}
			}
		}
		if allowed == nil {
			allowed = []settings.MarketplaceSource{}
		}
		out["strictKnownMarketplaces"] = allowed
		if len(strictLayers) > 1 {
			warns = append(warns, fmt.Sprintf("strictKnownMarketplaces is set by %d layers; exported their intersection (%d entries)", len(strictLayers), len(allowed)))
		}
	}
	if len(blocked) > 0 {
		out["blockedMarketplaces"] = blocked
	}

	// enabledPlugins: the highest layer that names a plugin wins.
	enabled := map[string]bool{}
	for i := len(st.layers) - 1; i >= 0; i-- {
		s := st.layers[i].Settings
		for id, v := range s.EnabledPlugins {
			enabled[id.String()] = v
		}
		for _, id := range s.EnabledInvalid {
			enabled[id.String()] = false
		}
	}
	if len(enabled) > 0 {
		out["enabledPlugins"] = enabled
	}

	// strictPluginOnlyCustomization: union of locked surfaces.
	all := lockdown
	locked := map[settings.Surface]bool{}
	anySurf := false
	for _, l := range st.layers {
		sp := l.Settings.StrictPluginOnlyCustomization
		if !sp.Set {
			continue
		}
		anySurf = true
		if sp.All || sp.Invalid {
			all = true
		}
		for _, x := range sp.List {
			locked[x] = true
		}
	}
	switch {
	case all:
		out["strictPluginOnlyCustomization"] = true
	case anySurf:
		list := []string{}
		for _, x := range settings.Surfaces {
			if locked[x] {
				list = append(list, string(x))
			}
		}
		out["strictPluginOnlyCustomization"] = list
	}

	// allowCrossMarketplaceDependenciesOn: intersection over setting layers.
	var cross []string
	crossSet := false
	for _, l := range st.layers {
		c := l.Settings.AllowCrossMarketplaceDependenciesOn
		if !c.Set {
			continue
		}
		if !crossSet {
			cross = append([]string{}, c.Names...)
			crossSet = true
			continue
		}
		var keep []string
		for _, n := range cross {
			for _, m := range c.Names {
				if n == m {
					keep = append(keep, n)
				}
			}
		}
		cross = keep
	}
	if crossSet {
		if cross == nil {
			cross = []string{}
		}
		sort.Strings(cross)
		out["allowCrossMarketplaceDependenciesOn"] = cross
	}

	hooksOnly, sideload := lockdown, lockdown
	sigs := map[string][]string{}
	sigInvalid := false
	for _, l := range st.layers {
		s := l.Settings
		hooksOnly = hooksOnly || s.AllowManagedHooksOnly.On()
		sideload = sideload || s.DisableSideloadFlags.On()
		sigInvalid = sigInvalid || s.RequireSignatures.Invalid
		for mkt, keys := range s.RequireSignatures.Keys {
			if prev, ok := sigs[mkt]; ok {
				// Both layers must be satisfied; one list can only say
				// "one of", so keep the keys both accept.
				var keep []string
				for _, k := range prev {
					for _, k2 := range keys {
						if k == k2 {
							keep = append(keep, k)
						}
					}
				}
				sigs[mkt] = append([]string{}, keep...)
				warns = append(warns, fmt.Sprintf("requireSignatures for %s is set by more than one layer; exported the keys all of them accept", mkt))
				continue
			}
			sigs[mkt] = append([]string{}, keys...)
		}
		for _, mkt := range s.RequireSignatures.InvalidMarketplaces {
			sigs[mkt] = []string{}
		}
	}
	if hooksOnly {
		out["allowManagedHooksOnly"] = true
	}
	if sideload {
		out["disableSideloadFlags"] = true
	}
	if len(sigs) > 0 && !sigInvalid {
		out["requireSignatures"] = sigs
	}
	if sigInvalid {
		warns = append(warns, "requireSignatures is invalid in a layer: wharf refuses every install; Claude Code has no such key, so the export cannot carry it")
	}
	for _, l := range st.layers {
		for k := range st.modules {
			if len(k) > len(l.Name) && k[:len(l.Name)+1] == l.Name+"/" {
				warns = append(warns, fmt.Sprintf("layer %s has admin Rego rules (%s); Claude Code cannot enforce them, only wharf does", l.Name, k[len(l.Name)+1:]))
			}
		}
	}
	sort.Strings(warns)
	return Export{Settings: out, Warnings: append([]string{}, warns...)}
}

// entryWithin reports whether every source that entry e matches is also
// allowed by list l (conservatively: false when unsure).
func entryWithin(e settings.MarketplaceSource, l settings.SourceList) bool {
	if l.Invalid {
		return false
	}
	for _, o := range l.Entries {
		if o.Key() == e.Key() {
			return true
		}
		if e.IsPattern() {
			continue // a pattern is within another list only if listed verbatim
		}
		switch o.Source {
		case settings.KindOwnerWildcard:
			if e.RepoOwner() != "" && e.RepoOwner() == o.RepoOwnerWildcard() {
				return true
			}
		case settings.KindHostPattern:
			if h := e.Host(); h != "" && matchRE(o.HostPattern, h) {
				return true
			}
		case settings.KindPathPattern:
			if p := e.LocalPath(); p != "" && matchRE(o.PathPattern, p) {
				return true
			}
		}
	}
	return false
}

func containsKey(l []settings.MarketplaceSource, e settings.MarketplaceSource) bool {
	for _, x := range l {
		if x.Key() == e.Key() {
			return true
		}
	}
	return false
}

// JSON writes the settings document alone, indented, as a
// managed-settings.json file.
func (x Export) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(x.Settings, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
