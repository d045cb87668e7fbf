// Package layout is the one place that knows how wharf's home directory
// (WHARF_HOME, default ~/.wharf) is laid out. Every other package asks a
// Paths value for a path instead of joining names to the home itself, so
// the on-disk names below are spelled once. They never change: a home
// written by an earlier wharf must keep working.
//
//	<home>/
//	  settings.json               user-scope settings
//	  config.json|yaml|yml        wharf's own configuration file
//	  state.db                    bbolt: marketplaces, installed registry, trust pins
//	  .lock                       the cache's exclusive lock
//	  marketplaces/<name>/        one clone or catalog per marketplace
//	  marketplaces/.lock          held around marketplace changes
//	  cache/<mkt>/<plugin>/<ver>/ versioned plugin directories
//	  leases/                     running sessions' leases on cache versions
//	  data/<source>/<plugin>/     CLAUDE_PLUGIN_DATA, kept across updates
//	  plugin-config/<source>/<plugin>.json   userConfig values
//	  plugin-secrets/<source>/<plugin>.json  sensitive userConfig values
//	  agent/components.idx        the runtime's component index
//	  agent/components.gob        the index of earlier versions (removed on save)
//	  policy-decisions.memo       the commands' policy decision memo
//	  capabilities/<key>.json     capability sets of installed trees, by content digest
//	  policy/<host>[_<port>]/     cached policy bundles, one per server
//	  keys/*.pub                  trusted signing keys
//	  trusted-folders.json[.lock] folders the user trusted for project settings
//	  state/hooks-once/           markers of hooks that run once
//	  machine-id                  this machine's id in the fleet inventory
//	  server/                     default data directory of the server
//
// The package imports nothing of wharf's, so any package may use it.
package layout

import "path/filepath"

// The names under the home. They are spelled here only: other packages
// ask Paths for a path.
const (
	settingsFile       = "settings.json"
	stateDBFile        = "state.db"
	lockFile           = ".lock"
	marketplacesDir    = "marketplaces"
	cacheDir           = "cache"
	leasesDir          = "leases"
	dataDir            = "data"
	pluginConfigDir    = "plugin-config"
	pluginSecretsDir   = "plugin-secrets"
	agentDir           = "agent"
	agentIndexFile     = "components.idx"
	agentLegacyIndex   = "components.gob"
	policyMemoFile     = "policy-decisions.memo"
	capabilitiesDir    = "capabilities"
	policyDir          = "policy"
	keysDir            = "keys"
	trustedFoldersFile = "trusted-folders.json"
	stateDir           = "state"
	hooksOnceDir       = "hooks-once"
	machineIDFile      = "machine-id"
	inventoryState     = "inventory-report.json"
	mcpToolsFile       = "mcp-tools.json"
	inventoryLock      = "inventory-report.lock"
	serverDir          = "server"
)

// configFiles are the names of wharf's configuration file, in the order
// they are looked for; the first that exists is read.
var configFiles = []string{"config.json", "config.yaml", "config.yml"}

// Paths is a home directory and the paths under it, one method per path.
// The zero value has no home: every path is relative to the working
// directory, so callers that may run without a home check HasHome.
type Paths struct {
	home string
}

// New returns the Paths of the home directory home (used as given; make it
// absolute first when the working directory may change).
func New(home string) Paths { return Paths{home: home} }

// Home is the root of wharf's state.
func (p Paths) Home() string { return p.home }

// HasHome reports whether p names a home at all.
func (p Paths) HasHome() bool { return p.home != "" }

func (p Paths) join(elem ...string) string {
	return filepath.Join(append([]string{p.home}, elem...)...)
}

// Settings is the user-scope settings file.
func (p Paths) Settings() string { return p.join(settingsFile) }

// ConfigFiles are the candidate paths of wharf's configuration file, in
// the order they are looked for.
func (p Paths) ConfigFiles() []string {
	out := make([]string, len(configFiles))
	for i, n := range configFiles {
		out[i] = p.join(n)
	}
	return out
}

