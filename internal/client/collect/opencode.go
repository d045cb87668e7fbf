package collect

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/plugin"
)

// OpenCode names an unmodified OpenCode installation of one user: its
// configuration directory and its cache.
type OpenCode struct {
	// ConfigDir is OpenCode's configuration directory:
	// $XDG_CONFIG_HOME/opencode, else ~/.config/opencode.
	ConfigDir string
	// CacheDir is OpenCode's cache: $XDG_CACHE_HOME/opencode, else
	// ~/.cache/opencode. It holds the skills OpenCode fetched from the
	// URLs its configuration lists (skills/<entry>/).
	CacheDir string
}

// OpenCodeMarketplace is the marketplace a skill is reported under when it
// did not come from a wharf channel: OpenCode has no marketplaces.
const OpenCodeMarketplace = "opencode"

// OpenCode's files in a skill's directory.
const (
	OpenCodeSkillFile   = "SKILL.md"
	OpenCodeVersionFile = ".opencode-version"
)

// OpenCodeVersion is what a wharf channel's skill index says of one
// plugin, as OpenCode keeps it beside its copy (.opencode-version): the
// channel, the plugin's pinned digest, and whether SKILL.md is wharf's.
type OpenCodeVersion struct {
	Channel, Digest string
	Generated       bool
}

// ParseOpenCodeVersion reads the version a wharf channel gives a plugin's
// skill entry: "wharf <channel> <w1:digest>", then " generated-skill" when
// the SKILL.md at the entry's root is the one wharf generated. ok is false
// for any other version (a skill that did not come from a wharf channel).
func ParseOpenCodeVersion(s string) (v OpenCodeVersion, ok bool) {
	f := strings.Fields(s)
	if len(f) < 3 || len(f) > 4 || f[0] != "wharf" || plugin.ValidateName(f[1]) != nil || !strings.HasPrefix(f[2], "w1:") || len(f[2]) < 4 {
		return OpenCodeVersion{}, false
	}
	v = OpenCodeVersion{Channel: f[1], Digest: f[2]}
	if len(f) == 4 {
		if f[3] != "generated-skill" {
			return OpenCodeVersion{}, false
		}
		v.Generated = true
	}
	return v, true
}

// DefaultOpenCodeDirs are OpenCode's configuration and cache directories
// for the user whose home is home, as OpenCode finds them: under
// $XDG_CONFIG_HOME and $XDG_CACHE_HOME when set (and getenv is given),
// else ~/.config and ~/.cache.
func DefaultOpenCodeDirs(getenv func(string) string, home string) OpenCode {
	cfg, cache := filepath.Join(home, ".config"), filepath.Join(home, ".cache")
	if getenv != nil {
		if d := strings.TrimSpace(getenv("XDG_CONFIG_HOME")); filepath.IsAbs(d) {
			cfg = d
		}
		if d := strings.TrimSpace(getenv("XDG_CACHE_HOME")); filepath.IsAbs(d) {
			cache = d
		}
	}
	return OpenCode{ConfigDir: filepath.Join(cfg, "opencode"), CacheDir: filepath.Join(cache, "opencode")}
}

