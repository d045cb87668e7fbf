package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/lazyre"
	"github.com/wharfhq/wharf/plugin"
)

// The managed keys that deny a plugin by what its tree can do (package
// capability), read by the policy engine from each layer's documents
// (package settings keeps them as written and warns when a user or project
// file sets them):
//
//	"deniedCapabilities": [
//	  {"kind": "mcp-runtime-fetch"},
//	  {"kind": "hook", "event": "PreToolUse", "matcher": "Bash", "except": ["x@corp"]},
//	  {"kind": "host", "outside": ["*.corp.example"]}
//	],
//	"requireDeclaredHosts": true,
//	"deniedFindings": ["download-and-run"]
//
// They decide install and load requests that carry the plugin's Content:
// every entry of every layer adds its denials (layers only add reasons), and
// an entry's except exempts plugins from that entry alone. A value that
// cannot be read fails closed: an invalid deniedCapabilities refuses every
// plugin, an invalid requireDeclaredHosts counts as true, and a
// deniedFindings that is not a list of known kinds denies every finding.
const (
	KeyDeniedCapabilities   = "deniedCapabilities"
	KeyRequireDeclaredHosts = "requireDeclaredHosts"
	KeyDeniedFindings       = "deniedFindings"
)

// CapabilityKinds are the kinds of a deniedCapabilities entry, each with
// the fields it takes besides kind and except.
var CapabilityKinds = map[string][]string{
	"hook":              {"event", "matcher", "type"},
	"mcp-server":        {"transport"},
	"lsp-server":        nil,
	"runtime-fetch":     {"unpinned"},
	"mcp-runtime-fetch": {"unpinned"},
	"executable":        nil,
	"allowed-tool":      {"tool"},
	"sensitive-config":  nil,
	"host":              {"outside"},
}

