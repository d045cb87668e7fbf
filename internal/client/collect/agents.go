package collect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// TypeAgentState is the error type of a Copilot CLI or Codex install state
// that cannot be read.
const TypeAgentState = "agent-state-invalid"

// AgentInstall is one plugin an agent's own state file says is installed.
type AgentInstall struct {
	ID      plugin.ID
	Version string
	Enabled bool
}

// Copilot names an unmodified GitHub Copilot CLI home.
type Copilot struct {
	// Dir is Copilot CLI's directory: $COPILOT_HOME, else ~/.copilot.
	Dir string
}

// Codex names an unmodified OpenAI Codex home.
type Codex struct {
	// Dir is Codex's directory: $CODEX_HOME, else ~/.codex.
	Dir string
}

// DefaultAgentDir is where the agent keeps its state for this user: the
// environment variable envVar when set, else ~/<dot>.
func DefaultAgentDir(getenv func(string) string, envVar, dot string) (string, error) {
	if d := strings.TrimSpace(getenv(envVar)); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, dot), nil
}

func agentErr(agent, file, field, format string, args ...any) error {
	obj := file
	if field != "" {
		obj += ": " + field
	}
	hint := "this file is Copilot CLI's; repair it with `copilot plugin list`, or give the right home with --copilot-home"
	if agent == "codex" {
		hint = "this file is Codex's; repair it with `codex plugin list`, or give the right home with --codex-home"
	}
	return &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeAgentState, Object: obj, Err: fmt.Errorf(format, args...), Hint: hint}
}

// stripLineComments removes the lines of b that are, after blanks, a //
// comment: Copilot CLI heads config.json with such lines. A // inside a
// JSON line is left alone.
func stripLineComments(b []byte) []byte {
	var out []byte
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if bytes.HasPrefix(bytes.TrimLeft(line, " \t\r"), []byte("//")) {
			out = append(out, '\n') // keep line numbers
			continue
		}
		out = append(out, line...)
	}
	return out
}

// ParseCopilotConfig reads installedPlugins from Copilot CLI's config.json
// (JSON with // comment lines). A document that is not of that shape is an
// error naming file and field; an entry wrong on its own (a bad name,
// marketplace or version) is left out with a warning.
func ParseCopilotConfig(file string, b []byte) ([]AgentInstall, []string, error) {
	if len(b) > maxClaudeFile {
		return nil, nil, agentErr("copilot", file, "", "larger than %d MiB", maxClaudeFile>>20)
	}
	b = stripLineComments(b)
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil, nil
	}
	var doc struct {
		InstalledPlugins []json.RawMessage `json:"installedPlugins"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, nil, agentErr("copilot", file, "", "not JSON of the expected shape: %v", err)
	}
	var out []AgentInstall
	var warns []string
	seen := map[plugin.ID]bool{}
	for i, raw := range doc.InstalledPlugins {
		field := fmt.Sprintf("%s: installedPlugins[%d]", file, i)
		var e struct {
			Name        string `json:"name"`
			Marketplace string `json:"marketplace"`
			Version     string `json:"version"`
			Enabled     *bool  `json:"enabled"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			warns = append(warns, fmt.Sprintf("%s: %v; left out", field, err))
			continue
		}
		id, err := plugin.ParseID(e.Name + "@" + e.Marketplace)
		if err != nil {
			warns = append(warns, fmt.Sprintf("%s: %v; left out", field, err))
			continue
		}
		if _, err := plugin.SanitizeVersion(e.Version); err != nil {
			warns = append(warns, fmt.Sprintf("%s.version: %v; left out", field, err))
			continue
		}
		if seen[id] {
			warns = append(warns, fmt.Sprintf("%s: %s is listed twice; the first is reported", field, id))
			continue
		}
		seen[id] = true
		out = append(out, AgentInstall{ID: id, Version: e.Version, Enabled: e.Enabled == nil || *e.Enabled})
	}
	return out, warns, nil
}

