package plugin

import (
	"fmt"
	"strings"
)

// Claude Code refuses third-party plugin names that pass as Anthropic's own
// (claude plugin validate reports them as errors): the marks "claude",
// "anthropic" and "anthropics" and the built-in prefix "cc-plugin" may not
// lead a name, the marks and the products "claude-code" and "claude-mods"
// may not be the whole name, and "official" may not stand beside a
// mark. A name that merely contains a mark as a word is a warning.
var (
	reservedLeads  = []string{"claude", "anthropic", "anthropics", "cc-plugin"}
	reservedWholes = []string{"claude", "anthropic", "anthropics", "claude-code", "claude-mods"}
	marks          = []string{"claude", "anthropic", "anthropics"}
)

// ReservedMarketplaceNames are the marketplace names Claude Code reserves
// for Anthropic's official, community and directory marketplaces (compared
// lower-cased, exactly). The plugins such a marketplace lists are
// Anthropic's own, so their names are not held against them.
var ReservedMarketplaceNames = []string{
	"claude-code-marketplace",
	"claude-code-plugins",
	"claude-plugins-official",
	"anthropic-marketplace",
	"anthropic-plugins",
	"agent-skills",
	"anthropic-agent-skills",
	"life-sciences",
	"knowledge-work-plugins",
	"claude-for-legal",
	"claude-for-financial-services",
	"financial-services-plugins",
	"first-party-plugins",
	"claude-tag-plugins",
	"claude-community",
	"claude-plugins-community",
	"healthcare",
	"anthropic-plugin-directory",
	"claude-plugin-directory",
}

// isReservedMarketplace reports a name of ReservedMarketplaceNames.
func isReservedMarketplace(name string) bool {
	n := strings.ToLower(name)
	for _, r := range ReservedMarketplaceNames {
		if n == r {
			return true
		}
	}
	return false
}

// NameVerdict is what Claude Code's validator says about a plugin name.
type NameVerdict int

const (
	NameOK        NameVerdict = iota
	NameLooksOwn              // a warning: a word of the name is a mark
	NameImitation             // an error: the name passes as Anthropic's own
)

// String names the verdict: "ok", "warning" or "error".
func (v NameVerdict) String() string {
	switch v {
	case NameLooksOwn:
		return "warning"
	case NameImitation:
		return "error"
	}
	return "ok"
}

// ClaudePluginName judges a plugin name as `claude plugin validate` does
// (Claude Code 2.1.332) and returns the verdict with a message that says
// what to do. Names are compared by their words: runs of ASCII letters and
// digits, lower-cased, so "Claude_Helper" and "claude.helper" read as
// "claude-helper".
func ClaudePluginName(name string) (NameVerdict, string) {
	lower := strings.ToLower(name)
	words := nameWords(lower)
	leads, wholes := squashedSet(reservedLeads), squashedSet(reservedWholes)
	longest := 0
	for w := range leads {
		longest = max(longest, len(w))
	}
	for w := range wholes {
		longest = max(longest, len(w))
	}
	joined := ""
	imitation := false
	for i, w := range words {
		joined += w
		if i == len(words)-1 {
			imitation = imitation || wholes[joined]
		} else {
			imitation = imitation || leads[joined]
		}
		if len(joined) > longest {
			break
		}
	}
	if imitation || besideOfficial(lower) || besideOfficial(strings.Join(words, "")) {
		return NameImitation, fmt.Sprintf("plugin name %q passes as one of Anthropic's own, and Claude Code refuses it: a third party's plugin name cannot start with %s, be %s, or put \"official\" beside \"claude\" or \"anthropic\"; name it for what it does",
			name, quoteList(reservedLeads, "-"), quoteList(reservedWholes, ""))
	}
	for _, w := range words {
		for _, m := range marks {
			if w == m {
				return NameLooksOwn, fmt.Sprintf("plugin name %q reads as one of Anthropic's own (Claude Code warns); name it for what it does", name)
			}
		}
	}
	return NameOK, ""
}

// besideOfficial reports "official" next to "claude" or "anthropic", with
// only separators between them.
func besideOfficial(s string) bool {
	for _, m := range []string{"claude", "anthropic"} {
		for i := 0; ; {
			j := strings.Index(s[i:], "official")
			if j < 0 {
				break
			}
			at := i + j
			before := strings.TrimRightFunc(s[:at], isSep)
			after := strings.TrimLeftFunc(s[at+len("official"):], isSep)
			if strings.HasSuffix(before, m) || strings.HasPrefix(after, m) {
				return true
			}
			i = at + 1
		}
	}
	return false
}

// isSep reports a rune that is not an ASCII letter or digit.
func isSep(r rune) bool { return r > 0x7f || !isAlnum(byte(r)) }

// nameWords splits s into its runs of ASCII letters and digits.
func nameWords(s string) []string {
	return strings.FieldsFunc(s, isSep)
}

func squashedSet(names []string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[strings.Join(nameWords(n), "")] = true
	}
	return m
}

func quoteList(words []string, suffix string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = fmt.Sprintf("%q", w+suffix)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// ComponentName is the namespaced name an agent registers a plugin's
// component under: "<plugin>:<name>" for commands, skills, agents, output
// styles and hooks, "plugin:<plugin>:<server>" for MCP and LSP servers
// (plugin components cannot pass as native tools or servers). pluginName is
// the plugin's namespace (Plugin.Namespace). It is the one place that
// namespaces a component.
func ComponentName(kind ComponentKind, pluginName, name string) string {
	switch kind {
	case KindMCPServer, KindLSPServer:
		return "plugin:" + pluginName + ":" + name
	}
	return pluginName + ":" + name
}