// Read reads what OpenCode loads as skills from its own directories: each
// entry it fetched from a skills URL into its cache (skills/<entry>/), and
// each skill of its configuration directory (skill/<name>/ and
// skills/<name>/). An entry a wharf channel served (its .opencode-version
// is the channel's, ParseOpenCodeVersion) is reported as
// <plugin>@<channel>, installed by the user, with the w1: digest of the
// copy without OpenCode's .opencode-version and, when wharf generated it,
// SKILL.md, so that it equals the channel's pin. Any other is reported as
// <name>@opencode, sideloaded, hashed without .opencode-version. A
// directory OpenCode does not load (no SKILL.md at its root) is skipped
// with a warning. Nothing is written.
func (o OpenCode) Read() ([]inventory.Plugin, []string, error) {
	if fi, err := os.Stat(o.ConfigDir); err != nil || !fi.IsDir() {
		if fi, err := os.Stat(o.CacheDir); err != nil || !fi.IsDir() {
			return nil, nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeAgentState, Object: o.ConfigDir,
				Err:  errors.New("not an OpenCode installation (neither its configuration directory nor " + o.CacheDir + " exists)"),
				Hint: "give the home directory OpenCode runs under with --opencode-home (OpenCode keeps ~/.config/opencode and ~/.cache/opencode)"}
		}
	}
	out := []inventory.Plugin{}
	var warns []string
	seen := map[string]bool{}
	add := func(p inventory.Plugin, dir string) {
		if seen[p.ID] {
			warns = append(warns, fmt.Sprintf("%s: a second skill reported as %s; skipped", dir, p.ID))
			return
		}
		seen[p.ID] = true
		out = append(out, p)
	}
	fetched := filepath.Join(o.CacheDir, "skills")
	names, err := skillDirs(fetched, &warns)
	if err != nil {
		return nil, nil, err
	}
	for _, name := range names {
		dir := filepath.Join(fetched, name)
		p := inventory.Plugin{ID: name + "@" + OpenCodeMarketplace, Scope: "user", Install: inventory.InstallSideloaded, Enabled: true, State: inventory.StateActive}
		omit := []string{OpenCodeVersionFile}
		vb, err := readOptional(filepath.Join(dir, OpenCodeVersionFile))
		if err != nil {
			p.State, p.Reason = inventory.StateFailed, plainErr(err)
			add(p, dir)
			continue
		}
		if v, ok := ParseOpenCodeVersion(string(vb)); ok {
			p.ID, p.Install = name+"@"+v.Channel, inventory.InstallUser
			if v.Generated {
				omit = append(omit, OpenCodeSkillFile)
			}
		}
		p.Version = manifestVersion(dir)
		var why string
		p.Digest, why = agentDigest(dir, omit...)
		if why != "" {
			p.State, p.Reason = inventory.StateFailed, why
		}
		add(p, dir)
	}
	for _, sub := range []string{"skill", "skills"} {
		root := filepath.Join(o.ConfigDir, sub)
		names, err := skillDirs(root, &warns)
		if err != nil {
			return nil, nil, err
		}
		for _, name := range names {
			dir := filepath.Join(root, name)
			p := inventory.Plugin{ID: name + "@" + OpenCodeMarketplace, Scope: "user", Install: inventory.InstallSideloaded, Enabled: true, State: inventory.StateActive,
				Version: manifestVersion(dir)}
			var why string
			p.Digest, why = agentDigest(dir)
			if why != "" {
				p.State, p.Reason = inventory.StateFailed, why
			}
			add(p, dir)
		}
	}
	return out, warns, nil
}

// skillDirs lists the directories of root that OpenCode loads as a skill
// (a SKILL.md at their top) under a name wharf reports, sorted; others are
// skipped with a warning. A missing root lists nothing.
func skillDirs(root string, warns *[]string) ([]string, error) {
	ents, err := os.ReadDir(root)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeAgentState, Object: root, Err: errors.New(plainErr(err)),
			Hint: "this directory is OpenCode's; check its permissions, or give the right home with --opencode-home"}
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if plugin.ValidateName(e.Name()) != nil {
			*warns = append(*warns, fmt.Sprintf("%s: not a skill name wharf reports; skipped", dir))
			continue
		}
		if fi, err := os.Lstat(filepath.Join(dir, OpenCodeSkillFile)); err != nil || !fi.Mode().IsRegular() {
			*warns = append(*warns, fmt.Sprintf("%s: no %s, so OpenCode does not load it; skipped", dir, OpenCodeSkillFile))
			continue
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

// manifestVersion is the version in dir's .claude-plugin/plugin.json, or
// "" when it has none that can be read.
func manifestVersion(dir string) string {
	b, err := readOptional(filepath.Join(dir, ".claude-plugin", "plugin.json"))
	if err != nil || b == nil {
		return ""
	}
	var m struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	return m.Version
}
