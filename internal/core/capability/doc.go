// Package capability reads what a plugin version can do from its tree,
// never from what it claims: the hooks it runs and what they run, the MCP
// and LSP servers it starts or reaches and the packages they fetch at run
// time, the executables it ships, the tools its commands, skills and agents
// may use, the userConfig keys it marks sensitive, and the hosts it names.
// The result (a Set) is deterministic: the same tree gives the same JSON,
// byte for byte, so two versions can be compared (Diff lists what a new
// version adds).
//
// It also scans the tree for content findings, advisory and each naming a
// file and a line: invisible or bidirectional Unicode, instructions hidden
// in HTML comments, encoded scripts, download-and-run in hooks, hooks that
// read credentials, and hosts reached but not declared in plugin.json's
// network.hosts.
//
// Hook, MCP and LSP definitions are read through package plugin (the same
// parsers and the same places Claude Code reads them from); the Markdown
// front matter through plugin.ParseFrontMatter.
package capability
