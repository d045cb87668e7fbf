package plugin

import (
	"encoding/json"
	"testing"
)

// FuzzParseLSPServers: a hostile .lsp.json is refused with diagnostics,
// never a panic; what is accepted has a command per server and survives a
// round trip through its JSON form.
func FuzzParseLSPServers(f *testing.F) {
	f.Add([]byte(`{"lspServers":{"go":{"command":"gopls","args":["serve"],"extensionToLanguage":{".go":"go"},"settings":{"x":1}}}}`))
	f.Add([]byte(`{"go":{"command":"gopls","transport":"socket","env":{"GOFLAGS":"-mod=mod"},"initializationOptions":{"a":[1,2]}}}`))
	f.Add([]byte(`{"go":{"command":"gopls","transport":"pigeon"}}`))
	f.Add([]byte(`{"go":{"args":[]}}`))
	f.Add([]byte(`{"lspServers":{"bad name!":{"command":"x"},"ok":{"command":"y","extra":true}}}`))
	f.Add([]byte(`{"lspServers":[]}`))
	f.Add([]byte(`{"a":{"command":"x"},"a":{"command":"y"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, diags, err := ParseLSPServers(data, ".lsp.json")
		checkSyntaxAgreement(t, data, err)
		checkDiags(t, diags, err)
		if err != nil {
			if c != nil {
				t.Fatalf("error %v with a config", err)
			}
			return
		}
		for name, s := range c.Servers {
			if s.Command == "" {
				t.Fatalf("server %q accepted without a command", name)
			}
			if s.Transport != "" && s.Transport != "stdio" && s.Transport != "socket" {
				t.Fatalf("server %q accepted with transport %q", name, s.Transport)
			}
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		c2, _, err := ParseLSPServers(out, "again.lsp.json")
		if err != nil || len(c2.Servers) != len(c.Servers) {
			t.Fatalf("re-parse of %s: %v", out, err)
		}
	})
}
