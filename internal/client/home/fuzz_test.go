package home

import (
	"errors"
	"testing"

	"github.com/spf13/viper"

	"github.com/wharfhq/wharf/plugin"
)

// Any value of any key resolves to a Config or to a usage error naming a
// key; never a panic.
func FuzzParseValidate(f *testing.F) {
	for _, s := range []string{"5s", "off", "0", "-1s", "soon", "https://ghe.example", "ftp://x", "-5", "1e99", "", " 3m ", "9223372036854775807"} {
		f.Add("git-timeout", s)
		f.Add("inventory.interval", s)
		f.Add("github-host", s)
		f.Add("max-download-bytes", s)
	}
	keys := map[string]bool{"lock-timeout": true, "git-timeout": true, "net-idle-timeout": true, "github-host": true,
		"gitlab-host": true, "proxy": true, "npm-registry": true, "max-download-bytes": true, "gc-grace": true,
		"inventory.interval": true, "inventory.timeout": true}
	f.Fuzz(func(t *testing.T, key, val string) {
		v := viper.New()
		Default().SetDefaults(v)
		v.Set(key, val)
		c := Default()
		err := c.Parse(v)
		if err == nil {
			err = c.Validate()
		}
		if err == nil {
			return
		}
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Layer != plugin.LayerIntent || !keys[pe.Object] {
			t.Fatalf("%s=%q: %v is not a usage error naming a key", key, val, err)
		}
	})
}
