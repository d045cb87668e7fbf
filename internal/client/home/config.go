// Package home is the composition root of the client commands: the one
// configuration a command runs with, built as Default, then Parse (flags,
// WHARF_* variables and $WHARF_HOME/config.{json,yaml} through viper), then
// Validate, with no package variable in between. What a command opens (the
// store, the cache, the marketplaces, policy, the installer, the agent
// runtime) is built from layout.Paths and this Config.
package home

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/wharfhq/wharf/internal/cli/cliconfig"
	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/collect"
	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/plugin"
)

// DefaultLockTimeout is lock-timeout when nothing sets it.
const DefaultLockTimeout = 5 * time.Second

// DefaultInventoryInterval is inventory.interval when nothing sets it.
const DefaultInventoryInterval = 60 * time.Minute

// Config is the resolved configuration of one client command. Precedence:
// flags > WHARF_* env > $WHARF_HOME/config.{json,yaml} > defaults.
type Config struct {
	Home        string
	JSON        bool
	LockTimeout time.Duration
	GitTimeout  time.Duration
	// NetIdle fails a network step whose connection is silent this long.
	NetIdle    time.Duration
	GitHubHost string
	// Grace is how long orphaned plugin versions are kept (gc-grace).
	Grace time.Duration
	// Fetch is what every network fetch obeys (marketplace add and
	// update, plugin install and update, show): built once here from the
	// keys above and gitlab-host, proxy, npm-registry, max-download-bytes.
	Fetch fetch.Config
	// InventoryInterval is the least time between background inventory
	// reports (inventory.interval); 0 turns them off. InventoryTimeout
	// bounds one (inventory.timeout).
	InventoryInterval time.Duration
	InventoryTimeout  time.Duration
	// Policy is what the command adds to the managed policy layers
	// (--policy, --policy-url, WHARF_MANAGED_DIR, ...): the command fills
	// it from its flags and environment; no configuration file sets it.
	Policy PolicyConfig
}

// Default is the configuration nothing has set: the values a key takes
// when no flag, variable or file names it (Home is resolved by the
// command, which knows the user's home directory and the --home flag).
func Default() Config {
	return Config{
		LockTimeout:       DefaultLockTimeout,
		GitTimeout:        marketplace.DefaultGitTimeout,
		NetIdle:           marketplace.DefaultNetIdleTimeout,
		Grace:             cache.DefaultGrace,
		InventoryInterval: DefaultInventoryInterval,
		InventoryTimeout:  collect.DefaultTimeout,
	}
}

// SetDefaults makes c's values viper's defaults for the keys Parse reads,
// so a key no flag, variable or file sets keeps c's value.
func (c Config) SetDefaults(v *viper.Viper) {
	v.SetDefault("json", c.JSON)
	v.SetDefault("lock-timeout", c.LockTimeout.String())
	v.SetDefault("git-timeout", c.GitTimeout.String())
	v.SetDefault("net-idle-timeout", c.NetIdle.String())
	v.SetDefault("github-host", c.GitHubHost)
	v.SetDefault("gitlab-host", c.Fetch.GitLabHost)
	v.SetDefault("proxy", c.Fetch.Proxy)
	v.SetDefault("npm-registry", c.Fetch.NPMRegistry)
	v.SetDefault("max-download-bytes", c.Fetch.MaxDownloadBytes)
	v.SetDefault("gc-grace", c.Grace.String())
	v.SetDefault("inventory.interval", c.InventoryInterval.String())
	v.SetDefault("inventory.timeout", c.InventoryTimeout.String())
}

// Parse reads every key but home from v (its flags, variables and file
// already bound) into c. A value that does not parse is a usage error
// naming the key and the variable that sets it.
func (c *Config) Parse(v *viper.Viper) error {
	var err error
	c.JSON = v.GetBool("json")
	if c.LockTimeout, err = cliconfig.Duration(v, "lock-timeout", time.Nanosecond); err != nil {
		return err
	}
	if c.GitTimeout, err = cliconfig.Duration(v, "git-timeout", time.Nanosecond); err != nil {
		return err
	}
	if c.NetIdle, err = cliconfig.Duration(v, "net-idle-timeout", time.Nanosecond); err != nil {
		return err
	}
	c.GitHubHost = strings.TrimSpace(v.GetString("github-host"))
	// A gc grace of 0s removes orphans at once.
	if c.Grace, err = cliconfig.Duration(v, "gc-grace", 0); err != nil {
		return err
	}
	if c.InventoryInterval, err = intervalKey(v, "inventory.interval"); err != nil {
		return err
	}
	if c.InventoryTimeout, err = cliconfig.Duration(v, "inventory.timeout", time.Nanosecond); err != nil {
		return err
	}
	c.Fetch = fetch.Config{
		GitHubHost:       c.GitHubHost,
		GitLabHost:       strings.TrimSpace(v.GetString("gitlab-host")),
		Timeout:          c.GitTimeout,
		IdleTimeout:      c.NetIdle,
		Proxy:            strings.TrimSpace(v.GetString("proxy")),
		NPMRegistry:      strings.TrimSpace(v.GetString("npm-registry")),
		MaxDownloadBytes: v.GetInt64("max-download-bytes"),
		Getenv:           os.Getenv,
	}
	return nil
}

// Validate checks what a key's own parse cannot: the download limit's
// sign and the fetch configuration as a whole, and that the durations a
// command waits are positive (a Config built without Parse).
func (c *Config) Validate() error {
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"lock-timeout", c.LockTimeout}, {"git-timeout", c.GitTimeout}, {"net-idle-timeout", c.NetIdle}} {
		if d.v <= 0 {
			env := "WHARF_" + strings.ToUpper(strings.ReplaceAll(d.key, "-", "_"))
			return &plugin.Error{Layer: plugin.LayerIntent, Type: cliconfig.TypeUsage, Object: d.key,
				Err:  fmt.Errorf("configuration %s: %s is not a positive duration", d.key, d.v),
				Hint: fmt.Sprintf("set %s (or %q in $WHARF_HOME/config.json) to a duration such as 30s", env, d.key)}
		}
	}
	if max := c.Fetch.MaxDownloadBytes; max < 0 {
		return &plugin.Error{Layer: plugin.LayerIntent, Type: cliconfig.TypeUsage, Object: "max-download-bytes",
			Err:  fmt.Errorf("configuration max-download-bytes: %d is negative", max),
			Hint: "set WHARF_MAX_DOWNLOAD_BYTES (or \"max-download-bytes\" in $WHARF_HOME/config.json) to a number of bytes, or 0 for the default"}
	}
	if err := c.Fetch.Check(); err != nil {
		key, _, _ := strings.Cut(err.Error(), " ")
		env := "WHARF_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
		return &plugin.Error{Layer: plugin.LayerIntent, Type: cliconfig.TypeUsage, Object: key,
			Err:  fmt.Errorf("configuration %w", err),
			Hint: fmt.Sprintf("fix %s (or %q in $WHARF_HOME/config.json)", env, key)}
	}
	return nil
}

// intervalKey parses a duration key that "off" (or 0) turns off.
func intervalKey(v *viper.Viper, key string) (time.Duration, error) {
	s := strings.TrimSpace(v.GetString(key))
	if s == "off" || s == "0" {
		return 0, nil
	}
	d, err := cliconfig.Duration(v, key, time.Nanosecond)
	if err != nil {
		var pe *plugin.Error
		if errors.As(err, &pe) {
			pe.Hint += `, or "off"`
		}
	}
	return d, err
}
