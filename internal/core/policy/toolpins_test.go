package policy

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/toolpin"
	"github.com/wharfhq/wharf/plugin"
)

var (
	hashA = "mcp1:" + strings.Repeat("a", 64)
	hashB = "mcp1:" + strings.Repeat("b", 64)
)

// signedWithPins is a signed bundle with no layer and the given
// wharf.toolPins.
func signedWithPins(t *testing.T, s *testSigner, pins any) []byte {
	t.Helper()
	return signedWharfData(t, s, map[string]any{
		"policy":   map[string]any{"version": "sha256:p", "revision": 3, "layers": []any{}},
		"toolPins": pins,
	})
}

func TestReadBundleToolPins(t *testing.T) {
	s := newTestSigner(t)
	b := signedWithPins(t, s, []map[string]string{{"plugin": "deploy@corp", "server": "tools", "hash": hashA}})
	_, info, err := ReadBundle(bytes.NewReader(b), s.pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.ToolPins) != 1 || info.ToolPins[0].Hash != hashA || !strings.Contains(info.ToolPins[0].Origin, "sha256:p") {
		t.Fatalf("pins = %+v", info.ToolPins)
	}
	for name, bad := range map[string]map[string]string{
		"hash":   {"plugin": "deploy@corp", "server": "tools", "hash": "sha256:00"},
		"plugin": {"plugin": "deploy", "server": "tools", "hash": hashA},
		"server": {"plugin": "deploy@corp", "server": "", "hash": hashA},
	} {
		_, _, err := ReadBundle(bytes.NewReader(signedWithPins(t, s, []any{bad})), s.pubPEM)
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Type != TypeBundleInvalid || !strings.Contains(err.Error(), "toolPins[0]") {
			t.Errorf("bad %s: %v", name, err)
		}
	}
}

// Pins come from every policy layer and from the bundles; a lower layer
// pinning another hash cannot loosen a higher one's pin (both must match),
// and a bundle's pins hold next to the layers'.
func TestEngineToolPinsOnlyTighten(t *testing.T) {
	managed := Layer{Name: "managed", Managed: true, Origin: "/etc/wharf", settingsName: "/etc/wharf/managed-settings.json",
		Settings: []byte(`{"mcpToolPins": {"deploy@corp": {"tools": "` + hashA + `"}}}`)}
	lower := Layer{Name: "team", Origin: "team.json", Settings: []byte(`{"mcpToolPins": {"deploy@corp": {"tools": "` + hashB + `"}}}`)}
	empty := Layer{Name: "loose", Origin: "loose.json", Settings: []byte(`{"mcpToolPins": {"deploy@corp": {}}}`)}

	e, err := NewEngine([]Layer{managed, empty})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Warnings()) != 0 {
		t.Fatalf("warnings: %q", e.Warnings())
	}
	pins := e.ToolPins()
	if err := pins.Check("deploy@corp", "tools", hashA); err != nil {
		t.Fatalf("an empty lower entry removed nothing, the pin holds: %v", err)
	}
	var d *toolpin.DriftError
	if !errors.As(pins.Check("deploy@corp", "tools", hashB), &d) || !strings.Contains(d.Origin, "managed-settings.json") {
		t.Fatalf("drift from the managed pin: %v", pins.Check("deploy@corp", "tools", hashB))
	}

	e, err = NewEngine([]Layer{managed, lower})
	if err != nil {
		t.Fatal(err)
	}
	if e.ToolPins().Check("deploy@corp", "tools", hashB) == nil {
		t.Fatal("a lower layer's pin replaced the managed one")
	}

	e, err = NewEngine(nil, WithToolPins([]toolpin.Pin{{Plugin: "deploy@corp", Server: "tools", Hash: hashB, Origin: "bundle"}}))
	if err != nil {
		t.Fatal(err)
	}
	if e.ToolPins().Check("deploy@corp", "tools", hashB) != nil || e.ToolPins().Check("deploy@corp", "tools", hashA) == nil {
		t.Fatal("bundle pin not in force")
	}
	e.SetToolPins(nil)
	if e.ToolPins().Len() != 0 {
		t.Fatal("SetToolPins(nil) kept pins")
	}

	// A value that cannot be read warns and fails closed.
	broken := Layer{Name: "managed", Managed: true, Origin: "/etc/wharf", Settings: []byte(`{"mcpToolPins": ["x"]}`)}
	e, err = NewEngine([]Layer{broken})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Warnings()) != 1 || !strings.Contains(e.Warnings()[0], "mcpToolPins") {
		t.Fatalf("warnings = %q", e.Warnings())
	}
	if !e.ToolPins().Pinned("any@thing", "srv") || e.ToolPins().Check("any@thing", "srv", hashA) == nil {
		t.Fatal("a broken mcpToolPins accepted definitions")
	}
}
