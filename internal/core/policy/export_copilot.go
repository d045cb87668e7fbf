package policy

import (
	"sort"

	"github.com/wharfhq/wharf/internal/core/settings"
)

// CopilotManagedFile is where GitHub Copilot CLI reads its managed settings
// on Linux (root-owned; it has no other managed path there).
const CopilotManagedFile = "/etc/github-copilot/managed-settings.json"

// ExportCopilot writes the layers' merged settings as GitHub Copilot CLI's
// managed-settings.json: the Claude Code keys Copilot CLI reads
// (strictKnownMarketplaces, extraKnownMarketplaces, enabledPlugins,
// allowedMcpServers, deniedMcpServers). What Copilot CLI does not obey is
// left out and named in Warnings: wharf's channel and wharf itself still
// enforce it.
func (e *Engine) ExportCopilot() Export {
	st := e.cur.Load()
	m := st.merged()
	x := exporter{out: map[string]any{}}
	x.marketplaces(m)
	if _, ok := x.out["blockedMarketplaces"]; ok {
		delete(x.out, "blockedMarketplaces")
		x.warn("blockedMarketplaces is not exported: Copilot CLI does not obey it (it adds a blocked marketplace); only strictKnownMarketplaces restricts its marketplaces")
	}
	x.bindings(m)
	x.enabledPlugins(m.Settings)
	allowed, denied := st.mcpLists(x.warn)
	if allowed != nil {
		x.out["allowedMcpServers"] = allowed
	}
	if len(denied) > 0 {
		x.out["deniedMcpServers"] = denied
	}
	x.notExpressible(m, "Copilot CLI", "strictPluginOnlyCustomization", "allowCrossMarketplaceDependenciesOn", "allowManagedHooksOnly", "disableSideloadFlags", "requireSignatures")
	x.agentRules(st, "Copilot CLI")
	sort.Strings(x.warns)
	return Export{Settings: x.out, Warnings: append([]string{}, x.warns...)}
}

// notExpressible warns about each restriction the merged policy sets, of
// keys, that the agent's managed configuration has no key for.
func (x *exporter) notExpressible(m settings.LayerMerge, agent string, keys ...string) {
	s := m.Settings
	set := map[string]bool{
		"strictPluginOnlyCustomization":       s.StrictPluginOnlyCustomization.Set || s.StrictPluginOnlyCustomization.All,
		"allowCrossMarketplaceDependenciesOn": s.AllowCrossMarketplaceDependenciesOn.Set,
		"allowManagedHooksOnly":               s.AllowManagedHooksOnly.On(),
		"disableSideloadFlags":                s.DisableSideloadFlags.On(),
		"requireSignatures":                   s.RequireSignatures.Invalid || len(s.RequireSignatures.Keys) > 0,
		"blockedMarketplaces":                 len(s.BlockedMarketplaces.Entries) > 0,
		"enabledPlugins":                      len(s.EnabledPlugins) > 0 || len(s.EnabledInvalid) > 0,
	}
	for _, k := range keys {
		if set[k] {
			x.warn("%s is not exported: %s is not known to obey it in its managed configuration; wharf enforces it, the agent does not", k, agent)
		}
	}
}
