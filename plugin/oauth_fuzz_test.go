package plugin

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzMCPOAuth puts arbitrary text where a remote server's "oauth" object
// goes in .mcp.json: parsing never panics; a value that is not a JSON
// object gets a diagnostic naming the field and its line, and the server
// is skipped (the rest of the plugin loads); an object is kept exactly as
// written (MCPServer.OAuth) and the server's other fields are unaffected.
func FuzzMCPOAuth(f *testing.F) {
	for _, s := range []string{
		`{"clientId": "abc", "callbackPort": 3118}`,
		`{"clientId": "abc"}`,
		`{}`, `null`, `"abc"`, `[1, 2]`, `3118`,
		`{"clientId": 7, "callbackPort": "x"}`,
		`{"callbackPort": 1e400}`,
		`{"clientId": "\u0000\ud800", "x": {"y": [{}]}}`,
		`{"clientId": "a", "clientId": "b"}`,
		`{"clientId": "a"`, `}`, ``,
		`{"a":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, oauth string) {
		data := []byte("{\"mcpServers\": {\"remote\": {\n  \"type\": \"http\",\n  \"url\": \"https://mcp.example/mcp\",\n  \"oauth\": " + oauth + "\n}}}")
		c, diags, err := ParseMCPServers(data, ".mcp.json")
		checkDiags(t, diags, err)
		if !json.Valid(data) {
			if err == nil {
				t.Fatalf("invalid JSON accepted: %s", data)
			}
			return
		}
		var v any
		_ = json.Unmarshal([]byte(oauth), &v)
		_, isObject := v.(map[string]any)
		if !isObject {
			// The value starts on line 4, after any newlines before it.
			line := 4 + strings.Count(oauth[:len(oauth)-len(strings.TrimLeft(oauth, " \t\r\n"))], "\n")
			found := false
			for _, d := range diags {
				if d.Field == "mcpServers.remote.oauth" && d.Line == line {
					found = true
				}
			}
			if !found {
				t.Fatalf("oauth %s: diagnostics %v: want one naming the field and line", oauth, diags)
			}
			if err == nil {
				if _, used := c.Servers["remote"]; used || len(c.Failed) != 1 {
					t.Fatalf("oauth %s: the server is used: %+v", oauth, c)
				}
			}
			return
		}
		if err != nil {
			// Only a problem of the oauth object itself (nesting) may fail it.
			if !strings.Contains(err.Error(), "nest") && !strings.Contains(err.Error(), "oauth") {
				t.Fatalf("oauth %s: %v", oauth, err)
			}
			return
		}
		s, ok := c.Servers["remote"]
		if !ok || s.URL != "https://mcp.example/mcp" || s.Type != "http" {
			t.Fatalf("the server is not read as written: %+v", c.Servers)
		}
		if got := s.OAuth(); !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace([]byte(oauth))) {
			t.Fatalf("oauth kept as %s, written as %s", got, oauth)
		}
	})
}
