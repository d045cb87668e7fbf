package plugin

import (
	"bytes"
	"fmt"
	"image"
	_ "image/jpeg" // icons may be JPEG
	_ "image/png"
	"os"
	"path/filepath"
	"strings"
)

// Plugin directory check codes, as Claude Code names its findings. A
// finding with one of these codes is a warning unless the validation runs
// under the "directory" profile, where the blocking ones are errors.
const (
	CodeReadmeMissing     = "README_MISSING"
	CodeReadmeTrivial     = "README_TRIVIAL"
	CodeLicenseMissing    = "LICENSE_MISSING"
	CodeIconMissing       = "ICON_MISSING"
	CodeIconInvalid       = "ICON_INVALID"
	CodeIconSize          = "ICON_SIZE"
	CodePrivacyURLMissing = "PRIVACY_URL_MISSING"
	CodeManifestNotFound  = "MANIFEST_NOT_FOUND"
)

// ProfileDirectory is the validation profile of the plugin directory (the
// catalog plugins are submitted to): its blocking checks fail validation.
const ProfileDirectory = "directory"

// blockingCodes are the directory findings that refuse a submission.
var blockingCodes = map[string]bool{CodeReadmeMissing: true, CodeReadmeTrivial: true, CodeLicenseMissing: true}

// IsDirectoryCheck reports whether d is a plugin directory finding, which
// Claude Code prints apart from its verdict.
func (d Diagnostic) IsDirectoryCheck() bool { return d.Code != "" }

const (
	minReadmeWords = 40
	minIconPx      = 512
	maxIconPx      = 2048
	maxIconBytes   = 2 << 20
)

// iconPaths are where the directory looks for an icon when plugin.json
// names none.
var iconPaths = []string{".claude-plugin/icon.png", ".claude-plugin/icon.svg", "assets/icon.png", "assets/icon.svg", "icon.png", "icon.svg"}

// directoryChecks runs the plugin directory's checks on the plugin at
// p.Root; repoRoot, when not "", is the repository (marketplace) root,
// whose README and LICENSE count for a plugin in a sub-folder.
func (v *validator) directoryChecks(p *Plugin, manifestFile string, hasManifest bool, repoRoot string) {
	add := func(code, file, field, format string, args ...any) {
		sev := SeverityWarning
		if v.profile == ProfileDirectory && blockingCodes[code] {
			sev = SeverityError
		}
		v.diags = append(v.diags, Diagnostic{File: file, Field: field, Severity: sev, Code: code,
			Message: "plugin directory: " + fmt.Sprintf(format, args...)})
	}
	root := p.Root
	if !hasManifest {
		add(CodeManifestNotFound, root, "", "no .claude-plugin/plugin.json; the directory needs one to list the plugin (name, description, version, author)")
	}
	readme := findFile(root, "README.md")
	if readme == "" && repoRoot != "" {
		readme = findFile(repoRoot, "README.md")
	}
	switch {
	case readme == "":
		add(CodeReadmeMissing, filepath.Join(root, "README.md"), "", "no README.md: add one that says what the plugin does, how to use it and what it needs, in at least %d words", minReadmeWords)
	default:
		data, _ := readManifestFile(readme)
		if n := len(strings.Fields(string(data))); n < minReadmeWords {
			add(CodeReadmeTrivial, readme, "", "README has %d words; at least %d are required so the listing has a usable description", n, minReadmeWords)
		}
	}
	if p.Manifest.License == "" && !hasLicenseFile(root) && (repoRoot == "" || !hasLicenseFile(repoRoot)) {
		add(CodeLicenseMissing, filepath.Join(root, "LICENSE"), "", "no LICENSE file and plugin.json has no license: add a LICENSE file or set license (an SPDX id)")
	}
	v.iconCheck(p, manifestFile, add)
	if p.Manifest.PrivacyPolicyURL == "" {
		remote := false
		pr := p.Provides()
		for _, s := range pr.MCPServers {
			if s.Type == "http" || s.Type == "sse" || s.Type == "ws" {
				remote = true
			}
		}
		for _, h := range pr.Hooks {
			if h.Type == "http" {
				remote = true
			}
		}
		if remote && (readme == "" || !bytes.Contains(bytes.ToLower(mustRead(readme)), []byte("privacy"))) {
			add(CodePrivacyURLMissing, manifestFile, "privacyPolicyUrl", "the plugin reaches a remote MCP server or HTTP hook but declares no privacy policy: set privacyPolicyUrl in plugin.json")
		}
	}
}