// ParseCodexConfig reads the [plugins."name@marketplace"] tables of Codex's
// config.toml. A file that is not TOML is an error naming the file and the
// line; a table wrong on its own is left out with a warning.
func ParseCodexConfig(file string, b []byte) ([]AgentInstall, []string, error) {
	if len(b) > maxClaudeFile {
		return nil, nil, agentErr("codex", file, "", "larger than %d MiB", maxClaudeFile>>20)
	}
	var doc map[string]any
	if err := toml.Unmarshal(b, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, nil, agentErr("codex", file, fmt.Sprintf("line %d, column %d", row, col), "not TOML: %v", err)
		}
		return nil, nil, agentErr("codex", file, "", "not TOML: %v", err)
	}
	raw, ok := doc["plugins"]
	if !ok {
		return nil, nil, nil
	}
	tables, ok := raw.(map[string]any)
	if !ok {
		return nil, nil, agentErr("codex", file, "plugins", "is a %T, not a table", raw)
	}
	keys := make([]string, 0, len(tables))
	for k := range tables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []AgentInstall
	var warns []string
	for _, k := range keys {
		field := fmt.Sprintf("%s: plugins.%q", file, truncate(k, 80))
		id, err := plugin.ParseID(k)
		if err != nil {
			warns = append(warns, fmt.Sprintf("%s: %v; left out", field, err))
			continue
		}
		t, ok := tables[k].(map[string]any)
		if !ok {
			warns = append(warns, fmt.Sprintf("%s is not a table; left out", field))
			continue
		}
		on := true
		if v, ok := t["enabled"]; ok {
			b, ok := v.(bool)
			if !ok {
				warns = append(warns, fmt.Sprintf("%s.enabled is not true or false; left out", field))
				continue
			}
			on = b
		}
		out = append(out, AgentInstall{ID: id, Enabled: on})
	}
	return out, warns, nil
}

// agentDigest hashes a plugin's copy at dir, which is named by wharf from
// validated names (never by a path in the agent's file), with omit left out
// of its top level. A copy that is missing or not a directory is a reason
// for a failed state.
func agentDigest(dir string, omit ...string) (string, string) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Sprintf("%s: %v", dir, plainErr(err))
	}
	if !fi.IsDir() {
		return "", fmt.Sprintf("%s is not a directory", dir)
	}
	t, err := trust.DigestOmitting(dir, omit...)
	if err != nil {
		return "", fmt.Sprintf("hashing %s: %v", dir, err)
	}
	return t.Digest, ""
}

func stateOfEnabled(on bool) string {
	if on {
		return inventory.StateActive
	}
	return inventory.StateDisabled
}

// Read reads the Copilot CLI home: each plugin config.json lists as
// installed, enabled as it says, and the w1: digest of its copy in
// installed-plugins/<marketplace>/<name>; then each plugin settings.json
// enables from a local directory marketplace, which Copilot CLI loads in
// place (see live). A plugin whose copy is missing is reported failed.
func (c Copilot) Read() ([]inventory.Plugin, []string, error) {
	file := filepath.Join(c.Dir, "config.json")
	b, err := readOptional(file)
	if err != nil {
		return nil, nil, agentErr("copilot", file, "", "%v", err)
	}
	var installs []AgentInstall
	var warns []string
	if b == nil {
		if fi, err := os.Stat(c.Dir); err != nil || !fi.IsDir() {
			return nil, nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeAgentState, Object: c.Dir,
				Err: errors.New("not a Copilot CLI home (no such directory)"), Hint: "give Copilot CLI's directory with --copilot-home (it holds config.json and installed-plugins/)"}
		}
	} else if installs, warns, err = ParseCopilotConfig(file, b); err != nil {
		return nil, nil, err
	}
	out := make([]inventory.Plugin, 0, len(installs))
	listed := map[plugin.ID]bool{}
	for _, in := range installs {
		listed[in.ID] = true
		p := inventory.Plugin{ID: in.ID.String(), Version: in.Version, Scope: "user", Install: inventory.InstallUser, Enabled: in.Enabled, State: stateOfEnabled(in.Enabled)}
		digest, why := agentDigest(filepath.Join(c.Dir, "installed-plugins", in.ID.Source, in.ID.Name))
		if why != "" {
			p.State, p.Reason = inventory.StateFailed, why
		}
		p.Digest = digest
		out = append(out, p)
	}
	out = append(out, c.live(listed, &warns)...)
	return out, warns, nil
}

