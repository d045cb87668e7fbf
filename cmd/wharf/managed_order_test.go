package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The further managed directory (WHARF_MANAGED_DIR) ranks below the
// policy server the system managed directory names: where the higher
// layer decides, a forced enabledPlugins state, the user's directory
// cannot overrule the administrator's server. Before, it ranked above the
// server, so forcing a plugin on there undid the server forcing it off.
func TestExtraManagedDirRanksBelowTheSystemServer(t *testing.T) {
	srv := newPolicyAPI(t)
	srv.setLayer("org", 0, `{"enabledPlugins": {"tool@corp": false}}`)
	c := newPolicyClient(t, srv.agent)
	system := t.TempDir()
	c.withSystemDir(system)
	writeFile(t, filepath.Join(system, "managed-settings.json"),
		`{"policyUrl": "`+srv.hs.URL+`", "policyKey": "`+srv.key.KeyID+`"}`)
	extra := t.TempDir()
	writeFile(t, filepath.Join(extra, "managed-settings.json"), `{"enabledPlugins": {"tool@corp": true}}`)
	c.env = append(c.env, "WHARF_MANAGED_DIR="+extra)

	corp := localMarketplace(t, t.TempDir(), "corp")
	if code, out, stderr := c.run("marketplace", "add", corp); code != 0 {
		t.Fatalf("marketplace add: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr := c.run("install", "tool@corp")
	if code != 3 || !strings.Contains(stderr, "policy layer org, rule enabledPlugins") {
		t.Fatalf("the server forces tool@corp off; WHARF_MANAGED_DIR must not force it on: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = c.run("policy", "check", "tool@corp")
	if !strings.Contains(out, "layer managed_extra forces tool@corp on, ignored: layer org above it forces it off") {
		t.Fatalf("policy check must show the user's layer below the server's:\n%s", out)
	}
}
