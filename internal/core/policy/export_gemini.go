package policy

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// GeminiManagedFile is where Gemini CLI reads its system settings on Linux
// (GEMINI_CLI_SYSTEM_SETTINGS_PATH points it elsewhere). They are merged
// last, so each key wharf writes wins over the user's and the workspace's.
const GeminiManagedFile = "/etc/gemini-cli/settings.json"

// GeminiNothing is an allowedExtensions pattern no extension source
// matches: a non-empty allowlist that admits nothing (an empty one would
// admit everything).
const GeminiNothing = "(?!)"

// GeminiNoServer is the one name an mcp.allowed list holds when the policy
// allows no MCP server: Gemini CLI treats an empty allowlist as none.
const GeminiNoServer = "wharf:no-server-allowed"

// GeminiExport is the effective policy as Gemini CLI's system settings,
// plus what could not be expressed in them.
type GeminiExport struct {
	Settings GeminiSettings `json:"settings"`
	Warnings []string       `json:"warnings"`
}

// GeminiSettings is the part of Gemini CLI's settings.json wharf writes.
type GeminiSettings struct {
	Security *GeminiSecurity `json:"security,omitempty"`
	MCP      *GeminiMCP      `json:"mcp,omitempty"`
}

// GeminiSecurity is settings.json's security object: allowedExtensions
// are JavaScript regular expressions over an extension's install source
// (its git URL or local path); when the list is non-empty only a matching
// extension installs or loads, and blockGitExtensions no longer applies.
type GeminiSecurity struct {
	BlockGitExtensions bool     `json:"blockGitExtensions,omitempty"`
	AllowedExtensions  []string `json:"allowedExtensions,omitempty"`
}

// GeminiMCP is settings.json's mcp object: server names allowed (all
// scopes' lists intersect) and excluded (all scopes' lists unite).
type GeminiMCP struct {
	Allowed  []string `json:"allowed,omitempty"`
	Excluded []string `json:"excluded,omitempty"`
}

// ExportGemini writes the layers' merged settings as Gemini CLI's system
// settings. Gemini CLI has no marketplaces: it installs an extension from
// a git URL or a directory, and security.allowedExtensions restricts those
// sources. strictKnownMarketplaces becomes one anchored pattern per git,
// github or directory entry (a git URL ending in .git also admits the
// extension repositories a wharf channel serves beside it,
// <url without .git>/gemini/<plugin>.git), blockedMarketplaces a negative lookahead in
// front of each; allowedMcpServers and deniedMcpServers become mcp.allowed
// and mcp.excluded by server name. What cannot be expressed exactly is
// left out so that the export is never wider than the layers where that
// is possible, and named in Warnings either way.
func (e *Engine) ExportGemini() GeminiExport {
	st := e.cur.Load()
	m := st.merged()
	x := exporter{out: map[string]any{}}
	var out GeminiSettings

	// Blocked sources: a lookahead no allowed pattern may match.
	var blocked []string
	for i, src := range m.BlockedMarketplaces.Entries {
		re, why := geminiSource(src)
		if why != "" {
			x.warn("blockedMarketplaces entry %d (%s) is not exported: %s; Gemini CLI installs an extension from it, wharf and its channel refuse it", i+1, describeSource(src), why)
			continue
		}
		blocked = append(blocked, re)
	}
	guard := ""
	if len(blocked) > 0 {
		guard = "(?!(?:" + strings.Join(blocked, "|") + ")$)"
	}
	switch strict := m.StrictKnownMarketplaces; {
	case m.BlockedMarketplaces.Invalid:
		out.Security = &GeminiSecurity{BlockGitExtensions: true, AllowedExtensions: []string{GeminiNothing}}
		x.warn("a layer's blockedMarketplaces or settings file is invalid: exported allowedExtensions that match no source, as wharf enforces it")
	case strict.Set:
		out.Security = &GeminiSecurity{AllowedExtensions: []string{}}
		git := false
		for i, src := range strict.Entries {
			re, why := geminiSource(src)
			if why != "" {
				x.warn("strictKnownMarketplaces entry %d (%s) is not exported: %s; Gemini CLI will refuse that source, wharf allows it", i+1, describeSource(src), why)
				continue
			}
			git = git || src.Kind != plugin.MktDirectory
			out.Security.AllowedExtensions = append(out.Security.AllowedExtensions, "^"+guard+"(?:"+re+")$")
		}
		if len(out.Security.AllowedExtensions) == 0 {
			out.Security.AllowedExtensions = []string{GeminiNothing}
		}
		out.Security.BlockGitExtensions = !git
		if m.StrictLayers > 1 {
			x.warn("strictKnownMarketplaces is set by %d layers; exported their intersection (%d entries)", m.StrictLayers, len(strict.Entries))
		}
	case guard != "":
		out.Security = &GeminiSecurity{AllowedExtensions: []string{"^" + guard}}
	}

	allowed, denied := st.mcpLists(x.warn)
	if allowed != nil || len(denied) > 0 {
		out.MCP = &GeminiMCP{}
	}
	if allowed != nil {
		for _, raw := range allowed {
			name, ok := mcpServerName(raw)
			if !ok {
				x.warn("allowedMcpServers entry %s is not exported: Gemini CLI allows an MCP server by name only; it will refuse that server, wharf allows it", raw)
				continue
			}
			out.MCP.Allowed = append(out.MCP.Allowed, name)
		}
		if len(out.MCP.Allowed) == 0 {
			out.MCP.Allowed = []string{GeminiNoServer}
		}
	}
	for _, raw := range denied {
		name, ok := mcpServerName(raw)
		if !ok {
			x.warn("deniedMcpServers entry %s is not exported: Gemini CLI excludes an MCP server by name only; wharf refuses it, Gemini CLI does not", raw)
			continue
		}
		out.MCP.Excluded = append(out.MCP.Excluded, name)
	}
	if out.MCP != nil && out.MCP.Allowed == nil && out.MCP.Excluded == nil {
		out.MCP = nil
	}
	if len(m.ExtraKnownMarketplaces) > 0 {
		x.warn("extraKnownMarketplaces is not exported: Gemini CLI has no marketplaces; install an extension with `gemini extensions install <url>`")
	}
	enabledPluginsGemini(&x, m.Settings)
	x.notExpressible(m, "Gemini CLI", "strictPluginOnlyCustomization", "allowCrossMarketplaceDependenciesOn", "allowManagedHooksOnly", "disableSideloadFlags", "requireSignatures")
	x.agentRules(st, "Gemini CLI")
	sort.Strings(x.warns)
	return GeminiExport{Settings: out, Warnings: append([]string{}, x.warns...)}
}