// iconCheck finds the icon and checks it is a square PNG or JPEG of
// 512-2048 px, under 2 MB.
func (v *validator) iconCheck(p *Plugin, manifestFile string, add func(code, file, field, format string, args ...any)) {
	var icon string
	if p.Manifest.Icon != "" {
		if checkRelPath(p.Manifest.Icon, false) != nil {
			add(CodeIconInvalid, manifestFile, "icon", "icon %q is not a path inside the plugin", p.Manifest.Icon)
			return
		}
		icon = filepath.Join(p.Root, filepath.FromSlash(cleanRel(p.Manifest.Icon)))
		if !fileExists(icon) {
			add(CodeIconInvalid, manifestFile, "icon", "icon %q is not a file in the plugin", p.Manifest.Icon)
			return
		}
	} else {
		for _, c := range iconPaths {
			if f := filepath.Join(p.Root, filepath.FromSlash(c)); fileExists(f) {
				icon = f
				break
			}
		}
	}
	if icon == "" {
		add(CodeIconMissing, manifestFile, "icon", "no icon: add a square PNG of 512 to 2048 px at .claude-plugin/icon.png, or set icon in plugin.json")
		return
	}
	if strings.HasSuffix(strings.ToLower(icon), ".svg") {
		return // the directory takes PNG or JPEG; an SVG is read but not measured
	}
	fi, err := os.Stat(icon)
	if err != nil {
		add(CodeIconInvalid, icon, "", "icon cannot be read: %v", err)
		return
	}
	if fi.Size() > maxIconBytes {
		add(CodeIconSize, icon, "", "icon is %d bytes; the directory takes at most %d", fi.Size(), maxIconBytes)
		return
	}
	f, err := os.Open(icon)
	if err != nil {
		add(CodeIconInvalid, icon, "", "icon cannot be read: %v", err)
		return
	}
	defer f.Close()
	cfg, format, err := image.DecodeConfig(f)
	if err != nil {
		add(CodeIconInvalid, icon, "", "icon is not a usable PNG or JPEG: %v", err)
		return
	}
	if cfg.Width != cfg.Height || cfg.Width < minIconPx || cfg.Width > maxIconPx {
		add(CodeIconSize, icon, "", "icon is a %dx%d %s; the directory takes a square image of %d to %d px on each side", cfg.Width, cfg.Height, format, minIconPx, maxIconPx)
	}
}

// findFile returns dir/name matched case-insensitively, or "".
func findFile(dir, name string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if strings.EqualFold(e.Name(), name) && fileExists(filepath.Join(dir, e.Name())) {
			return filepath.Join(dir, e.Name())
		}
	}
	return ""
}

// hasLicenseFile reports a LICENSE, LICENCE or COPYING file (any
// extension) in dir.
func hasLicenseFile(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		base := strings.ToUpper(strings.TrimSuffix(e.Name(), filepath.Ext(e.Name())))
		if (base == "LICENSE" || base == "LICENCE" || base == "COPYING") && fileExists(filepath.Join(dir, e.Name())) {
			return true
		}
	}
	return false
}

func mustRead(file string) []byte {
	b, _ := readManifestFile(file)
	return b
}

