package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wharfhq/wharf/internal/core/capability"
)

// pluginDirOf is the plugin directory validate was given: the path itself,
// or the plugin holding a .claude-plugin/plugin.json given as a file.
func pluginDirOf(path string) string {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return path
	}
	return filepath.Dir(filepath.Dir(path))
}

// printCapabilities lists a plugin's capability set and findings.
func printCapabilities(io streams, r *capability.Report) {
	s := r.Capabilities
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	for _, h := range s.Hooks {
		ev := h.Event
		if h.Matcher != "" {
			ev += "(" + h.Matcher + ")"
		}
		var notes []string
		if h.Interpreter != "" {
			notes = append(notes, "interpreter "+h.Interpreter)
		}
		if len(h.Runs) > 0 {
			notes = append(notes, "runs "+strings.Join(h.Runs, ", "))
		}
		if len(h.NetworkTools) > 0 {
			notes = append(notes, "network tools "+strings.Join(h.NetworkTools, ", "))
		}
		for _, f := range h.Fetches {
			notes = append(notes, "fetches "+fetchNote(f))
		}
		if h.DownloadAndRun {
			notes = append(notes, "downloads and runs code")
		}
		add("hook %s %s: %s%s", ev, h.Type, oneLine(h.Command), bracket(notes))
	}
	servers := func(kind string, l []capability.Server) {
		for _, v := range l {
			target := v.URL
			if target == "" {
				target = strings.TrimSpace(v.Command + " " + strings.Join(v.Args, " "))
			}
			var notes []string
			for _, f := range v.Fetches {
				notes = append(notes, "fetches "+fetchNote(f))
			}
			if len(v.Runs) > 0 {
				notes = append(notes, "runs "+strings.Join(v.Runs, ", "))
			}
			if target != "" {
				target = ": " + target
			}
			add("%s %s (%s)%s%s", kind, v.Name, v.Transport, target, bracket(notes))
		}
	}
	servers("mcp-server", s.MCPServers)
	servers("lsp-server", s.LSPServers)
	for _, e := range s.Executables {
		add("executable %s (%s)", e.Path, strings.Join(e.Why, ", "))
	}
	for _, l := range []struct {
		kind string
		ps   []capability.Prompt
	}{{"command", s.Commands}, {"skill", s.Skills}, {"agent", s.Agents}} {
		for _, p := range l.ps {
			if len(p.AllowedTools) > 0 {
				add("%s %s may use without asking: %s", l.kind, p.Name, strings.Join(p.AllowedTools, ", "))
			}
		}
	}
	if len(s.SensitiveConfig) > 0 {
		add("sensitive userConfig: %s", strings.Join(s.SensitiveConfig, ", "))
	}
	for _, h := range s.Hosts {
		state := "declared"
		if !h.Declared {
			state = "not declared in network.hosts"
		}
		add("host %s (%s; %s)", h.Host, state, strings.Join(h.From, ", "))
	}
	// A plugin with none (only prompts without tools) prints nothing.
	if len(lines) > 0 {
		io.printf("capabilities:\n")
		for _, l := range lines {
			io.printf("  %s\n", l)
		}
	}
	if len(r.Findings) > 0 {
		io.printf("findings (advisory):\n")
		for _, f := range r.Findings {
			io.printf("  %s\n", f)
		}
	}
}

func fetchNote(f capability.Fetch) string {
	if f.Pinned {
		return f.String()
	}
	return f.String() + " (unpinned)"
}

func bracket(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return " [" + strings.Join(notes, "; ") + "]"
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}