func capabilityKindNames() string {
	names := make([]string, 0, len(CapabilityKinds))
	for k := range CapabilityKinds {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

var (
	hookTypes  = []string{"command", "http", "prompt", "agent", "mcp_tool"}
	transports = []string{"stdio", "http", "sse", "ws"}
	// hostPatternRE is a network.hosts-style pattern: a name, or "*."
	// and a name, with an optional port.
	hostPatternRE = lazyre.New(`^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?$`)
)

// capabilityDenial is one deniedCapabilities entry.
type capabilityDenial struct {
	field     string // "deniedCapabilities[2]", for reasons
	kind      string
	event     string
	matcher   string
	hookType  string
	transport string
	tool      string
	unpinned  bool
	outside   []string
	except    map[string]bool
}

// capabilityRules are one layer's capability keys, merged over its
// documents (managed-settings.json and its fragments): entries add up.
type capabilityRules struct {
	denials              []capabilityDenial
	requireDeclaredHosts bool
	// deniedFindings are the finding kinds denied; allFindings: every
	// kind (deniedFindings could not be read).
	deniedFindings []string
	allFindings    bool
	// invalid: deniedCapabilities could not be read, so every plugin is
	// refused; invalidWhy names where.
	invalid    bool
	invalidWhy string
}

func (c *capabilityRules) empty() bool {
	return len(c.denials) == 0 && !c.requireDeclaredHosts && len(c.deniedFindings) == 0 && !c.allFindings && !c.invalid
}

// parseCapabilityRules reads the capability keys of one settings document
// (file names it in messages) into c. It returns one message per problem,
// each naming the file, the key and the index.
func (c *capabilityRules) parse(file string, doc map[string]json.RawMessage) []string {
	var issues []string
	bad := func(field, format string, args ...any) {
		issues = append(issues, fmt.Sprintf("%s: %s: %s", file, field, fmt.Sprintf(format, args...)))
	}
	if raw, ok := doc[KeyDeniedCapabilities]; ok {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil || items == nil {
			bad(KeyDeniedCapabilities, "must be a list of {\"kind\": ...} objects, got %s; every plugin is refused until it is fixed (fail closed)", jsonKindOf(raw))
			c.fail(KeyDeniedCapabilities)
		}
		for i, it := range items {
			field := fmt.Sprintf("%s[%d]", KeyDeniedCapabilities, i)
			d, msg := parseDenial(field, it)
			if msg != "" {
				bad(field, "%s; every plugin is refused until it is fixed (fail closed)", msg)
				c.fail(field)
				continue
			}
			c.denials = append(c.denials, d)
		}
	}
	if raw, ok := doc[KeyRequireDeclaredHosts]; ok {
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			bad(KeyRequireDeclaredHosts, "must be true or false, got %s; treated as true (fail closed)", jsonKindOf(raw))
			b = true
		}
		c.requireDeclaredHosts = c.requireDeclaredHosts || b
	}
	if raw, ok := doc[KeyDeniedFindings]; ok {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil || items == nil {
			bad(KeyDeniedFindings, "must be a list of finding kinds (%s), got %s; every finding is denied until it is fixed (fail closed)",
				strings.Join(capability.FindingKinds, ", "), jsonKindOf(raw))
			c.allFindings = true
		}
		for i, it := range items {
			field := fmt.Sprintf("%s[%d]", KeyDeniedFindings, i)
			var k string
			if err := json.Unmarshal(it, &k); err != nil {
				bad(field, "must be a finding kind string, got %s; every finding is denied until it is fixed (fail closed)", jsonKindOf(it))
				c.allFindings = true
				continue
			}
			if !slices.Contains(capability.FindingKinds, k) {
				bad(field, "unknown finding kind %q (known: %s); every finding is denied until it is fixed (fail closed)",
					k, strings.Join(capability.FindingKinds, ", "))
				c.allFindings = true
				continue
			}
			if !slices.Contains(c.deniedFindings, k) {
				c.deniedFindings = append(c.deniedFindings, k)
			}
		}
		sort.Strings(c.deniedFindings)
	}
	return issues
}

func (c *capabilityRules) fail(field string) {
	if !c.invalid {
		c.invalid, c.invalidWhy = true, field
	}
}

// parseDenial reads one deniedCapabilities entry; msg says what is wrong.
func parseDenial(field string, raw json.RawMessage) (d capabilityDenial, msg string) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return d, fmt.Sprintf("must be an object {\"kind\": ...}, got %s", jsonKindOf(raw))
	}
	d.field = field
	kraw, ok := obj["kind"]
	if !ok {
		return d, "needs a \"kind\" (one of " + capabilityKindNames() + ")"
	}
	if err := json.Unmarshal(kraw, &d.kind); err != nil {
		return d, fmt.Sprintf("kind: must be a string, got %s", jsonKindOf(kraw))
	}
	fields, known := CapabilityKinds[d.kind]
	if !known {
		return d, fmt.Sprintf("kind: unknown kind %q (known: %s)", d.kind, capabilityKindNames())
	}
	str := func(k string, dst *string, allowed []string) string {
		if err := json.Unmarshal(obj[k], dst); err != nil || *dst == "" {
			return fmt.Sprintf("%s: must be a non-empty string, got %s", k, jsonKindOf(obj[k]))
		}
		if allowed != nil && !slices.Contains(allowed, *dst) {
			return fmt.Sprintf("%s: %q is not one of %s", k, *dst, strings.Join(allowed, ", "))
		}
		return ""
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "kind" {
			continue
		}
		if k != "except" && !slices.Contains(fields, k) {
			takes := "except"
			if len(fields) > 0 {
				takes = strings.Join(fields, ", ") + ", except"
			}
			return d, fmt.Sprintf("%s: not a field of kind %q (it takes: %s)", k, d.kind, takes)
		}
		var m string
		switch k {
		case "event":
			events := make([]string, len(plugin.HookEvents))
			for i, e := range plugin.HookEvents {
				events[i] = string(e)
			}
			m = str(k, &d.event, events)
		case "matcher":
			m = str(k, &d.matcher, nil)
		case "type":
			m = str(k, &d.hookType, hookTypes)
		case "transport":
			m = str(k, &d.transport, transports)
		case "tool":
			m = str(k, &d.tool, nil)
		case "unpinned":
			if err := json.Unmarshal(obj[k], &d.unpinned); err != nil || bytes.Equal(bytes.TrimSpace(obj[k]), []byte("null")) {
				m = fmt.Sprintf("unpinned: must be true or false, got %s", jsonKindOf(obj[k]))
			}
		case "outside":
			var l []string
			if err := json.Unmarshal(obj[k], &l); err != nil || len(l) == 0 {
				m = fmt.Sprintf("outside: must be a non-empty list of host patterns such as \"*.corp.example\", got %s (leave it out to deny every host)", jsonKindOf(obj[k]))
				break
			}
			for j, p := range l {
				if !hostPatternRE.MatchString(p) {
					m = fmt.Sprintf("outside[%d]: %q is not a host pattern such as \"api.corp.example\", \"*.corp.example\" or \"host:8443\" (lower case)", j, p)
					break
				}
			}
			d.outside = l
		case "except":
			var l []string
			if err := json.Unmarshal(obj[k], &l); err != nil || l == nil {
				m = fmt.Sprintf("except: must be a list of plugin ids such as \"tool@corp\", got %s", jsonKindOf(obj[k]))
				break
			}
			d.except = map[string]bool{}
			for j, s := range l {
				id, err := plugin.ParseID(s)
				if err != nil {
					m = fmt.Sprintf("except[%d]: %q is not a plugin id name@marketplace", j, s)
					break
				}
				d.except[id.String()] = true
			}
		}
		if m != "" {
			return d, m
		}
	}
	if d.kind == "allowed-tool" && d.tool == "" {
		return d, "kind \"allowed-tool\" needs a \"tool\" such as \"Bash\""
	}
	return d, ""
}

