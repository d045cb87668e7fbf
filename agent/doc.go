// Package agent is the runtime a coding agent embeds to get the approved
// plugin set and its live components: commands, skills, agents, output
// styles, hooks, and MCP and LSP server configurations.
//
// # Layers
//
// A load reads the three layers of wharf in order and keeps their failures
// apart:
//
//   - intent: the settings files by scope (managed, flag, local, project,
//     user), read with no network access;
//   - materialization: the installed registry and the read-only version
//     directories of the cache;
//   - active: the components of the plugins that are enabled, allowed by
//     policy, trusted and whose dependencies are active, merged after the
//     embedding agent's builtins, plus the user's, project's and managed
//     settings' own components.
//
// Every plugin gets a PluginStatus (active, demoted, failed or disabled) with
// its typed errors (*plugin.Error with the layer that failed): the row of the
// load pass (package load) that `wharf list` also uses, so the two say the
// same thing about every plugin. Which plugins may be active (policy, the
// revocations in Options.Revocations, trust, manifest, dependencies) is the
// load pass's; this package reads the admitted plugins' components and makes
// them live.
//
// # Policy
//
// A Runtime comes from Open, and Open needs a policy (Options.Policy): left
// out, Open fails (ErrNoPolicy) instead of running a session that nothing
// decides for. Open also reads the machine's managed layers itself (the
// system managed directory and Options.Settings.ExtraManagedDir) and puts
// the given policy under them: a request a managed layer denies is denied,
// and a plugin it forces on or off stays so, whatever the given policy says.
// The managed scope cannot be moved: Options.Settings.ManagedDir is empty or
// the system directory (ErrManagedDir otherwise).
//
// # Loaders
//
// CacheOnly is the startup path: the registry, a stat fingerprint check per
// plugin, and the installed manifests and components; no network, no
// re-hash. Two files keep it from redoing work an earlier session did:
// the policy engine's decision memo ($WHARF_HOME/policy-decisions.memo, one
// per home, shared with every wharf command; one OPA evaluation costs more
// than the rest of a plugin's load), read while the settings and registry
// are and saved after the load, and under $WHARF_HOME/agent a component
// index per version dir, keyed on its digest, its recorded fingerprint, its
// marketplace entry and the dirs substituted into it, so a plugin whose
// fingerprint still matches is not parsed again. Both are accelerators only:
// a damaged file reads as empty. Full re-hashes every plugin tree against
// its trust pin and parses every component, ignoring (and refreshing) the
// index. Both produce an immutable *Set; Runtime.Load swaps the new Set in
// atomically, so the full result replaces the cache-only one and no two
// views of the plugin set coexist.
//
// # Names
//
// Plugin commands, skills, agents and output styles are named
// "<plugin>:<name>"; plugin MCP and LSP servers "plugin:<plugin>:<server>";
// an MCP tool reaches the model as "mcp__plugin_<plugin>_<server>__<tool>"
// (ToolName). Plugins cannot register native tools: tools come only from MCP
// servers. User, project and managed components keep their bare names.
//
// Builtins (given by the embedding agent in Options.Builtins) come first and
// win. A component collides with a builtin of the same kind when any name it
// could be invoked by equals the builtin's name: for a plugin command, skill,
// agent or output style that is its namespaced name "<plugin>:<name>" and its
// bare name "<name>" (agents let a user type an unambiguous plugin command
// without its prefix, so a plugin "help" would shadow "/help"); for every
// other component it is its name. A colliding component is not loaded and is
// reported in Set.Skipped and in its plugin's status. Project components
// shadow user components of the same kind and name (the shadowed one is
// reported); plugin components never shadow each other, since their names are
// namespaced.
//
// # Reload
//
// Every activation (registering a command, arming a hook, starting a server)
// returns its own undo. Runtime.Load builds the complete new Set first, then
// activates what is new, swaps the Set in one step, and only then runs the
// undos of what is gone, last-in-first-out, so the hooks of the old set stay
// armed until the new set is in place. A component whose identity and content
// did not change keeps its activation: a reload never clears what user or
// managed settings configured. If an activation fails, the ones made by this
// reload are undone (LIFO) and the previous Set stays current. The end state
// depends only on the final configuration.
//
// A Runtime is safe for concurrent use; loads are serialized.
package agent
