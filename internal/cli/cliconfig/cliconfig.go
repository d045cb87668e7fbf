// Package cliconfig reads $WHARF_HOME/config.{json,yaml,yml}, the one
// configuration file wharf and wharf-server share (each uses the keys it
// needs), and turns its mistakes into usage errors naming the key, the
// environment variable that also sets it, and what to write.
package cliconfig

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/wharfhq/wharf/plugin"
)

// TypeUsage is the error type of a command-line or configuration mistake
// (exit 2).
const TypeUsage = "usage"

// Keys are the keys a configuration file may set; others get a warning.
var Keys = map[string]bool{
	"gc-grace": true, "git-timeout": true, "github-host": true, "gitlab-host": true,
	"inventory.interval": true, "inventory.timeout": true, "json": true, "lock-timeout": true,
	"max-download-bytes": true, "net-idle-timeout": true, "npm-registry": true, "proxy": true,
}

// Read reads the first of files that exists into v, warning on w (as
// prog) about each key it does not know. No file is no error.
func Read(v *viper.Viper, files []string, w io.Writer, prog string) error {
	for _, p := range files {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		v.SetConfigFile(p)
		if err := v.ReadInConfig(); err != nil {
			return &plugin.Error{Layer: plugin.LayerIntent, Type: plugin.TypeManifestParse, Object: p,
				Err: fmt.Errorf("read config: %w", err), Hint: "fix the file or move it aside"}
		}
		for _, k := range v.AllKeys() {
			if v.InConfig(k) && !Keys[k] {
				fmt.Fprintf(w, "%s: warning: %s: unknown key %q ignored (known: %s)\n", prog, p, k, known())
			}
		}
		return nil
	}
	return nil
}

func known() string {
	ks := make([]string, 0, len(Keys))
	for k := range Keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// Duration parses the duration key, which must be at least least (0 allows
// zero, e.g. a gc grace of 0s removes orphans at once).
func Duration(v *viper.Viper, key string, least time.Duration) (time.Duration, error) {
	s := strings.TrimSpace(v.GetString(key))
	d, err := time.ParseDuration(s)
	if err == nil && d < least {
		if least > 0 {
			err = errors.New("must be positive")
		} else {
			err = errors.New("must not be negative")
		}
	}
	if err != nil {
		return 0, Error(key, fmt.Errorf("%q: %v", s, err))
	}
	return d, nil
}

// Error is the usage error of a bad duration key: it names the key and
// the environment variable (WHARF_ and the key, upper case) that sets it.
func Error(key string, err error) error {
	env := "WHARF_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(key))
	return &plugin.Error{Layer: plugin.LayerIntent, Type: TypeUsage, Object: key,
		Err:  fmt.Errorf("configuration %s: %w", key, err),
		Hint: fmt.Sprintf("set %s (or %q in $WHARF_HOME/config.json) to a duration like 30s", env, key)}
}
