// Package collect builds the inventory.Report a client sends to its server:
// the machine's identity (a random id kept in the home), and each installed
// plugin with its version, content digest, scope, how it got there, whether
// it is enabled and its state at the last load.
//
// Two kinds of home are read: a wharf home, from the rows the loader
// computes (FromStatus), and an unmodified Claude Code home
// (~/.claude/plugins/installed_plugins.json, enabledPlugins of its settings
// files and the cached trees, hashed here; ReadClaude).
//
// Sending, and remembering what was sent for the background reports, is
// here too (Send, State), so the CLI and the agent runtime share it.
package collect
