package collect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// TypeClaudeState is the error type of a Claude Code install state that
// cannot be read.
const TypeClaudeState = "claude-state-invalid"

// maxClaudeFile bounds each Claude Code file read.
const maxClaudeFile = 32 << 20

// Claude names an unmodified Claude Code home.
type Claude struct {
	// Dir is Claude Code's configuration directory: $CLAUDE_CONFIG_DIR,
	// else ~/.claude.
	Dir string
	// ManagedFile is Claude Code's managed-settings.json ("" for none);
	// DefaultClaudeManagedFile is where Claude Code reads it.
	ManagedFile string
}

// DefaultClaudeDir is where Claude Code keeps its state for this user:
// CLAUDE_CONFIG_DIR, else ~/.claude.
func DefaultClaudeDir(getenv func(string) string) (string, error) {
	if d := strings.TrimSpace(getenv("CLAUDE_CONFIG_DIR")); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".claude"), nil
}

// DefaultClaudeManagedFile is the managed-settings.json Claude Code reads
// on this OS.
func DefaultClaudeManagedFile() string {
	switch runtime.GOOS {
	case "darwin":
		return "/Library/Application Support/ClaudeCode/managed-settings.json"
	case "windows":
		return `C:\Program Files\ClaudeCode\managed-settings.json`
	}
	return "/etc/claude-code/managed-settings.json"
}

// ClaudeInstall is one entry of installed_plugins.json.
type ClaudeInstall struct {
	ID          plugin.ID
	Scope       string
	ProjectPath string
	InstallPath string
	Version     string
	Auto        bool
}

type claudeEntryJSON struct {
	Scope       string `json:"scope"`
	ProjectPath string `json:"projectPath"`
	InstallPath string `json:"installPath"`
	Version     string `json:"version"`
	Auto        bool   `json:"auto"`
}

// ParseClaudeInstalled reads installed_plugins.json (version 2: each id
// maps to a list of installs; version 1: to one). A document that is not
// of that shape is an error naming file and field; an entry that is wrong
// on its own (a bad id, scope or version) is left out with a warning, so
// the rest is still reported.
func ParseClaudeInstalled(file string, b []byte) ([]ClaudeInstall, []string, error) {
	if len(b) > maxClaudeFile {
		return nil, nil, claudeErr(file, "", "larger than %d MiB", maxClaudeFile>>20)
	}
	var doc struct {
		Version int                        `json:"version"`
		Plugins map[string]json.RawMessage `json:"plugins"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, nil, claudeErr(file, "", "not JSON of the expected shape: %v", err)
	}
	if doc.Version != 1 && doc.Version != 2 {
		return nil, nil, claudeErr(file, "version", "version %d; versions 1 and 2 are read", doc.Version)
	}
	ids := make([]string, 0, len(doc.Plugins))
	for k := range doc.Plugins {
		ids = append(ids, k)
	}
	sort.Strings(ids)
	var out []ClaudeInstall
	var warns []string
	for _, k := range ids {
		var entries []claudeEntryJSON
		raw := doc.Plugins[k]
		var err error
		if doc.Version == 1 {
			var e claudeEntryJSON
			err = json.Unmarshal(raw, &e)
			entries = []claudeEntryJSON{e}
		} else {
			err = json.Unmarshal(raw, &entries)
		}
		if err != nil {
			return nil, nil, claudeErr(file, fmt.Sprintf("plugins[%q]", k), "%v", err)
		}
		id, err := plugin.ParseID(k)
		if err != nil {
			warns = append(warns, fmt.Sprintf("%s: plugins[%q]: %v; left out", file, truncate(k, 80), err))
			continue
		}
		for i, e := range entries {
			field := fmt.Sprintf("%s: plugins[%q][%d]", file, k, i)
			if !scopeRE(e.Scope) {
				warns = append(warns, fmt.Sprintf("%s.scope: %q is not user, project, local or managed; left out", field, truncate(e.Scope, 40)))
				continue
			}
			if _, err := plugin.SanitizeVersion(e.Version); err != nil {
				warns = append(warns, fmt.Sprintf("%s.version: %v; left out", field, err))
				continue
			}
			out = append(out, ClaudeInstall{ID: id, Scope: e.Scope, ProjectPath: e.ProjectPath, InstallPath: e.InstallPath, Version: e.Version, Auto: e.Auto})
		}
	}
	return out, warns, nil
}

// scopeRE accepts the scopes Claude Code writes and a report carries:
// user, project, local and managed.
func scopeRE(s string) bool {
	switch s {
	case "user", "project", "local", "managed":
		return true
	}
	return false
}

// ParseClaudeEnabled reads enabledPlugins from a Claude Code settings file:
// plugin id to true or false. Entries that are not a plugin id and a
// boolean are left out with a warning.
func ParseClaudeEnabled(file string, b []byte) (map[plugin.ID]bool, []string, error) {
	if len(b) > maxClaudeFile {
		return nil, nil, claudeErr(file, "", "larger than %d MiB", maxClaudeFile>>20)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return map[plugin.ID]bool{}, nil, nil
	}
	var doc struct {
		EnabledPlugins map[string]json.RawMessage `json:"enabledPlugins"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, nil, claudeErr(file, "", "not a JSON settings object: %v", err)
	}
	out := map[plugin.ID]bool{}
	var warns []string
	keys := make([]string, 0, len(doc.EnabledPlugins))
	for k := range doc.EnabledPlugins {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		id, err := plugin.ParseID(k)
		if err != nil {
			warns = append(warns, fmt.Sprintf("%s: enabledPlugins[%q]: %v; ignored", file, truncate(k, 80), err))
			continue
		}
		var on bool
		if err := json.Unmarshal(doc.EnabledPlugins[k], &on); err != nil {
			warns = append(warns, fmt.Sprintf("%s: enabledPlugins[%q] is not true or false; ignored", file, k))
			continue
		}
		out[id] = on
	}
	return out, warns, nil
}