// enabledPluginsGemini warns about forced plugin states: Gemini CLI's
// system settings cannot turn an extension on or off.
func enabledPluginsGemini(x *exporter, s *settings.Settings) {
	var on, off []string
	states := map[string]bool{}
	for id, v := range s.EnabledPlugins {
		states[id.String()] = v
	}
	for _, id := range sortedKeys(states) {
		if states[id] {
			on = append(on, id)
		} else {
			off = append(off, id)
		}
	}
	if len(on) > 0 {
		x.warn("enabledPlugins forces %s on: not exported, Gemini CLI's settings cannot install or enable an extension", strings.Join(on, ", "))
	}
	if len(off) > 0 {
		x.warn("enabledPlugins forces %s off: not exported, Gemini CLI's settings cannot disable an extension by name; wharf's channel leaves it out", strings.Join(off, ", "))
	}
	if len(s.EnabledInvalid) > 0 {
		x.warn("enabledPlugins is invalid in a layer: not exported; wharf enforces it")
	}
}

// geminiExtensionPath is the pattern of the extension repositories a wharf
// channel at <base>.git serves: <base>/gemini/<plugin>.git.
const geminiExtensionPath = `/gemini/[A-Za-z0-9][A-Za-z0-9._-]*\.git`

// geminiSource is the regular expression (without anchors) matching the
// extension source an allowlist entry names, or why there is none.
func geminiSource(s settings.PolicySource) (string, string) {
	if s.Pattern != "" {
		return "", fmt.Sprintf("Gemini CLI's allowedExtensions has no %s form wharf can translate exactly", s.Pattern)
	}
	if s.Ref != "" {
		return "", "Gemini CLI matches an extension's source URL, not the ref it installs"
	}
	if s.Path != "" && s.Kind != plugin.MktDirectory {
		return "", "Gemini CLI cannot restrict a git source to a path inside it"
	}
	switch s.Kind {
	case plugin.MktGit:
		if base, ok := strings.CutSuffix(s.URL, ".git"); ok {
			// A wharf channel serves each of its plugins as an extension
			// beside its marketplace repository.
			return geminiURL(s.URL) + "|" + geminiURL(base) + geminiExtensionPath, ""
		}
		return geminiURL(s.URL), ""
	case plugin.MktGitHub:
		return geminiURL("https://github.com/"+s.Repo) + `(?:\.git)?`, ""
	case plugin.MktDirectory:
		return regexp.QuoteMeta(strings.TrimRight(s.Path, "/")) + "/?", ""
	}
	return "", fmt.Sprintf("Gemini CLI installs extensions from git or a directory, not from a %s source", s.Kind)
}

// geminiURL is the pattern of a git URL as Gemini CLI matches it: it runs
// allowedExtensions over the source resolved as a local path
// (path.resolve), which puts the working directory in front of a URL and
// folds its "//" into "/". So the URL is matched after any leading
// directory, with one slash after its scheme.
func geminiURL(u string) string {
	u = strings.TrimRight(u, "/")
	if i := strings.Index(u, "://"); i > 0 {
		u = u[:i] + ":/" + strings.TrimLeft(u[i+3:], "/")
	}
	return "(?:.*/)?" + regexp.QuoteMeta(u)
}

// mcpServerName is the serverName of a Claude-format MCP allow/deny entry
// that names a server and nothing else.
func mcpServerName(raw json.RawMessage) (string, bool) {
	var e map[string]any
	if err := json.Unmarshal(raw, &e); err != nil || len(e) != 1 {
		return "", false
	}
	name, ok := e["serverName"].(string)
	return name, ok && name != ""
}

// JSON writes the settings alone as a settings.json file.
func (x GeminiExport) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(x.Settings, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
