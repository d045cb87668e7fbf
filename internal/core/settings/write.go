package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/plugin"
)

// SetEnabled records enabledPlugins[id] = enabled in the settings file of
// scope (user, project or local) and returns the file written. Every other
// key, known or not, is preserved. The write is crash-safe: a temporary file
// in the same directory is fsynced, renamed over the file, and the directory
// is fsynced. A file that is not valid JSON is refused rather than replaced.
func SetEnabled(p Paths, scope Scope, id plugin.ID, enabled bool) (string, error) {
	return SetEnabledAll(p, scope, map[plugin.ID]bool{id: enabled})
}

// SetEnabledAll is SetEnabled for several plugins in one crash-safe write
// (an install enables a whole closure at once).
//
// The read, change and write happen under the exclusive lock of the file's
// directory (see lockDir), and the file is read after the lock is taken, so
// concurrent writers — other wharf commands enabling, disabling or
// installing — never lose each other's keys. Callers that change state
// belonging with the setting (the installed registry) hold the home's lock
// around both, which orders the two the same way in every process.
func SetEnabledAll(p Paths, scope Scope, ids map[plugin.ID]bool) (string, error) {
	keys := make([]plugin.ID, 0, len(ids))
	for k := range ids {
		keys = append(keys, k)
	}
	return editEnabled(p, scope, keys, func(enabledMap map[string]json.RawMessage) bool {
		for k, enabled := range ids {
			enabledMap[k.String()] = json.RawMessage(fmt.Sprint(enabled))
		}
		return true
	})
}

// ForgetEnabled removes the enabledPlugins entries of ids from the settings
// file of scope, as an uninstall does (Claude Code's `plugin uninstall`
// deletes the plugin's key from the scope it uninstalls from), under the
// same lock and with the same crash-safe write as SetEnabledAll. A file
// that does not exist, or names none of ids, is left as it is (not
// written); the file is returned only when it was written.
func ForgetEnabled(p Paths, scope Scope, ids []plugin.ID) (string, error) {
	written := false
	path, err := editEnabled(p, scope, ids, func(enabledMap map[string]json.RawMessage) bool {
		for _, k := range ids {
			if _, ok := enabledMap[k.String()]; ok {
				delete(enabledMap, k.String())
				written = true
			}
		}
		return written
	})
	if err != nil || !written {
		return "", err
	}
	return path, nil
}

// editEnabled reads scope's settings file under its directory's lock, lets
// change edit its enabledPlugins object, and writes the file back
// crash-safely when change reports a change. ids name the plugins (the
// first, in order, is named in errors).
func editEnabled(p Paths, scope Scope, ids []plugin.ID, change func(map[string]json.RawMessage) bool) (string, error) {
	var id plugin.ID // the first id, to name in errors
	for _, k := range ids {
		if err := k.Validate(); err != nil {
			return "", err
		}
		if id.IsZero() || k.String() < id.String() {
			id = k
		}
	}
	if len(ids) == 0 {
		return p.File(scope), nil
	}
	switch scope {
	case ScopeUser, ScopeProject, ScopeLocal:
	case ScopeManaged:
		return "", plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, id.String(),
			"ask your administrator, or use --scope user|project|local", "managed settings are written by administrators, not by wharf enable/disable")
	default:
		return "", plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, id.String(),
			"use --scope user|project|local", "scope %q has no settings file to write", scope)
	}
	path := p.File(scope)
	if path == "" {
		return "", plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, id.String(),
			"run inside a project, or use --scope user", "scope %s has no settings file (no project directory)", scope)
	}
	unlock, err := lockDir(filepath.Dir(path), path)
	if err != nil {
		return "", err
	}
	defer unlock()
	doc := map[string]json.RawMessage{}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, path, "check the file's permissions", "reading settings: %v", err)
	case len(bytes.TrimSpace(old)) > 0:
		if _, perr := Parse(path, old); perr != nil {
			return "", perr
		}
		if err := json.Unmarshal(old, &doc); err != nil {
			return "", plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, path, "fix the file first", "settings are not a JSON object: %v", err)
		}
	}
	enabledMap := map[string]json.RawMessage{}
	if raw, ok := doc["enabledPlugins"]; ok {
		if err := json.Unmarshal(raw, &enabledMap); err != nil || enabledMap == nil {
			return "", plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, path,
				"make enabledPlugins an object {\"plugin@marketplace\": true|false}", "enabledPlugins is %s, not an object; refusing to overwrite it", plugin.JSONKind(raw))
		}
	}
	if !change(enabledMap) {
		return path, nil
	}
	b, err := json.Marshal(enabledMap)
	if err != nil {
		return "", err
	}
	doc["enabledPlugins"] = b
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", err
	}
	out = append(out, '\n')
	if err := atomicfile.WriteFile(path, out, 0o644); err != nil {
		return "", plugin.Errorf(plugin.LayerIntent, TypeSettingsInvalid, path, "check the directory's permissions and free space", "writing settings: %v", err)
	}
	return path, nil
}
