package home

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"

	"github.com/wharfhq/wharf/internal/cli/cliconfig"
	"github.com/wharfhq/wharf/plugin"
)

// resolve runs Default → Parse → Validate over a config file holding doc
// (none when ""), with env set for the test, as a command does.
func resolve(t *testing.T, doc string, env map[string]string) (Config, error) {
	t.Helper()
	for k, val := range env {
		t.Setenv(k, val)
	}
	v := viper.New()
	v.SetEnvPrefix("WHARF")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_", ".", "_"))
	v.AutomaticEnv()
	Default().SetDefaults(v)
	if doc != "" {
		f := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := cliconfig.Read(v, []string{f}, &strings.Builder{}, "wharf"); err != nil {
			t.Fatal(err)
		}
	}
	c := Default()
	if err := c.Parse(v); err != nil {
		return c, err
	}
	return c, c.Validate()
}

func TestDefaultsWhenNothingIsSet(t *testing.T) {
	c, err := resolve(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	d := Default()
	if c.LockTimeout != 5*time.Second || c.GitTimeout != d.GitTimeout || c.NetIdle != d.NetIdle || c.Grace != d.Grace ||
		c.InventoryInterval != time.Hour || c.InventoryTimeout != d.InventoryTimeout || c.GitHubHost != "" || c.JSON {
		t.Fatalf("defaults: %+v", c)
	}
	if c.Fetch.Timeout != c.GitTimeout || c.Fetch.IdleTimeout != c.NetIdle || c.Fetch.Getenv == nil {
		t.Fatalf("the fetch configuration is not built from the keys: %+v", c.Fetch)
	}
}

// The environment beats the file; both reach the fetch configuration.
func TestEnvironmentBeatsTheFile(t *testing.T) {
	c, err := resolve(t, `{"git-timeout": "7s", "github-host": "https://ghe.file.example", "inventory": {"interval": "off"}}`,
		map[string]string{"WHARF_GIT_TIMEOUT": "9s", "WHARF_GC_GRACE": "0s"})
	if err != nil {
		t.Fatal(err)
	}
	if c.GitTimeout != 9*time.Second || c.Fetch.Timeout != 9*time.Second {
		t.Errorf("git-timeout %v (fetch %v), want the variable's 9s", c.GitTimeout, c.Fetch.Timeout)
	}
	if c.GitHubHost != "https://ghe.file.example" || c.Fetch.GitHubHost != c.GitHubHost {
		t.Errorf("github-host %q (fetch %q)", c.GitHubHost, c.Fetch.GitHubHost)
	}
	if c.InventoryInterval != 0 || c.Grace != 0 {
		t.Errorf("inventory.interval off → %v, gc-grace 0s → %v", c.InventoryInterval, c.Grace)
	}
}

// Each bad value is a usage error naming the key, the variable and the
// next step.
func TestBadValuesNameTheKey(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		key  string
		hint string
	}{
		{map[string]string{"WHARF_LOCK_TIMEOUT": "soon"}, "lock-timeout", "WHARF_LOCK_TIMEOUT"},
		{map[string]string{"WHARF_NET_IDLE_TIMEOUT": "-1s"}, "net-idle-timeout", "WHARF_NET_IDLE_TIMEOUT"},
		{map[string]string{"WHARF_GC_GRACE": "-1h"}, "gc-grace", "WHARF_GC_GRACE"},
		{map[string]string{"WHARF_INVENTORY_INTERVAL": "hourly"}, "inventory.interval", `or "off"`},
		{map[string]string{"WHARF_MAX_DOWNLOAD_BYTES": "-5"}, "max-download-bytes", "WHARF_MAX_DOWNLOAD_BYTES"},
		{map[string]string{"WHARF_GITHUB_HOST": "ftp://ghe.example"}, "github-host", "WHARF_GITHUB_HOST"},
	} {
		t.Run(tt.key, func(t *testing.T) {
			_, err := resolve(t, "", tt.env)
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Layer != plugin.LayerIntent || pe.Object != tt.key || !strings.Contains(pe.Hint, tt.hint) {
				t.Errorf("%v: %v (hint %q), want a usage error on %s", tt.env, err, plugin.HintOf(err), tt.key)
			}
		})
	}
}

// The login's token goes to the login's server only; a --token or
// WHARF_TOKEN goes to every policy server.
func TestPolicyTokenFor(t *testing.T) {
	c := PolicyConfig{LoginServer: "https://wharf.example.com", LoginToken: "wharf_login"}
	if got := c.TokenFor("https://wharf.example.com/"); got != "wharf_login" {
		t.Fatalf("the login's server gets %q", got)
	}
	if got := c.TokenFor("https://other.example.com"); got != "" {
		t.Fatalf("another server gets the login's token: %q", got)
	}
	c.Token = "wharf_given"
	if got := c.TokenFor("https://wharf.example.com"); got != "wharf_given" {
		t.Fatalf("with a given token, the login's server gets %q", got)
	}
}
