package policy

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/settings"
)

// FuzzCapabilityKeys: any managed document either gives usable rules or
// issues, never a panic; an entry that is not read fails closed (the
// rules refuse every plugin), and matching the rules against real
// content does not panic.
func FuzzCapabilityKeys(f *testing.F) {
	for _, s := range []string{
		`{"deniedCapabilities":[{"kind":"mcp-runtime-fetch"}]}`,
		`{"deniedCapabilities":[{"kind":"hook","event":"PreToolUse","matcher":"Bash","except":["x@corp","y@corp"]}]}`,
		`{"deniedCapabilities":[{"kind":"host","outside":["*.corp.example"]}],"requireDeclaredHosts":true}`,
		`{"deniedFindings":["download-and-run","credential-read"]}`,
		`{"deniedCapabilities":[{"kind":"hook","matcher":"(Bash"}]}`,
		`{"deniedCapabilities":[{"kind":"allowed-tool","tool":"Bash"},{"kind":"runtime-fetch","unpinned":true}]}`,
		`{"deniedCapabilities":null,"deniedFindings":null,"requireDeclaredHosts":null}`,
	} {
		f.Add([]byte(s))
	}
	var contents []*Content
	for _, dir := range []string{"update/v2", "capabilities/hooks", "capabilities/prompts", "malicious/undeclared-host", "malicious/download-and-run"} {
		r, err := capability.Read(filepath.Join("..", "capability", "testdata", filepath.FromSlash(dir)), nil)
		if err != nil {
			f.Fatal(err)
		}
		contents = append(contents, ContentOf(r))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := settings.Parse("m.json", data)
		if err != nil {
			return
		}
		var c capabilityRules
		issues := c.parse("m.json", s.Unknown)
		if raw, ok := s.Unknown[KeyDeniedCapabilities]; ok {
			var items []json.RawMessage
			if json.Unmarshal(raw, &items) == nil && items != nil && !c.invalid && len(c.denials) != len(items) {
				t.Fatalf("%d entries, %d read, not invalid", len(items), len(c.denials))
			}
		}
		if c.invalid && len(issues) == 0 {
			t.Fatal("invalid without an issue")
		}
		for _, is := range issues {
			if !strings.HasPrefix(is, "m.json: ") {
				t.Fatalf("issue does not name the file: %s", is)
			}
		}
		for _, ct := range contents {
			for _, h := range c.hits("deploy@corp", ct) {
				if h.message == "" || h.rule == "" {
					t.Fatalf("empty hit %+v", h)
				}
			}
		}
	})
}