// contentChecks gives Claude Code's verdicts on a plugin's Markdown and
// hook commands: front matter Claude Code cannot read is an error (it
// drops every field), a command without front matter is a warning, a
// CLAUDE.md at the plugin root is a warning (it is not loaded as context),
// and so is a hook command with ${CLAUDE_PLUGIN_ROOT} outside quotes.
//
// Claude Code reads a plugin's Markdown only when the plugin directory is
// validated; checking a marketplace, the errors are warnings.
func (v *validator) contentChecks(p *Plugin) {
	errSev, alone := SeverityError, ""
	if v.inMarketplace {
		errSev, alone = SeverityWarning, " (an error when the plugin directory is validated)"
	}
	for _, c := range p.Components {
		switch c.Kind {
		case KindCommand, KindAgent, KindSkill, KindOutputStyle:
		default:
			continue
		}
		abs := filepath.Join(p.Root, filepath.FromSlash(c.Path))
		data, err := readManifestFile(abs)
		if err != nil {
			v.fromError(err, abs)
			continue
		}
		meta, _, has, perr, err := claudeFrontMatter(data)
		switch {
		case err != nil:
			v.diags = append(v.diags, Diagnostic{File: abs, Line: 1, Severity: errSev,
				Message: fmt.Sprintf("%s %q: %v; Claude Code loads it with every front matter field dropped%s", c.Kind, c.Name, err, alone)})
			continue
		case perr != nil:
			what := "every front matter field dropped"
			if c.Kind == KindAgent {
				what = "its name taken from the file name and every other front matter field dropped"
			}
			v.add(errSev, abs, "", "%s %q: front matter is not YAML Claude Code can read (%v); it loads with %s: quote values that contain \": \" or start with a special character%s", c.Kind, c.Name, oneLine(perr.Error()), what, alone)
			continue
		case !has && c.Kind == KindCommand:
			v.add(SeverityWarning, abs, "", "command %q has no front matter: add a --- block with a description, which Claude Code shows and uses to pick the command", c.Name)
			continue
		}
		if c.Kind == KindSkill {
			if d := metaText(meta["description"]); d == "" {
				v.add(SeverityWarning, abs, "description", "skill %q has no description in its front matter; agents pick skills by it", c.Name)
			}
		}
	}
	if f := filepath.Join(p.Root, "CLAUDE.md"); fileExists(f) {
		v.add(SeverityWarning, f, "", "CLAUDE.md at the plugin root is not loaded as context by Claude Code; ship context as a skill (skills/<name>/SKILL.md)")
	}
	seen := map[string]bool{}
	for _, c := range p.ComponentsOf(KindHook) {
		if seen[c.Path] {
			continue
		}
		seen[c.Path] = true
		cfg, _ := p.config(c).(*HooksConfig)
		if cfg == nil {
			continue
		}
		file := p.Root
		if c.Path != "" {
			file = filepath.Join(p.Root, filepath.FromSlash(c.Path))
		}
		for _, ev := range hookEventOrder(cfg) {
			for _, m := range cfg.Hooks[ev] {
				for _, h := range m.Hooks {
					if (h.Type == "command" || h.Type == "") && unquotedPluginRoot(h.Command) {
						v.add(SeverityWarning, file, "hooks."+string(ev), "shell command uses ${CLAUDE_PLUGIN_ROOT} without quotes: %s; a path with a space splits into several words: write \"${CLAUDE_PLUGIN_ROOT}/...\"", h.Command)
					}
				}
			}
		}
	}
}

// unquotedPluginRoot reports ${CLAUDE_PLUGIN_ROOT} (or $CLAUDE_PLUGIN_ROOT)
// outside single or double quotes in a shell command.
func unquotedPluginRoot(cmd string) bool {
	var quote byte
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote == 0 && c == '\\':
			i++
		case quote == '"' && c == '\\':
			i++
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && c == '$':
			rest := cmd[i:]
			if strings.HasPrefix(rest, "${CLAUDE_PLUGIN_ROOT}") || strings.HasPrefix(rest, "$CLAUDE_PLUGIN_ROOT") &&
				(len(rest) == len("$CLAUDE_PLUGIN_ROOT") || !isAlnum(rest[len("$CLAUDE_PLUGIN_ROOT")]) && rest[len("$CLAUDE_PLUGIN_ROOT")] != '_') {
				return true
			}
		}
	}
	return false
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
