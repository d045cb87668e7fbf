package policy

import (
	"encoding/json"
	"sort"
)

// OpenCodeManagedFile is where OpenCode reads its managed configuration on
// Linux (OPENCODE_TEST_MANAGED_CONFIG_DIR names another directory). It is
// merged over every other configuration file.
const OpenCodeManagedFile = "/etc/opencode/opencode.json"

// OpenCodeExport is the effective policy as OpenCode's managed
// opencode.json, plus what could not be expressed in it.
type OpenCodeExport struct {
	Config   OpenCodeConfig `json:"config"`
	Warnings []string       `json:"warnings"`
}

// OpenCodeConfig is the part of opencode.json wharf writes: each denied
// MCP server by name, turned off ({"enabled": false}), which wins over a
// user's or a project's definition of a server of that name.
type OpenCodeConfig struct {
	Schema string                       `json:"$schema"`
	MCP    map[string]OpenCodeMCPToggle `json:"mcp,omitempty"`
}

// OpenCodeMCPToggle turns an MCP server on or off without defining it.
type OpenCodeMCPToggle struct {
	Enabled bool `json:"enabled"`
}

// ExportOpenCode writes the layers' merged settings as OpenCode's managed
// configuration. OpenCode has no marketplaces and no way in its managed
// configuration to refuse a plugin its user lists, so all that is
// expressed is deniedMcpServers by name; everything else is named in
// Warnings (wharf's channel and wharf itself enforce it).
func (e *Engine) ExportOpenCode() OpenCodeExport {
	st := e.cur.Load()
	m := st.merged()
	x := exporter{out: map[string]any{}}
	cfg := OpenCodeConfig{Schema: "https://opencode.ai/config.json"}
	allowed, denied := st.mcpLists(x.warn)
	if allowed != nil {
		x.warn("allowedMcpServers is not exported: OpenCode's configuration can turn off a server it names, not every server it does not; wharf enforces the allowlist, OpenCode does not")
	}
	for _, raw := range denied {
		name, ok := mcpServerName(raw)
		if !ok {
			x.warn("deniedMcpServers entry %s is not exported: OpenCode turns off an MCP server by name only; wharf refuses it, OpenCode does not", raw)
			continue
		}
		if cfg.MCP == nil {
			cfg.MCP = map[string]OpenCodeMCPToggle{}
		}
		cfg.MCP[name] = OpenCodeMCPToggle{Enabled: false}
	}
	s := m.Settings
	if m.StrictKnownMarketplaces.Set || m.BlockedMarketplaces.Invalid {
		x.warn("strictKnownMarketplaces is not exported: OpenCode has no marketplaces and loads any plugin its configuration lists; only wharf's channel keeps to the allowlist")
	}
	if len(s.BlockedMarketplaces.Entries) > 0 {
		x.warn("blockedMarketplaces is not exported: OpenCode has no marketplaces; only wharf's channel keeps to the blocklist")
	}
	if len(m.ExtraKnownMarketplaces) > 0 {
		x.warn("extraKnownMarketplaces is not exported: OpenCode has no marketplaces")
	}
	if len(s.EnabledPlugins) > 0 || len(s.EnabledInvalid) > 0 {
		x.warn("enabledPlugins is not exported: a managed plugin list does not stop a plugin the user's configuration lists, and cannot force one on; wharf enforces it")
	}
	x.notExpressible(m, "OpenCode", "strictPluginOnlyCustomization", "allowCrossMarketplaceDependenciesOn", "allowManagedHooksOnly", "disableSideloadFlags", "requireSignatures")
	x.agentRules(st, "OpenCode")
	sort.Strings(x.warns)
	return OpenCodeExport{Config: cfg, Warnings: append([]string{}, x.warns...)}
}

// JSON writes the configuration alone as an opencode.json file.
func (x OpenCodeExport) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(x.Config, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
