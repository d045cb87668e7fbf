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
// its typed errors (ErrorDetail, from a *plugin.Error with the layer that
// failed): the row of the load pass that `wharf list` also uses, so the two
// say the same thing about every plugin. Which plugins may be active
// (policy, the revocations of the signed policy bundle, trust, manifest,
// dependencies) is the load pass's; this package reads the admitted
// plugins' components and makes them live.
//
// # Embedding
//
// A program outside wharf needs only this package (and plugin, for the
// component kinds and ids). It names a wharf home and a policy:
//
//	pol, err := agent.LoadPolicy()               // or LoadPolicy("org.rego", "team.json")
//	r, err := agent.Open(agent.Options{Home: home, Project: dir, Policy: pol, Activator: a})
//	set, err := r.Load(ctx, agent.CacheOnly)
//
// Open reads the rest from the home, as wharf's own commands do: the
// installed registry (the home's bbolt file, opened read-only and held only
// while a load reads it, so a session never locks `wharf install` out), the
// settings of every scope (managed, flag, local and project from Project,
// user from Home), the sources of the known marketplaces (read again at
// every load: policy on marketplace sources, strictKnownMarketplaces and
// blockedMarketplaces, matches them) and the plugins' cache, whose version
// directories the session leases so `wharf gc` keeps them (a home whose
// cache cannot take the lease loads all the same, with a warning that
// nothing is leased). A home nothing was installed in reads as empty. The
// runtime links no code that fetches (no git client, no OpenPGP), so it
// does not read the marketplaces' catalogs: a program that loads plugins
// whose marketplace entry defines their components (strict: false) gives
// those entries in Options.Entries. Policy layers a policy server hands out
// (`wharf policy pull`) and their revocations reach wharf's own commands,
// not an embedder's Runtime.
//
// # Policy
//
// A Runtime comes from Open, and Open needs a policy (Options.Policy): left
// out, Open fails (ErrNoPolicy) instead of running a session that nothing
// decides for. A Policy comes from LoadPolicy: the program's own layers (a
// settings file in the managed-settings.json format, a .rego file of admin
// rules, or a directory laid out like the managed directory), read and
// checked when it is made, so a bad rule is an error naming its file.
//
// Open reads the machine's managed layers itself (the system managed
// directory and Options.ExtraManagedDir) and puts the program's layers
// under them in one policy engine: a request a managed layer denies is
// denied, and a plugin it forces on or off stays so, whatever the program's
// layers say; they can only tighten. The managed scope cannot be moved
// (there is no option for it). Each decision is one Rego evaluation, kept in
// the home's decision memo (see Loaders) unless Options.NoMemo is set; every
// Runtime.Load after the first re-reads the managed and the program's
// layers, so a policy change takes effect at an explicit reload.
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
