// Package claudecompat holds the conformance test that compares what wharf
// loads with what the real Claude Code CLI loads: for every plugin of the
// real-world marketplaces beside the repository (../shared/realworld) and
// of the minimal cases in testdata/cases, the component set (commands,
// skills, agents, hook events, MCP and LSP servers), the names and the
// installed version. The cases where wharf is deliberately stricter are
// listed in docs/claude-compat.md and in the test; any other difference
// fails it.
package claudecompat
