package plugin

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// HookIf is a hook's "if" field: one permission rule, "Tool" or
// "Tool(pattern)", that the tool call of the event must match for the hook
// to run (Claude Code evaluates it only on tool events: IfEvaluated).
//
// wharf evaluates the documented subset: a bare tool name (compared with
// tool_name), and a pattern for the tools whose primary input it knows:
// Bash (the command; "*" matches any run of characters, a trailing " *"
// also matches the bare command, and the legacy "prefix:*" matches the
// prefix alone or followed by a space), Read, Edit, MultiEdit, Write and
// NotebookEdit (the file path, gitignore-like: a pattern without "/" is
// matched with the base name; "**" crosses directories, "*" does not;
// "//x" is the absolute /x, "~/x" is under the home directory, any other
// pattern is relative to the project directory), and WebFetch
// ("domain:HOST", where HOST may start with "*.", or a glob over the URL).
type HookIf struct {
	Tool    string
	Pattern string
	// HasPattern is false for a bare tool name.
	HasPattern bool
}

var hookIfTool = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

// hookIfInput names the field of tool_input a pattern is matched with.
var hookIfInput = map[string]string{
	"Bash": "command", "Read": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
	"Write": "file_path", "NotebookEdit": "notebook_path", "WebFetch": "url",
}

// IfEvaluated reports whether Claude Code evaluates "if" on event ev: the
// events that carry a tool call. On the others a hook with "if" never runs.
func IfEvaluated(ev HookEvent) bool {
	switch ev {
	case HookPreToolUse, HookPostToolUse, HookPostToolUseFailure, HookPermissionRequest:
		return true
	}
	return false
}

// ParseHookIf parses an "if" rule. An error names what is wrong with it.
func ParseHookIf(rule string) (HookIf, error) {
	r := strings.TrimSpace(rule)
	if r == "" {
		return HookIf{}, fmt.Errorf("empty permission rule; write a tool name, as in Bash or Bash(git *)")
	}
	open := strings.IndexByte(r, '(')
	if open < 0 {
		if !hookIfTool().MatchString(r) {
			return HookIf{}, fmt.Errorf("%q is not a tool name (letters, digits, _ and -), as in Bash or Edit(*.ts)", rule)
		}
		return HookIf{Tool: r}, nil
	}
	if !strings.HasSuffix(r, ")") {
		return HookIf{}, fmt.Errorf("%q opens \"(\" without closing it at the end, as in Bash(git *)", rule)
	}
	tool, pat := r[:open], r[open+1:len(r)-1]
	if !hookIfTool().MatchString(tool) {
		return HookIf{}, fmt.Errorf("%q: %q is not a tool name (letters, digits, _ and -)", rule, tool)
	}
	if pat == "" {
		return HookIf{}, fmt.Errorf("%q has an empty pattern; write %s alone to match every call", rule, tool)
	}
	return HookIf{Tool: tool, Pattern: pat, HasPattern: true}, nil
}

// Supported returns nil when wharf can evaluate the rule, else why not.
func (r HookIf) Supported() error {
	if !r.HasPattern || r.Pattern == "*" {
		return nil
	}
	if _, ok := hookIfInput[r.Tool]; !ok {
		return fmt.Errorf("wharf evaluates patterns only for Bash, Read, Edit, MultiEdit, Write, NotebookEdit and WebFetch, not %s(...)", r.Tool)
	}
	return nil
}

// Match reports whether the tool call (tool_name and tool_input of the
// event) matches the rule. dir is the project directory and home the user's
// home, for relative and "~/" file patterns. An unsupported rule matches by
// its tool name alone.
func (r HookIf) Match(toolName string, toolInput json.RawMessage, dir, home string) bool {
	if toolName != r.Tool {
		return false
	}
	if !r.HasPattern || r.Pattern == "*" || r.Supported() != nil {
		return true
	}
	var in map[string]any
	if json.Unmarshal(toolInput, &in) != nil {
		return false
	}
	v, _ := in[hookIfInput[r.Tool]].(string)
	switch r.Tool {
	case "Bash":
		return matchCommand(r.Pattern, v)
	case "WebFetch":
		return matchURL(r.Pattern, v)
	default:
		return v != "" && matchFile(r.Pattern, v, dir, home)
	}
}

func matchCommand(pat, cmd string) bool {
	cmd = strings.TrimSpace(cmd)
	if p, ok := strings.CutSuffix(pat, ":*"); ok {
		return cmd == p || strings.HasPrefix(cmd, p+" ")
	}
	if p, ok := strings.CutSuffix(pat, " *"); ok && cmd == p {
		return true
	}
	return globRE(pat, false).MatchString(cmd)
}

func matchURL(pat, raw string) bool {
	if host, ok := strings.CutPrefix(pat, "domain:"); ok {
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			return false
		}
		h := strings.ToLower(u.Hostname())
		host = strings.ToLower(host)
		if rest, ok := strings.CutPrefix(host, "*."); ok {
			return strings.HasSuffix(h, "."+rest)
		}
		return h == host
	}
	return globRE(pat, false).MatchString(raw)
}

func matchFile(pat, file, dir, home string) bool {
	switch {
	case strings.HasPrefix(pat, "//"):
		pat = pat[1:]
	case strings.HasPrefix(pat, "~/"):
		if home == "" {
			return false
		}
		pat = filepath.ToSlash(home) + pat[1:]
	case !strings.Contains(pat, "/"):
		return globRE(pat, true).MatchString(path.Base(filepath.ToSlash(file)))
	default:
		if dir == "" {
			return false
		}
		pat = path.Join(filepath.ToSlash(dir), strings.TrimPrefix(pat, "/"))
	}
	f := filepath.ToSlash(file)
	if !path.IsAbs(f) && dir != "" {
		f = path.Join(filepath.ToSlash(dir), f)
	}
	return globRE(pat, true).MatchString(path.Clean(f))
}

// globRE turns a glob into an anchored expression: "*" is any run of
// characters (not "/" when paths is set), "**" any run including "/", "?"
// one character.
func globRE(pat string, paths bool) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	rs := []rune(pat)
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; {
		case c == '*' && i+1 < len(rs) && rs[i+1] == '*':
			i++
			if paths && i+1 < len(rs) && rs[i+1] == '/' {
				i++
				b.WriteString("(?:.*/)?")
				continue
			}
			b.WriteString(".*")
		case c == '*' && paths:
			b.WriteString("[^/]*")
		case c == '*':
			b.WriteString(".*")
		case c == '?' && paths:
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile("(?s)" + b.String())
	if err != nil {
		return regexp.MustCompile(`^\z.`) // matches nothing
	}
	return re
}