// live reports the plugins Copilot CLI loads in place from a marketplace
// that is a local directory: it copies nothing and lists them only in
// settings.json (enabledPlugins, with the marketplace in
// extraKnownMarketplaces). They are reported as sideloaded, hashed where
// the marketplace's entry points inside its directory.
func (c Copilot) live(listed map[plugin.ID]bool, warns *[]string) []inventory.Plugin {
	file := filepath.Join(c.Dir, "settings.json")
	b, err := readOptional(file)
	if err != nil {
		*warns = append(*warns, fmt.Sprintf("%s: %v", file, err))
		return nil
	}
	if b == nil {
		return nil
	}
	enabled, w, err := ParseClaudeEnabled(file, b)
	*warns = append(*warns, w...)
	if err != nil {
		*warns = append(*warns, err.Error())
		return nil
	}
	var doc struct {
		Extra map[string]struct {
			Source json.RawMessage `json:"source"`
		} `json:"extraKnownMarketplaces"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		*warns = append(*warns, fmt.Sprintf("%s: extraKnownMarketplaces: %v; live plugins not reported", file, err))
		return nil
	}
	ids := make([]plugin.ID, 0, len(enabled))
	for id := range enabled {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	var out []inventory.Plugin
	for _, id := range ids {
		if listed[id] {
			continue
		}
		var src plugin.MarketplaceSource
		if m, ok := doc.Extra[id.Source]; ok {
			// A source that does not read is no local directory.
			src, _ = plugin.DecodeMarketplaceSource(m.Source)
		}
		if src.Kind != plugin.MktDirectory || !filepath.IsAbs(src.Path) {
			*warns = append(*warns, fmt.Sprintf("%s: enabledPlugins[%q] is neither installed nor in a local directory marketplace; left out", file, id))
			continue
		}
		on := enabled[id]
		p := inventory.Plugin{ID: id.String(), Scope: "user", Install: inventory.InstallSideloaded, Enabled: on, State: stateOfEnabled(on)}
		dir, version, why := livePluginDir(filepath.Clean(src.Path), id.Name)
		if why == "" {
			p.Version = version
			p.Digest, why = agentDigest(dir)
		}
		if why != "" {
			p.State, p.Reason = inventory.StateFailed, why
		}
		out = append(out, p)
	}
	return out
}

// livePluginDir finds plugin name in the local marketplace at root: its
// entry's relative source, which must stay inside root, and its version
// ("" when the entry has none or not a valid one).
func livePluginDir(root, name string) (string, string, string) {
	mf := filepath.Join(root, ".claude-plugin", "marketplace.json")
	b, err := readOptional(mf)
	if err != nil || b == nil {
		return "", "", fmt.Sprintf("%s: cannot read the marketplace (%v)", mf, err)
	}
	var doc struct {
		Plugins []struct {
			Name    string          `json:"name"`
			Source  json.RawMessage `json:"source"`
			Version string          `json:"version"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", "", fmt.Sprintf("%s: %v", mf, err)
	}
	for _, e := range doc.Plugins {
		if e.Name != name {
			continue
		}
		var rel string
		if err := json.Unmarshal(e.Source, &rel); err != nil {
			return "", "", fmt.Sprintf("%s: plugin %s has a source that is not a relative path; not hashed", mf, name)
		}
		dir := filepath.Join(root, filepath.FromSlash(rel))
		if r, err := filepath.Rel(root, dir); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			return "", "", fmt.Sprintf("%s: plugin %s's source %q leaves the marketplace directory; not hashed", mf, name, truncate(rel, 200))
		}
		version := e.Version
		if _, err := plugin.SanitizeVersion(version); err != nil || version == "" {
			version = ""
		}
		return dir, version, ""
	}
	return "", "", fmt.Sprintf("%s lists no plugin %s", mf, name)
}

