package hooks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/internal/worldtest"
	"github.com/wharfhq/wharf/internal/client/userconfig"
	"github.com/wharfhq/wharf/plugin"
)

// A plugin's hook process sees each userConfig option set with wharf config
// as CLAUDE_PLUGIN_OPTION_<KEY> (upper-cased, "-" made "_"), sensitive
// values included, as in Claude Code; the component index on disk never
// holds the sensitive value.
func TestHookSeesPluginOptions(t *testing.T) {
	w := worldtest.New(t)
	w.Install("ops@corp", "1.0.0", map[string]string{
		".claude-plugin/plugin.json": `{"name":"ops","version":"1.0.0","userConfig":{
			"region":{"type":"string","title":"Region","description":"r"},
			"api-key":{"type":"string","title":"Key","description":"k","sensitive":true}}}`,
		"hooks/hooks.json": `{"hooks":{"Stop":[{"hooks":[{"type":"command",
			"command":"printf '%s|%s' \"$CLAUDE_PLUGIN_OPTION_REGION\" \"$CLAUDE_PLUGIN_OPTION_API_KEY\""}]}]}}`,
	})
	id := plugin.MustParseID("ops@corp")
	if err := userconfig.Set(w.Home, id, plugin.UserConfigOption{Key: "region"}, "eu-west"); err != nil {
		t.Fatal(err)
	}
	if err := userconfig.Set(w.Home, id, plugin.UserConfigOption{Key: "api-key", Sensitive: true}, "s3cr3t-v4lue"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []agent.Mode{agent.Full, agent.CacheOnly} {
		s := w.Load(w.Runtime(w.Options()), mode)
		hs := FromSet(s, plugin.HookStop, w.Project)
		if len(hs) != 1 {
			t.Fatalf("%s: hooks %+v", mode, hs)
		}
		res := (&Runner{}).Run(context.Background(), mustEvent(t, "Stop", `{}`), hs)
		if len(res.Hooks) != 1 || !res.Hooks[0].Ran || res.Hooks[0].Error != "" {
			t.Fatalf("%s: %s", mode, dump(res))
		}
		if got := res.Hooks[0].Output; got != "eu-west|s3cr3t-v4lue" {
			t.Errorf("%s: hook saw %q, want the plain and the sensitive option", mode, got)
		}
	}
	err := filepath.WalkDir(w.Home, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(p, "plugin-secrets") {
			return err
		}
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), "s3cr3t-v4lue") {
			t.Errorf("%s holds the sensitive option value", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func mustEvent(t testing.TB, name, raw string) Event {
	t.Helper()
	ev, err := ParseEvent(name, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestOptionVar(t *testing.T) {
	for in, want := range map[string]string{"region": "CLAUDE_PLUGIN_OPTION_REGION", "api-key": "CLAUDE_PLUGIN_OPTION_API_KEY",
		"perFileCap": "CLAUDE_PLUGIN_OPTION_PERFILECAP", "a.b c": "CLAUDE_PLUGIN_OPTION_A_B_C"} {
		if got := agent.OptionVar(in); got != want {
			t.Errorf("OptionVar(%q) = %q, want %q", in, got, want)
		}
	}
}
