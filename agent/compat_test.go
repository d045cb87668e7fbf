package agent

import (
	"os"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/client/userconfig"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/plugin"
)

// A plugin whose plugin.json renames it is namespaced by that name, as
// Claude Code does; servers named with a space or with an empty url are
// listed as Claude Code lists them; one unusable MCP entry fails alone with
// its reason on the status row; URLs are checked after the environment is
// substituted.
// The cache-only load (from the component index) says the same.
func TestLoadClaudeCompat(t *testing.T) {
	t.Setenv("WHARF_TEST_MCP_HOST", "mcp.example.com")
	w := newWorld(t)
	w.install("claude-ops@corp", "1.0.0", map[string]string{
		".claude-plugin/plugin.json": `{"name":"ops","version":"1.0.0"}`,
		"commands/ops-dash.md":       "---\ndescription: Dashboard\n---\nx\n",
		".mcp.json": `{"mcpServers":{
			"google calendar":{"type":"http","url":"https://cal.example.com/mcp"},
			"crm":{"type":"http","url":""},
			"tlsradar":{"type":"http","url":"${WHARF_TEST_UNSET_BASE:-https://tlsradar.com}/api/v1/mcp"},
			"env":{"type":"http","url":"https://${WHARF_TEST_MCP_HOST}/mcp"},
			"unset":{"type":"http","url":"${WHARF_TEST_UNSET_URL}/mcp"}}}`,
	})
	w.setEnabled("claude-ops@corp", true)
	for _, mode := range []Mode{Full, CacheOnly} {
		s := w.load(w.runtime(w.options()), mode)
		names := map[string]Component{}
		for _, c := range s.Components() {
			if c.Source == SourcePlugin {
				names[c.Name] = c
			}
		}
		for _, want := range []string{"ops:ops-dash", "plugin:ops:tlsradar", "plugin:ops:env", "plugin:ops:google calendar", "plugin:ops:crm"} {
			if _, ok := names[want]; !ok {
				t.Errorf("%s: no component %s in %v", mode, want, keysOf(names))
			}
		}
		if len(names) != 5 {
			t.Errorf("%s: components %v; want the command and four servers", mode, keysOf(names))
		}
		if got := names["plugin:ops:google calendar"].ToolName("list events"); got != "mcp__plugin_ops_google_calendar__list_events" {
			t.Errorf("%s: tool name of a server named with a space: %s", mode, got)
		}
		if c := names["plugin:ops:tlsradar"]; c.MCP == nil || c.MCP.URL != "https://tlsradar.com/api/v1/mcp" {
			t.Errorf("%s: tlsradar = %+v", mode, c.MCP)
		}
		if c := names["plugin:ops:env"]; c.MCP == nil || c.MCP.URL != "https://mcp.example.com/mcp" {
			t.Errorf("%s: env = %+v", mode, c.MCP)
		} else if got := c.ToolName("q"); got != "mcp__plugin_ops_env__q" {
			t.Errorf("%s: tool name %s", mode, got)
		}
		ps := s.Plugins()
		if len(ps) != 1 || ps[0].ID.String() != "claude-ops@corp" || ps[0].Status != "active" {
			t.Fatalf("%s: plugins %+v", mode, ps)
		}
		failed := strings.Join(ps[0].Failed, "\n")
		for _, want := range []string{`mcp-server "unset"`, "needs WHARF_TEST_UNSET_URL, which is not set"} {
			if !strings.Contains(failed, want) {
				t.Errorf("%s: failed =\n%s\nwant %s", mode, failed, want)
			}
		}
		if len(ps[0].Failed) != 1 {
			t.Errorf("%s: %d failed; want 1", mode, len(ps[0].Failed))
		}
	}
}

func keysOf(m map[string]Component) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// userConfig values set with wharf config (plugin/userconfig) are
// substituted as ${user_config.KEY} in servers and hook commands; an unset
// option takes its default; a changed value counts on the next cache-only
// load.
func TestLoadUserConfig(t *testing.T) {
	w := newWorld(t)
	w.install("ops@corp", "1.0.0", map[string]string{
		".claude-plugin/plugin.json": `{"name":"ops","version":"1.0.0",
			"userConfig":{"region":{"type":"string","default":"eu"},"token":{"type":"string","sensitive":true}}}`,
		".mcp.json":        `{"mcpServers":{"api":{"type":"http","url":"https://${user_config.region}.api.example.com/mcp","headers":{"Authorization":"Bearer ${user_config.token}"}}}}`,
		"hooks/hooks.json": `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"notify --region ${user_config.region} --token ${user_config.token}"}]}]}}`,
	})
	w.setEnabled("ops@corp", true)
	id := plugin.MustParseID("ops@corp")
	if err := userconfig.Set(w.home, id, plugin.UserConfigOption{Key: "token", Sensitive: true}, "t0k"); err != nil {
		t.Fatal(err)
	}
	check := func(mode Mode, region string) {
		t.Helper()
		s := w.load(w.runtime(w.options()), mode)
		var api, stop *Component
		for _, c := range s.Components() {
			c := c
			switch c.Name {
			case "plugin:ops:api":
				api = &c
			case "ops:Stop":
				stop = &c
			}
		}
		if api == nil || stop == nil {
			t.Fatalf("%s: components %v", mode, s.Components())
		}
		if api.MCP.URL != "https://"+region+".api.example.com/mcp" || api.MCP.Headers["Authorization"] != "Bearer t0k" {
			t.Errorf("%s: api = %s %v", mode, api.MCP.URL, api.MCP.Headers)
		}
		if got := stop.Hook.Matchers[0].Hooks[0].Command; got != "notify --region "+region+" --token t0k" {
			t.Errorf("%s: hook command %q", mode, got)
		}
	}
	check(Full, "eu")
	check(CacheOnly, "eu")
	if err := userconfig.Set(w.home, id, plugin.UserConfigOption{Key: "region"}, "us"); err != nil {
		t.Fatal(err)
	}
	check(CacheOnly, "us")
	// The sensitive value is substituted after the component index: the
	// index on disk never holds it.
	idx, err := os.ReadFile(layout.New(w.home).AgentIndex())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(idx), "t0k") || !strings.Contains(string(idx), "${user_config.token}") {
		t.Errorf("the component index holds the sensitive value, or not the reference")
	}
}