// StateDB is the bbolt file: known marketplaces, installed registry, trust pins.
func (p Paths) StateDB() string { return p.join(stateDBFile) }

// Lock is the file the cache locks exclusively while it changes.
func (p Paths) Lock() string { return p.join(lockFile) }

// Marketplaces holds one clone (or downloaded catalog) per marketplace.
func (p Paths) Marketplaces() string { return p.join(marketplacesDir) }

// MarketplacesLock is held exclusively around a marketplace change and
// shared by the commands that read the clones.
func (p Paths) MarketplacesLock() string { return p.join(marketplacesDir, lockFile) }

// Cache holds versioned plugin dirs: cache/<marketplace>/<plugin>/<version>/.
func (p Paths) Cache() string { return p.join(cacheDir) }

// Leases holds the leases running sessions take on cache versions.
func (p Paths) Leases() string { return p.join(leasesDir) }

// Data is a plugin's persistent data directory (CLAUDE_PLUGIN_DATA), keyed
// by source and name, not version, so it survives updates.
func (p Paths) Data(source, name string) string { return p.join(dataDir, source, name) }

// PluginConfig is the file of a plugin's plain userConfig values.
func (p Paths) PluginConfig(source, name string) string {
	return p.join(pluginConfigDir, source, name+".json")
}

// PluginSecrets is the file of a plugin's sensitive userConfig values.
func (p Paths) PluginSecrets(source, name string) string {
	return p.join(pluginSecretsDir, source, name+".json")
}

// AgentIndex is the runtime's index of the components of installed versions.
func (p Paths) AgentIndex() string { return p.join(agentDir, agentIndexFile) }

// AgentLegacyIndex is where earlier versions kept the component index.
func (p Paths) AgentLegacyIndex() string { return p.join(agentDir, agentLegacyIndex) }

// PolicyMemo keeps the policy decisions of the policy version in force
// between commands, so a command whose every decision is known compiles no
// Rego.
func (p Paths) PolicyMemo() string { return p.join(policyMemoFile) }

// Capabilities holds the capability sets and findings of installed plugin
// trees, one file per content digest (package load's Contents).
func (p Paths) Capabilities() string { return p.join(capabilitiesDir) }

// Accepted is the file of the plugin versions a user accepted with the
// capabilities they add (wharf update --accept, without a policy server).
func (p Paths) Accepted() string { return p.join("accepted.json") }

// PolicyBundles holds one directory per policy server, with its last bundle.
func (p Paths) PolicyBundles() string { return p.join(policyDir) }

// PolicyBundle is the directory of the policy server named name (see
// policy/remote.CacheDir for how a server URL becomes a name).
func (p Paths) PolicyBundle(name string) string { return p.join(policyDir, name) }

// Keys holds the trusted signing keys, one *.pub file each.
func (p Paths) Keys() string { return p.join(keysDir) }

// TrustedFolders lists the folders whose project settings the user trusts.
func (p Paths) TrustedFolders() string { return p.join(trustedFoldersFile) }

// TrustedFoldersLock is held around a change of TrustedFolders.
func (p Paths) TrustedFoldersLock() string { return p.join(trustedFoldersFile + lockFile) }

// HooksOnce holds the markers of hooks that are to run once.
func (p Paths) HooksOnce() string { return p.join(stateDir, hooksOnceDir) }

// MachineID is the file holding this machine's id in the fleet inventory.
func (p Paths) MachineID() string { return p.join(machineIDFile) }

// InventoryState is what background inventory reports remember: the hash
// of the last report sent and a pending one that failed.
func (p Paths) InventoryState() string { return p.join(inventoryState) }

// MCPTools is what the last agent session observed of its plugin MCP
// servers' tool definitions (hashes, pins, drift), for inventory reports.
func (p Paths) MCPTools() string { return p.join(stateDir, mcpToolsFile) }

// InventoryLock is held by the one inventory report running at a time.
func (p Paths) InventoryLock() string { return p.join(inventoryLock) }

// Server is the server's default data directory.
func (p Paths) Server() string { return p.join(serverDir) }
