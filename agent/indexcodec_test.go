package agent

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/plugin"
)

// codecComponents has every field the index stores set, in every part.
func codecComponents() []Component {
	id := plugin.MustParseID("ops@corp")
	cs := []Component{
		{Kind: plugin.KindCommand, Name: "ops:ship", Local: "ship", Plugin: id, Source: SourcePlugin, Path: "/c/ops/commands/ship.md",
			Root: "/c/ops", DataDir: "/h/data/corp/ops", Description: "Ship it", Meta: MetaOf(map[string]string{"description": "Ship it", "model": "x"})},
		{Kind: plugin.KindHook, Name: "ops:PreToolUse", Local: "PreToolUse", Plugin: id, Source: SourcePlugin, Path: "/c/ops/hooks/hooks.json",
			Root: "/c/ops", Hook: &Hook{Event: "PreToolUse", Matchers: []plugin.HookMatcher{
				{Matcher: "Bash", Hooks: []plugin.Hook{{Type: "command", Command: "/c/ops/bin/guard", Timeout: -3,
					Extra: map[string]json.RawMessage{"async": json.RawMessage("true"), "if": json.RawMessage(`"x"`)}}}},
				{Matcher: "", Hooks: []plugin.Hook{{Type: "prompt", Prompt: "check"}}},
			}}},
		{Kind: plugin.KindMCPServer, Name: "plugin:ops:api", Local: "api", Plugin: id, Source: SourcePlugin, MCP: &plugin.MCPServer{
			Type: "http", Command: "api", Args: []string{"--a", ""}, Env: map[string]string{"A": "1"}, Cwd: "/w", URL: "http://127.0.0.1/",
			Headers: map[string]string{"X": "y"}, Extra: map[string]json.RawMessage{"oauth": json.RawMessage(`{"k":1}`)}}},
		{Kind: plugin.KindLSPServer, Name: "plugin:ops:go", Local: "go", Plugin: id, Source: SourcePlugin, LSP: &plugin.LSPServer{
			Command: "gopls", Args: []string{"serve"}, Env: map[string]string{"B": "2"}, Transport: "stdio",
			ExtensionToLanguage: map[string]string{".go": "go"}, InitializationOptions: json.RawMessage(`{"a":1}`),
			Settings: json.RawMessage(`[1]`), Extra: map[string]json.RawMessage{"restart": json.RawMessage("true")}}},
		{Kind: plugin.KindMCPServer, Name: "local", Local: "local", Source: SourceUser, MCP: &plugin.MCPServer{Command: "x"}},
	}
	for i := range cs {
		normalize(&cs[i])
	}
	return cs
}

// A component read from the index is the component that was written, every
// field of every part included.
func TestIndexCodecRoundTrip(t *testing.T) {
	in := map[string]indexEntry{
		"/c/ops/1.0.0": {Key: "k1", Comps: codecComponents(), Deps: []plugin.Dependency{{Name: "b"}, {Name: "c", Marketplace: "other", Version: "2"}},
			Failed: []string{`mcp-server "x y" (.mcp.json: ["x y"]): bad name`}},
		"/c/empty/1": {Key: "k2"},
	}
	out, err := decodeIndex(encodeIndex(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", out, in)
	}
	for i, c := range out["/c/ops/1.0.0"].Comps {
		if c.sum == "" || c.sum != in["/c/ops/1.0.0"].Comps[i].sum {
			t.Fatalf("component %s lost its sum", c.Name)
		}
	}
	for _, bad := range [][]byte{nil, []byte(indexMagic), append([]byte(indexMagic), 2, 0)} {
		if _, err := decodeIndex(bad); !errors.Is(err, errIndex) {
			t.Fatalf("decodeIndex(%q) = %v, want errIndex", bad, err)
		}
	}
}

// The codec names each field it stores. When one of the types it encodes
// gains a field, this fails: teach encodeIndex and decodeIndex the field
// (and bump indexFormat), then the count here.
func TestIndexCodecFields(t *testing.T) {
	for _, c := range []struct {
		v any
		n int
	}{
		// Hook.Scripts and Hook.Origin are computed after the index, at every
		// load: not stored. Component.options (userConfig values, sensitive
		// ones included) is set after the index and never stored.
		{Component{}, 15}, {Hook{}, 4}, {plugin.HookMatcher{}, 2}, {plugin.Hook{}, 5},
		{plugin.MCPServer{}, 8}, {plugin.LSPServer{}, 8}, {plugin.Dependency{}, 3}, {plugin.ID{}, 2}, {indexEntry{}, 4},
	} {
		if got := reflect.TypeOf(c.v).NumField(); got != c.n {
			t.Errorf("%T has %d fields, the index codec knows %d", c.v, got, c.n)
		}
	}
}

// The gob index earlier versions wrote is replaced by the new one.
func TestLegacyIndexRemoved(t *testing.T) {
	w := newWorld(t)
	w.install("ops@corp", "1.0.0", fullPlugin("ops"))
	w.setEnabled("ops@corp", true)
	legacy := layout.New(w.home).AgentLegacyIndex()
	if err := os.MkdirAll(filepath.Dir(legacy), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(legacy, []byte("gob"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.load(w.runtime(w.options()), CacheOnly)
	if _, err := os.Stat(legacy); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("legacy index still there: %v", err)
	}
	if _, err := os.Stat(layout.New(w.home).AgentIndex()); err != nil {
		t.Fatal(err)
	}
}
