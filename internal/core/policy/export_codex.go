package policy

import (
	"fmt"
	"sort"

	"github.com/pelletier/go-toml/v2"

	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// CodexManagedFile is where OpenAI Codex reads its admin requirements on
// Linux (it has no other managed path there).
const CodexManagedFile = "/etc/codex/requirements.toml"

// CodexExport is the effective policy as Codex's requirements.toml, plus
// what could not be expressed in it.
type CodexExport struct {
	Requirements CodexRequirements `json:"requirements"`
	Warnings     []string          `json:"warnings"`
}

// CodexRequirements is the part of Codex's requirements.toml wharf writes.
type CodexRequirements struct {
	AllowManagedHooksOnly bool               `toml:"allow_managed_hooks_only,omitempty" json:"allow_managed_hooks_only,omitempty"`
	Marketplaces          *CodexMarketplaces `toml:"marketplaces,omitempty" json:"marketplaces,omitempty"`
}

// CodexMarketplaces is requirements.toml's [marketplaces] table: with
// restrict_to_allowed_sources, Codex adds only a marketplace one of
// allowed_sources (a table of labelled sources) names.
type CodexMarketplaces struct {
	RestrictToAllowedSources bool                   `toml:"restrict_to_allowed_sources" json:"restrict_to_allowed_sources"`
	AllowedSources           map[string]CodexSource `toml:"allowed_sources" json:"allowed_sources"`
}

// CodexSource is one allowed marketplace source: git (url, ref), local
// (path) or host_pattern (a regular expression over the git host).
type CodexSource struct {
	Source      string `toml:"source" json:"source"`
	URL         string `toml:"url,omitempty" json:"url,omitempty"`
	Ref         string `toml:"ref,omitempty" json:"ref,omitempty"`
	Path        string `toml:"path,omitempty" json:"path,omitempty"`
	HostPattern string `toml:"host_pattern,omitempty" json:"host_pattern,omitempty"`
}

// ExportCodex writes the layers' merged settings as Codex's
// requirements.toml: strictKnownMarketplaces becomes
// [marketplaces] restrict_to_allowed_sources with allowed_sources, and
// allowManagedHooksOnly allow_managed_hooks_only. An allowlist entry Codex
// cannot express exactly is left out (the export is never wider than the
// layers, possibly narrower) and named in Warnings, as is every key with no
// Codex counterpart.
func (e *Engine) ExportCodex() CodexExport {
	st := e.cur.Load()
	m := st.merged()
	x := exporter{out: map[string]any{}}
	var req CodexRequirements
	switch strict := m.StrictKnownMarketplaces; {
	case m.BlockedMarketplaces.Invalid:
		req.Marketplaces = &CodexMarketplaces{RestrictToAllowedSources: true, AllowedSources: map[string]CodexSource{}}
		x.warn("a layer's blockedMarketplaces or settings file is invalid: exported restrict_to_allowed_sources with no allowed source, as wharf enforces it")
	case strict.Set:
		req.Marketplaces = &CodexMarketplaces{RestrictToAllowedSources: true, AllowedSources: map[string]CodexSource{}}
		githubHost := ""
		for _, l := range st.layers {
			if l.Settings.GitHubHost != "" {
				githubHost = "-" // which layer's host an entry means is not kept by the merge
			}
		}
		for i, src := range strict.Entries {
			cs, why := codexSource(src, githubHost)
			if why != "" {
				x.warn("strictKnownMarketplaces entry %d (%s) is not exported: %s; Codex will refuse that marketplace, wharf allows it", i+1, describeSource(src), why)
				continue
			}
			req.Marketplaces.AllowedSources[fmt.Sprintf("wharf-%d", i+1)] = cs
		}
		if m.StrictLayers > 1 {
			x.warn("strictKnownMarketplaces is set by %d layers; exported their intersection (%d entries)", m.StrictLayers, len(strict.Entries))
		}
	}
	if len(m.BlockedMarketplaces.Entries) > 0 {
		x.warn("blockedMarketplaces is not exported: Codex's requirements have no marketplace blocklist; wharf and its channel enforce it")
	}
	if m.AllowManagedHooksOnly.On() {
		req.AllowManagedHooksOnly = true
	}
	if len(m.ExtraKnownMarketplaces) > 0 {
		x.warn("extraKnownMarketplaces is not exported: Codex's requirements cannot add a marketplace; add the channel with `codex plugin marketplace add`")
	}
	x.notExpressible(m, "Codex", "enabledPlugins", "strictPluginOnlyCustomization", "allowCrossMarketplaceDependenciesOn", "disableSideloadFlags", "requireSignatures")
	if allowed, denied := st.mcpLists(func(string, ...any) {}); allowed != nil || len(denied) > 0 {
		x.warn("allowedMcpServers/deniedMcpServers are not exported: Codex allows an MCP server by its name and its command or URL together ([mcp_servers.<name>.identity]), which Claude-format entries (one of name, command or URL) do not give")
	}
	x.agentRules(st, "Codex")
	sort.Strings(x.warns)
	return CodexExport{Requirements: req, Warnings: append([]string{}, x.warns...)}
}

// codexSource maps a strictKnownMarketplaces entry onto Codex's allowed
// source, or says why it cannot be mapped exactly.
func codexSource(s settings.PolicySource, githubHost string) (CodexSource, string) {
	switch s.Pattern {
	case "":
	case settings.PatternHost:
		return CodexSource{Source: "host_pattern", HostPattern: s.HostPattern}, ""
	default:
		return CodexSource{}, fmt.Sprintf("Codex has no %s source", s.Pattern)
	}
	switch s.Kind {
	case plugin.MktGit:
		if s.Path != "" {
			return CodexSource{}, "Codex cannot restrict a git source to a path inside it"
		}
		return CodexSource{Source: "git", URL: s.URL, Ref: s.Ref}, ""
	case plugin.MktGitHub:
		if s.Path != "" {
			return CodexSource{}, "Codex cannot restrict a git source to a path inside it"
		}
		if githubHost != "" {
			return CodexSource{}, "a layer sets githubHost, and Codex names a GitHub repository only by its URL on github.com"
		}
		return CodexSource{Source: "git", URL: "https://github.com/" + s.Repo + ".git", Ref: s.Ref}, ""
	case plugin.MktDirectory:
		return CodexSource{Source: "local", Path: s.Path}, ""
	}
	return CodexSource{}, fmt.Sprintf("Codex has no %s source", s.Kind)
}

func describeSource(s settings.PolicySource) string {
	kind := string(s.Kind)
	if s.Pattern != "" {
		kind = string(s.Pattern)
	}
	for _, v := range []string{s.URL, s.Repo, s.Path, s.HostPattern, s.PathPattern, s.Owner} {
		if v != "" {
			return kind + " " + v
		}
	}
	return kind
}

// TOML writes the requirements alone as a requirements.toml file.
func (x CodexExport) TOML() ([]byte, error) {
	b, err := toml.Marshal(x.Requirements)
	if err != nil {
		return nil, err
	}
	head := "# Written by wharf policy export --format codex: Codex's admin requirements (" + CodexManagedFile + ").\n"
	return append([]byte(head), b...), nil
}
