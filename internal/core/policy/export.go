package policy

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/internal/core/settings"
)

// Export is the effective policy as one Claude Code managed-settings.json
// document (standard keys only), plus what could not be expressed in it.
type Export struct {
	Settings map[string]any `json:"settings"`
	Warnings []string       `json:"warnings"`
}

// ExportClaude writes the layers' merged settings (settings.MergeLayers:
// allowlists intersect, blocklists union, the highest forced state wins)
// with Claude Code's keys. Where an exact merge is not expressible (the
// intersection of two allowlists that use patterns), the export keeps only
// entries every layer allows: never wider than the layers, possibly
// narrower, and says so in Warnings.
func (e *Engine) ExportClaude() Export {
	st := e.cur.Load()
	layers := make([]*settings.Settings, len(st.layers))
	for i, l := range st.layers {
		layers[i] = l.Settings
		if l.Lockdown {
			layers[i] = lockedDown(l.Settings)
		}
	}
	m := settings.MergeLayers(layers)
	x := exporter{out: map[string]any{}}
	x.marketplaces(m)
	x.bindings(m)
	x.enabledPlugins(m.Settings)
	x.restrictions(m.Settings)
	for _, mkt := range m.SignatureOverlaps {
		x.warn("requireSignatures for %s is set by more than one layer; exported the keys all of them accept", mkt)
	}
	x.adminRules(st)
	x.capabilityKeys(st)
	sort.Strings(x.warns)
	return Export{Settings: x.out, Warnings: append([]string{}, x.warns...)}
}

// lockedDown is the settings of a layer one of whose documents could not be
// read: every restriction it might have held is assumed (fail closed), as
// decisions assume it.
func lockedDown(s *settings.Settings) *settings.Settings {
	c := *s
	c.BlockedMarketplaces.Set, c.BlockedMarketplaces.Invalid = true, true
	c.StrictPluginOnlyCustomization.Set, c.StrictPluginOnlyCustomization.All = true, true
	c.AllowManagedHooksOnly.Invalid = true
	c.DisableSideloadFlags.Invalid = true
	return &c
}

type exporter struct {
	out   map[string]any
	warns []string
}

func (x *exporter) warn(format string, args ...any) {
	x.warns = append(x.warns, fmt.Sprintf(format, args...))
}

// marketplaces writes strictKnownMarketplaces and blockedMarketplaces. A
// blocklist wharf cannot read blocks everything, which only an empty
// allowlist says to Claude Code.
func (x *exporter) marketplaces(m settings.LayerMerge) {
	switch strict := m.StrictKnownMarketplaces; {
	case m.BlockedMarketplaces.Invalid:
		x.out["strictKnownMarketplaces"] = []any{}
		x.warn("a layer's blockedMarketplaces or settings file is invalid: exported strictKnownMarketplaces: [] (nothing allowed), as wharf enforces it")
	case strict.Set:
		allowed := strict.Entries
		if allowed == nil {
			allowed = []settings.PolicySource{}
		}
		x.out["strictKnownMarketplaces"] = allowed
		if m.StrictLayers > 1 {
			x.warn("strictKnownMarketplaces is set by %d layers; exported their intersection (%d entries)", m.StrictLayers, len(allowed))
		}
	}
	if b := m.BlockedMarketplaces.Entries; len(b) > 0 {
		x.out["blockedMarketplaces"] = b
	}
}

// bindings writes extraKnownMarketplaces: the source each marketplace
// name of enabledPlugins means.
func (x *exporter) bindings(m settings.LayerMerge) {
	if len(m.ExtraKnownMarketplaces) > 0 {
		x.out["extraKnownMarketplaces"] = m.ExtraKnownMarketplaces
	}
	for _, name := range m.BindingConflicts {
		x.warn("layers declare marketplace %s (extraKnownMarketplaces) for different sources: wharf refuses every plugin under that name; not exported", name)
	}
}

// enabledPlugins writes the forced states; a value that is not a boolean
// forces the plugin off, as wharf enforces it.
func (x *exporter) enabledPlugins(m *settings.Settings) {
	enabled := map[string]bool{}
	for id, v := range m.EnabledPlugins {
		enabled[id.String()] = v
	}
	for _, id := range m.EnabledInvalid {
		enabled[id.String()] = false
	}
	if len(enabled) > 0 {
		x.out["enabledPlugins"] = enabled
	}
}

// restrictions writes the locked surfaces, the cross-marketplace allowlist,
// the flags and the required signatures.
func (x *exporter) restrictions(m *settings.Settings) {
	switch surf := m.StrictPluginOnlyCustomization; {
	case surf.All:
		x.out["strictPluginOnlyCustomization"] = true
	case surf.Set:
		list := []string{}
		for _, s := range surf.List {
			list = append(list, string(s))
		}
		x.out["strictPluginOnlyCustomization"] = list
	}
	if c := m.AllowCrossMarketplaceDependenciesOn; c.Set {
		x.out["allowCrossMarketplaceDependenciesOn"] = append([]string{}, c.Names...)
	}
	if m.AllowManagedHooksOnly.On() {
		x.out["allowManagedHooksOnly"] = true
	}
	if m.DisableSideloadFlags.On() {
		x.out["disableSideloadFlags"] = true
	}
	switch sig := m.RequireSignatures; {
	case sig.Invalid:
		x.warn("requireSignatures is invalid in a layer: wharf refuses every install; Claude Code has no such key, so the export cannot carry it")
	case len(sig.Keys) > 0:
		x.out["requireSignatures"] = sig.Keys
	}
}

// adminRules warns about each admin Rego module: Claude Code has no way to
// enforce them.
func (x *exporter) adminRules(st *state) {
	for _, l := range st.layers {
		for k := range st.modules {
			if rest, ok := strings.CutPrefix(k, l.Name+"/"); ok && rest != "" {
				x.warn("layer %s has admin Rego rules (%s); Claude Code cannot enforce them, only wharf does", l.Name, rest)
			}
		}
	}
}

// capabilityKeys warns about each layer's capability keys: Claude Code
// reads no capability set, so it cannot deny by one.
func (x *exporter) capabilityKeys(st *state) {
	for _, l := range st.layers {
		if !l.Caps.empty() && !l.Lockdown {
			x.warn("layer %s sets %s, %s or %s; Claude Code cannot enforce them, only wharf does", l.Name,
				KeyDeniedCapabilities, KeyRequireDeclaredHosts, KeyDeniedFindings)
		}
	}
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