// CodexMigratedSkills is where Codex writes, inside its copy of a plugin,
// the skills it makes of the plugin's commands: Codex's, not the plugin's.
const CodexMigratedSkills = "migrated-command-skills"

// Read reads the Codex home: each [plugins."name@marketplace"] table of
// config.toml, enabled as it says, with the version and w1: digest of its
// copy in plugins/cache/<marketplace>/<name>/<version>. What Codex adds to
// the copy (.codex-plugin/migrated-command-skills) is not hashed when it is
// all .codex-plugin holds. A plugin with no copy is reported failed; with
// several versions, the newest copy is reported.
func (c Codex) Read() ([]inventory.Plugin, []string, error) {
	file := filepath.Join(c.Dir, "config.toml")
	b, err := readOptional(file)
	if err != nil {
		return nil, nil, agentErr("codex", file, "", "%v", err)
	}
	if b == nil {
		if fi, err := os.Stat(c.Dir); err != nil || !fi.IsDir() {
			return nil, nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeAgentState, Object: c.Dir,
				Err: errors.New("not a Codex home (no such directory)"), Hint: "give Codex's directory with --codex-home (it holds config.toml and plugins/)"}
		}
		return []inventory.Plugin{}, nil, nil
	}
	installs, warns, err := ParseCodexConfig(file, b)
	if err != nil {
		return nil, nil, err
	}
	out := make([]inventory.Plugin, 0, len(installs))
	for _, in := range installs {
		p := inventory.Plugin{ID: in.ID.String(), Scope: "user", Install: inventory.InstallUser, Enabled: in.Enabled, State: stateOfEnabled(in.Enabled)}
		dir := filepath.Join(c.Dir, "plugins", "cache", in.ID.Source, in.ID.Name)
		version, why := newestVersion(dir, &warns)
		if why == "" {
			p.Version = version
			copyDir := filepath.Join(dir, version)
			var omit []string
			if ents, err := os.ReadDir(filepath.Join(copyDir, ".codex-plugin")); err == nil && len(ents) == 1 && ents[0].Name() == CodexMigratedSkills && ents[0].IsDir() {
				omit = []string{".codex-plugin"}
			}
			p.Digest, why = agentDigest(copyDir, omit...)
		}
		if why != "" {
			p.State, p.Reason = inventory.StateFailed, why
		}
		out = append(out, p)
	}
	return out, warns, nil
}

// newestVersion is the version directory under dir modified last whose
// name is a valid version.
func newestVersion(dir string, warns *[]string) (string, string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Sprintf("%s: %v", dir, plainErr(err))
	}
	var best string
	var bestTime int64
	n := 0
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if _, err := plugin.SanitizeVersion(e.Name()); err != nil {
			*warns = append(*warns, fmt.Sprintf("%s: %q is not a version; ignored", dir, truncate(e.Name(), 80)))
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		n++
		if best == "" || fi.ModTime().UnixNano() > bestTime {
			best, bestTime = e.Name(), fi.ModTime().UnixNano()
		}
	}
	if best == "" {
		return "", fmt.Sprintf("%s holds no version of the plugin", dir)
	}
	if n > 1 {
		*warns = append(*warns, fmt.Sprintf("%s holds %d versions; reported %s, the newest", dir, n, best))
	}
	return best, ""
}
