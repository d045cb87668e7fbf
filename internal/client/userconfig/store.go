// Package userconfig keeps the values users give to plugins' userConfig
// options, under WHARF_HOME:
//
//	<home>/plugin-config/<marketplace>/<plugin>.json    options, mode 0644
//	<home>/plugin-secrets/<marketplace>/<plugin>.json   sensitive options, mode 0600 in a 0700 directory
//
// Each file is a JSON object of option key → string value, written
// atomically. Agents substitute the values as ${user_config.KEY}.
package userconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/plugin"
)

// maxFile bounds a values file; anything larger is not ours.
const maxFile = 1 << 20

// Files returns the plain and the sensitive values file of id.
func Files(home string, id plugin.ID) (plain, secret string) {
	p := layout.New(home)
	return p.PluginConfig(id.Source, id.Name), p.PluginSecrets(id.Source, id.Name)
}

// Load returns every value set for id, sensitive ones included. A plugin
// with nothing set has an empty map.
func Load(home string, id plugin.ID) (map[string]string, error) {
	plain, secret := Files(home, id)
	out := map[string]string{}
	for _, f := range []string{plain, secret} {
		m, err := read(f)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out, nil
}

// LoadSplit returns the values set for id: the plain ones and the
// sensitive ones apart, so that a caller can keep the sensitive ones out of
// anything it writes to disk.
func LoadSplit(home string, id plugin.ID) (plain, secret map[string]string, err error) {
	pf, sf := Files(home, id)
	if plain, err = read(pf); err != nil {
		return nil, nil, err
	}
	if secret, err = read(sf); err != nil {
		return nil, nil, err
	}
	for k := range secret {
		delete(plain, k)
	}
	return plain, secret, nil
}

func read(file string) (map[string]string, error) {
	fi, err := os.Stat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxFile {
		return nil, fmt.Errorf("%s: %d bytes, more than %d; remove it and set the options again with wharf config", file, fi.Size(), maxFile)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object of strings (%v); remove it and set the options again with wharf config", file, err)
	}
	return m, nil
}

// Set stores value for the option o of id, in the sensitive file when o is
// sensitive (and removes it from the other file).
func Set(home string, id plugin.ID, o plugin.UserConfigOption, value string) error {
	if err := o.CheckValue(value); err != nil {
		return err
	}
	plain, secret := Files(home, id)
	to, from := plain, secret
	if o.Sensitive {
		to, from = secret, plain
	}
	if err := update(from, from == secret, func(m map[string]string) bool {
		_, had := m[o.Key]
		delete(m, o.Key)
		return had
	}); err != nil {
		return err
	}
	return update(to, to == secret, func(m map[string]string) bool {
		m[o.Key] = value
		return true
	})
}

// Unset removes the value of key for id.
func Unset(home string, id plugin.ID, key string) error {
	plain, secret := Files(home, id)
	for _, f := range []string{plain, secret} {
		if err := update(f, f == secret, func(m map[string]string) bool {
			_, had := m[key]
			delete(m, key)
			return had
		}); err != nil {
			return err
		}
	}
	return nil
}

// update changes file; secret says it is the sensitive values file, kept
// readable by its owner only.
func update(file string, secret bool, change func(map[string]string) bool) error {
	m, err := read(file)
	if err != nil {
		return err
	}
	if !change(m) {
		return nil
	}
	dirMode, mode := fs.FileMode(0o755), fs.FileMode(0o644)
	if secret {
		dirMode, mode = 0o700, 0o600
	}
	if err := os.MkdirAll(filepath.Dir(file), dirMode); err != nil {
		return err
	}
	if secret {
		// A directory made earlier with a wider mode is narrowed.
		for _, d := range []string{filepath.Dir(filepath.Dir(file)), filepath.Dir(file)} {
			if err := os.Chmod(d, 0o700); err != nil {
				return err
			}
		}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(file, append(b, '\n'), mode)
}
