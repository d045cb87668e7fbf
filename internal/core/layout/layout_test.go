package layout

import (
	"path/filepath"
	"testing"
)

// TestNamesOnDisk pins every path to the name it has always had: a home
// written by an earlier wharf must keep working.
func TestNamesOnDisk(t *testing.T) {
	home := filepath.FromSlash("/h")
	p := New(home)
	j := func(elem ...string) string { return filepath.Join(append([]string{home}, elem...)...) }
	for _, c := range []struct{ got, want string }{
		{p.Home(), home},
		{p.Settings(), j("settings.json")},
		{p.StateDB(), j("state.db")},
		{p.Lock(), j(".lock")},
		{p.Marketplaces(), j("marketplaces")},
		{p.MarketplacesLock(), j("marketplaces", ".lock")},
		{p.Cache(), j("cache")},
		{p.Leases(), j("leases")},
		{p.Data("corp", "fmt"), j("data", "corp", "fmt")},
		{p.PluginConfig("corp", "fmt"), j("plugin-config", "corp", "fmt.json")},
		{p.PluginSecrets("corp", "fmt"), j("plugin-secrets", "corp", "fmt.json")},
		{p.AgentIndex(), j("agent", "components.idx")},
		{p.AgentLegacyIndex(), j("agent", "components.gob")},
		{p.PolicyMemo(), j("policy-decisions.memo")},
		{p.Capabilities(), j("capabilities")},
		{p.PolicyBundles(), j("policy")},
		{p.PolicyBundle("wharf.corp_8443"), j("policy", "wharf.corp_8443")},
		{p.Keys(), j("keys")},
		{p.TrustedFolders(), j("trusted-folders.json")},
		{p.TrustedFoldersLock(), j("trusted-folders.json.lock")},
		{p.HooksOnce(), j("state", "hooks-once")},
		{p.MachineID(), j("machine-id")},
		{p.InventoryState(), j("inventory-report.json")},
		{p.InventoryLock(), j("inventory-report.lock")},
		{p.MCPTools(), j("state", "mcp-tools.json")},
		{p.Server(), j("server")},
	} {
		if c.got != c.want {
			t.Errorf("path %s, want %s", c.got, c.want)
		}
	}
	cf := p.ConfigFiles()
	if len(cf) != 3 || cf[0] != j("config.json") || cf[1] != j("config.yaml") || cf[2] != j("config.yml") {
		t.Errorf("config files %v", cf)
	}
	if New("").HasHome() || !p.HasHome() {
		t.Error("HasHome wrong")
	}
}