// jsonKindOf names the JSON type of raw for messages.
func jsonKindOf(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// capabilityHit is one reason a layer's capability keys deny a plugin.
type capabilityHit struct {
	rule, message string
}

// hits lists why c denies the plugin id with content, in a stable order.
func (c *capabilityRules) hits(id string, content *Content) []capabilityHit {
	var out []capabilityHit
	seen := map[string]bool{}
	add := func(rule, msg string) {
		if !seen[rule+"\x00"+msg] {
			seen[rule+"\x00"+msg] = true
			out = append(out, capabilityHit{rule: rule, message: msg})
		}
	}
	set := &content.Capabilities
	for i := range c.denials {
		d := &c.denials[i]
		if d.except[id] {
			continue
		}
		for _, what := range d.match(set) {
			add(KeyDeniedCapabilities, fmt.Sprintf("%s, which %s denies", what, d.field))
		}
	}
	if c.requireDeclaredHosts {
		for _, h := range set.Hosts {
			if !h.Declared {
				add(KeyRequireDeclaredHosts, fmt.Sprintf("reaches host %s (%s), which network.hosts does not declare; requireDeclaredHosts is set",
					h.Host, strings.Join(h.From, ", ")))
			}
		}
	}
	if c.allFindings || len(c.deniedFindings) > 0 {
		for _, f := range content.Findings {
			if c.allFindings || slices.Contains(c.deniedFindings, f.Kind) {
				add(KeyDeniedFindings, fmt.Sprintf("finding %s at %s, which deniedFindings denies", f.Kind, f.String()))
			}
		}
	}
	return out
}

// match describes each capability of set the entry names.
func (d *capabilityDenial) match(set *capability.Set) []string {
	var out []string
	switch d.kind {
	case "hook":
		for _, h := range set.Hooks {
			if d.event != "" && h.Event != d.event || d.hookType != "" && h.Type != d.hookType ||
				d.matcher != "" && !hookMatcherCovers(h.Matcher, d.matcher) {
				continue
			}
			out = append(out, describeHook(h))
		}
	case "mcp-server":
		for _, s := range set.MCPServers {
			if d.transport == "" || s.Transport == d.transport {
				out = append(out, describeServer("MCP", s))
			}
		}
	case "lsp-server":
		for _, s := range set.LSPServers {
			out = append(out, describeServer("LSP", s))
		}
	case "runtime-fetch", "mcp-runtime-fetch":
		fetches := func(what string, fs []capability.Fetch) {
			for _, f := range fs {
				if d.unpinned && f.Pinned {
					continue
				}
				how := "a package"
				if !f.Pinned {
					how = "an unpinned package"
				}
				out = append(out, fmt.Sprintf("%s fetches %s at run time (%s)", what, how, f))
			}
		}
		for _, s := range set.MCPServers {
			fetches(fmt.Sprintf("MCP server `%s`", s.Name), s.Fetches)
		}
		if d.kind == "runtime-fetch" {
			for _, s := range set.LSPServers {
				fetches(fmt.Sprintf("LSP server `%s`", s.Name), s.Fetches)
			}
			for _, h := range set.Hooks {
				fetches(hookName(h), h.Fetches)
			}
		}
	case "executable":
		for _, e := range set.Executables {
			out = append(out, fmt.Sprintf("ships executable %s (%s)", e.Path, strings.Join(e.Why, ", ")))
		}
	case "allowed-tool":
		for _, l := range []struct {
			what string
			ps   []capability.Prompt
		}{{"command", set.Commands}, {"skill", set.Skills}, {"agent", set.Agents}} {
			for _, p := range l.ps {
				for _, t := range p.AllowedTools {
					if t == d.tool || strings.HasPrefix(t, d.tool+"(") {
						out = append(out, fmt.Sprintf("%s `%s` may use %s without asking", l.what, p.Name, t))
					}
				}
			}
		}
	case "sensitive-config":
		for _, k := range set.SensitiveConfig {
			out = append(out, fmt.Sprintf("asks for the sensitive setting `%s`", k))
		}
	case "host":
		for _, h := range set.Hosts {
			if len(d.outside) > 0 && capability.HostMatches(h.Host, d.outside) {
				continue
			}
			where := ""
			if len(d.outside) > 0 {
				where = ", outside " + strings.Join(d.outside, ", ")
			}
			out = append(out, fmt.Sprintf("reaches host %s (%s)%s", h.Host, strings.Join(h.From, ", "), where))
		}
	}
	return out
}

// hookMatcherCovers reports whether a hook with matcher m fires for the
// tool: an empty matcher or "*" fires for every tool, else m is read as
// Claude Code reads it, a regular expression over the whole tool name
// (a plain name, or alternatives such as "Edit|Bash"). A matcher that is
// not a valid expression is compared as alternatives of plain names.
func hookMatcherCovers(m, tool string) bool {
	if m == "" || m == "*" {
		return true
	}
	if re, err := regexp.Compile(`^(?:` + m + `)$`); err == nil {
		return re.MatchString(tool)
	}
	return slices.Contains(strings.Split(m, "|"), tool)
}

func hookName(h capability.Hook) string {
	n := "hook " + h.Event
	if h.Matcher != "" {
		n += "(" + h.Matcher + ")"
	}
	return n
}

func describeHook(h capability.Hook) string {
	switch h.Type {
	case "command":
		return fmt.Sprintf("%s runs %s", hookName(h), quoteCommand(h.Command))
	case "http":
		return fmt.Sprintf("%s calls %s", hookName(h), h.Command)
	case "mcp_tool":
		return fmt.Sprintf("%s calls MCP tool %s", hookName(h), h.Command)
	}
	return fmt.Sprintf("%s asks a model (%s hook)", hookName(h), h.Type)
}

func describeServer(kind string, s capability.Server) string {
	if s.URL != "" {
		return fmt.Sprintf("%s server `%s` is reached at %s (%s)", kind, s.Name, s.URL, s.Transport)
	}
	return fmt.Sprintf("%s server `%s` runs %s", kind, s.Name, quoteCommand(strings.Join(append([]string{s.Command}, s.Args...), " ")))
}

// quoteCommand shows a command line in backquotes, clipped.
func quoteCommand(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	if strings.Contains(s, "`") {
		return strconv.Quote(s)
	}
	return "`" + s + "`"
}
