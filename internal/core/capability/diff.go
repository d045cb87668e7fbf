package capability

import (
	"fmt"
	"sort"
	"strings"
)

// Change is one thing a new version adds over an old one.
type Change struct {
	// Kind is hook, mcp-server, lsp-server, executable, allowed-tools,
	// sensitive-config or host.
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func (c Change) String() string { return c.Message }

// Diff lists what new adds over old: hooks, servers (new, or changed in
// what they run or reach), executables, allowed tools, sensitive userConfig
// keys and hosts. What a version removes is not listed: it gives nothing.
// A version whose diff is empty needs no approval beyond old's. The order
// is stable.
func Diff(old, new *Set) []Change {
	var out []Change
	add := func(kind, format string, args ...any) {
		out = append(out, Change{Kind: kind, Message: fmt.Sprintf(format, args...)})
	}
	oldHooks := map[string]bool{}
	for _, h := range old.Hooks {
		oldHooks[hookIdentity(h)] = true
	}
	for _, h := range new.Hooks {
		if !oldHooks[hookIdentity(h)] {
			add("hook", "adds hook %s", describeHook(h))
		}
	}
	servers := func(kind, label string, o, n []Server) {
		om := map[string]Server{}
		for _, s := range o {
			om[s.Name] = s
		}
		for _, s := range n {
			prev, ok := om[s.Name]
			switch {
			case !ok:
				add(kind, "adds %s `%s` (%s)", label, s.Name, describeServer(s))
			case describeServer(prev) != describeServer(s):
				add(kind, "changes %s `%s` to (%s)", label, s.Name, describeServer(s))
			}
		}
	}
	servers("mcp-server", "MCP server", old.MCPServers, new.MCPServers)
	servers("lsp-server", "LSP server", old.LSPServers, new.LSPServers)
	oldExec := map[string]bool{}
	for _, e := range old.Executables {
		oldExec[e.Path] = true
	}
	for _, e := range new.Executables {
		if !oldExec[e.Path] {
			add("executable", "adds executable %s (%s)", e.Path, strings.Join(e.Why, ", "))
		}
	}
	prompts := func(label string, o, n []Prompt) {
		om := map[string]map[string]bool{}
		for _, p := range o {
			m := om[p.Name]
			if m == nil {
				m = map[string]bool{}
				om[p.Name] = m
			}
			for _, t := range p.AllowedTools {
				m[t] = true
			}
		}
		for _, p := range n {
			var gained []string
			for _, t := range p.AllowedTools {
				if !om[p.Name][t] {
					gained = append(gained, t)
				}
			}
			if len(gained) == 0 {
				continue
			}
			if _, ok := om[p.Name]; ok {
				add("allowed-tools", "%s %s may now use %s without asking", label, p.Name, strings.Join(gained, ", "))
			} else {
				add("allowed-tools", "adds %s %s allowed to use %s without asking", label, p.Name, strings.Join(gained, ", "))
			}
		}
	}
	prompts("command", old.Commands, new.Commands)
	prompts("skill", old.Skills, new.Skills)
	prompts("agent", old.Agents, new.Agents)
	oldCfg := map[string]bool{}
	for _, k := range old.SensitiveConfig {
		oldCfg[k] = true
	}
	for _, k := range new.SensitiveConfig {
		if !oldCfg[k] {
			add("sensitive-config", "asks for a new sensitive setting %s", k)
		}
	}
	oldHosts := map[string]bool{}
	for _, h := range old.Hosts {
		oldHosts[h.Host] = true
	}
	for _, h := range new.Hosts {
		if !oldHosts[h.Host] {
			add("host", "reaches a new host %s (%s)", h.Host, strings.Join(h.From, ", "))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return kindRank(out[i].Kind) < kindRank(out[j].Kind) })
	return out
}

// Summary joins a diff into one sentence: "adds hook ...; adds MCP server ...".
func Summary(changes []Change) string {
	parts := make([]string, len(changes))
	for i, c := range changes {
		parts[i] = c.Message
	}
	return strings.Join(parts, "; ")
}

func kindRank(k string) int {
	for i, x := range []string{"hook", "mcp-server", "lsp-server", "executable", "allowed-tools", "sensitive-config", "host"} {
		if x == k {
			return i
		}
	}
	return 99
}

// hookIdentity is what makes two hooks the same capability: when they run,
// on what, and what they run (not the file that defines them).
func hookIdentity(h Hook) string {
	return h.Event + "\x00" + h.Matcher + "\x00" + h.Type + "\x00" + h.Command
}

// describeHook reads as "PreToolUse(Bash) running scripts/sync.sh".
func describeHook(h Hook) string {
	s := h.Event
	if h.Matcher != "" {
		s += "(" + h.Matcher + ")"
	}
	switch h.Type {
	case "command":
		if len(h.Runs) > 0 {
			s += " running " + strings.Join(h.Runs, ", ")
		} else {
			s += " running `" + clip(h.Command) + "`"
		}
		if len(h.Fetches) > 0 {
			s += " (fetches " + fetchList(h.Fetches) + ")"
		}
		if h.DownloadAndRun {
			s += " (downloads and runs code)"
		}
	case "http":
		s += " calling " + h.Command
	case "mcp_tool":
		s += " calling MCP tool " + h.Command
	default:
		s += " (" + h.Type + ")"
	}
	return s
}

// describeServer reads as "npx -y sync-mcp@latest" or "https://host/mcp".
func describeServer(s Server) string {
	if s.URL != "" {
		return s.Transport + " " + s.URL
	}
	return strings.TrimSpace(s.Command + " " + strings.Join(s.Args, " "))
}

func fetchList(fs []Fetch) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, ", ")
}
