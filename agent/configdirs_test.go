package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/userconfig"
	"github.com/wharfhq/wharf/plugin"
)

// A plugin whose marketplace has no userConfig directory is not asked for
// its values file by file: the load gives what it gives with the
// directories present and empty, in both modes, and a plugin of another
// marketplace that has values still gets them.
func TestLoadWithoutConfigDirsEqualsEmptyDirs(t *testing.T) {
	w := newWorld(t)
	w.install("ops@corp", "1.0.0", fullPlugin("ops"))
	w.install("lint@corp", "1.0.0", smallPlugin("lint"))
	w.install("api@other", "1.0.0", map[string]string{
		".claude-plugin/plugin.json": `{"name":"api","version":"1.0.0","userConfig":{"region":{"type":"string","default":"eu"}}}`,
		".mcp.json":                  `{"mcpServers":{"api":{"type":"http","url":"https://${user_config.region}.example.com/mcp"}}}`,
	})
	for _, id := range []string{"ops@corp", "lint@corp", "api@other"} {
		w.setEnabled(id, true)
	}
	api := plugin.MustParseID("api@other")
	if err := userconfig.Set(w.home, api, plugin.UserConfigOption{Key: "region"}, "us"); err != nil {
		t.Fatal(err)
	}
	corp := plugin.MustParseID("ops@corp")
	plain, secret := userconfig.Files(w.home, corp)
	for _, d := range []string{filepath.Dir(plain), filepath.Dir(secret)} {
		if _, err := os.Stat(d); err == nil {
			t.Fatalf("%s exists before the test makes it", d)
		}
	}
	for _, mode := range []Mode{Full, CacheOnly} {
		// The load takes the short way for corp's plugins, not for api.
		in := &loadInput{o: &config{Options: Options{Home: w.home}}, noConfig: noConfigDirs(w.home, []cache.Record{{ID: corp}, {ID: api}})}
		if !in.hasNoConfig(corp) || in.hasNoConfig(api) {
			t.Fatalf("no config for corp: %v, for other: %v; want true, false", in.hasNoConfig(corp), in.hasNoConfig(api))
		}
		without := w.load(w.runtime(w.options()), mode)
		for _, d := range []string{filepath.Dir(plain), filepath.Dir(secret)} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		with := w.load(w.runtime(w.options()), mode)
		for _, d := range []string{filepath.Dir(plain), filepath.Dir(secret)} {
			if err := os.Remove(d); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(without.Components(), with.Components()) {
			t.Fatalf("%s: components differ without the config dirs\n%+v\nwith them\n%+v", mode, without.Components(), with.Components())
		}
		if !reflect.DeepEqual(without.Plugins(), with.Plugins()) {
			t.Fatalf("%s: plugins differ without the config dirs\n%+v\nwith them\n%+v", mode, without.Plugins(), with.Plugins())
		}
		c, ok := without.Lookup(plugin.KindMCPServer, "plugin:api:api")
		if !ok || c.MCP.URL != "https://us.example.com/mcp" {
			t.Fatalf("%s: api's server %+v; want its userConfig value", mode, c.MCP)
		}
	}
}