func claudeErr(file, field, format string, args ...any) error {
	obj := file
	if field != "" {
		obj += ": " + field
	}
	return &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeClaudeState, Object: obj, Err: fmt.Errorf(format, args...),
		Hint: "this file is Claude Code's; repair it with the claude CLI (claude plugin list), or give the right home with --claude-home"}
}

// readOptional reads a file that may be absent (nil, nil then).
func readOptional(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxClaudeFile+1))
	if err == nil && b == nil {
		b = []byte{}
	}
	return b, err
}

// enabledFile reads one settings file's enabledPlugins; a file that is
// absent enables nothing, one that does not parse is a warning.
func enabledFile(path string, warns *[]string) map[plugin.ID]bool {
	b, err := readOptional(path)
	if err != nil {
		*warns = append(*warns, fmt.Sprintf("%s: %v", path, err))
		return nil
	}
	if b == nil {
		return nil
	}
	m, w, err := ParseClaudeEnabled(path, b)
	*warns = append(*warns, w...)
	if err != nil {
		*warns = append(*warns, err.Error())
		return nil
	}
	return m
}

// Read reads the Claude Code home: every installed plugin, whether its
// settings enable it (managed settings first: true forces it on, false
// off; then, for a project or local install, the project's
// .claude/settings.local.json and .claude/settings.json; then the user's
// settings.json; a plugin none of them names is disabled), and the w1:
// digest of its cached tree. Claude Code keeps no record of what its last
// session loaded, so an enabled plugin is reported active, a disabled one
// disabled, and one whose tree is missing or outside Claude Code's plugin
// directory failed. The warnings name what was left out.
func (c Claude) Read() ([]inventory.Plugin, []string, error) {
	file := filepath.Join(c.Dir, "plugins", "installed_plugins.json")
	b, err := readOptional(file)
	if err != nil {
		return nil, nil, claudeErr(file, "", "%v", err)
	}
	var warns []string
	var installs []ClaudeInstall
	if b != nil {
		var w []string
		installs, w, err = ParseClaudeInstalled(file, b)
		if err != nil {
			return nil, nil, err
		}
		warns = append(warns, w...)
	} else if fi, err := os.Stat(c.Dir); err != nil || !fi.IsDir() {
		return nil, nil, &plugin.Error{Layer: plugin.LayerMaterialization, Type: TypeClaudeState, Object: c.Dir,
			Err:  errors.New("not a Claude Code home (no such directory)"),
			Hint: "give Claude Code's directory with --claude-home (it holds settings.json and plugins/)"}
	}
	var managed map[plugin.ID]bool
	if c.ManagedFile != "" {
		managed = enabledFile(c.ManagedFile, &warns)
	}
	user := enabledFile(filepath.Join(c.Dir, "settings.json"), &warns)
	projects := map[string][2]map[plugin.ID]bool{}
	root, _ := filepath.Abs(filepath.Join(c.Dir, "plugins"))
	out := make([]inventory.Plugin, 0, len(installs))
	for _, in := range installs {
		p := inventory.Plugin{ID: in.ID.String(), Version: in.Version, Scope: in.Scope, Install: inventory.InstallUser}
		if in.Auto {
			p.Install = inventory.InstallDependency
		}
		if on, ok := managed[in.ID]; ok {
			p.Enabled = on
			if on {
				p.Install = inventory.InstallManaged
			}
		} else {
			layers := []map[plugin.ID]bool{}
			if in.ProjectPath != "" && (in.Scope == "project" || in.Scope == "local") {
				pr, ok := projects[in.ProjectPath]
				if !ok {
					pr = [2]map[plugin.ID]bool{
						enabledFile(filepath.Join(in.ProjectPath, ".claude", "settings.local.json"), &warns),
						enabledFile(filepath.Join(in.ProjectPath, ".claude", "settings.json"), &warns),
					}
					projects[in.ProjectPath] = pr
				}
				layers = append(layers, pr[0], pr[1])
			}
			layers = append(layers, user)
			for _, l := range layers {
				if on, ok := l[in.ID]; ok {
					p.Enabled = on
					break
				}
			}
		}
		p.State = inventory.StateDisabled
		if p.Enabled {
			p.State = inventory.StateActive
		}
		digest, why := claudeDigest(root, in.InstallPath)
		if why != "" {
			p.State, p.Reason = inventory.StateFailed, why
		}
		p.Digest = digest
		out = append(out, p)
	}
	return out, warns, nil
}

// claudeDigest hashes a plugin's cached tree, which must be a directory
// inside Claude Code's plugin directory root (an installPath pointing
// elsewhere is not followed: the file is not trusted to name what to read).
func claudeDigest(root, installPath string) (string, string) {
	if installPath == "" || !filepath.IsAbs(installPath) {
		return "", fmt.Sprintf("installPath %q is not an absolute path", truncate(installPath, 200))
	}
	p := filepath.Clean(installPath)
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Sprintf("installPath %s: %v", p, plainErr(err))
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		realRoot = root
	}
	if rel, err := filepath.Rel(realRoot, real); err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Sprintf("installPath %s is outside Claude Code's plugin directory %s; not hashed", p, root)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Sprintf("installPath %s is not a directory", p)
	}
	// Claude Code's own bookkeeping in the version directory (a lease
	// directory per running session) is not the plugin's content.
	t, err := trust.DigestOmitting(real, plugin.ClaudeCacheBookkeeping...)
	if err != nil {
		return "", fmt.Sprintf("hashing %s: %v", p, err)
	}
	return t.Digest, ""
}

func plainErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
