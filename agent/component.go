package agent

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/wharfhq/wharf/plugin"
)

// Sources of a component, as in `wharf agent components --json`.
const (
	SourceBuiltin = "builtin"
	SourcePlugin  = "plugin"
	SourceUser    = "user"
	SourceProject = "project"
	SourceManaged = "managed"
)

// Variables substituted in hook commands, MCP/LSP configurations and
// Markdown bodies, and exported to hook and server processes.
const (
	VarPluginRoot = "CLAUDE_PLUGIN_ROOT"
	VarPluginData = "CLAUDE_PLUGIN_DATA"
	VarProjectDir = "CLAUDE_PROJECT_DIR"
	VarWharfRoot  = "WHARF_PLUGIN_ROOT"
)

// Component is one live component of a Set. It is a value: a Set never
// changes a Component after the load that made it.
type Component struct {
	Kind plugin.ComponentKind `json:"kind"`
	// Name is the name the agent registers: "<plugin>:<name>" for plugin
	// commands, skills, agents and output styles, "plugin:<plugin>:<server>"
	// for plugin servers, "<plugin>:<event>" for plugin hooks, and the bare
	// name (or event) for user, project and managed components.
	Name string `json:"name"`
	// Local is the name inside its plugin or settings file ("help", "PreToolUse").
	Local string `json:"-"`
	// Plugin is the contributing plugin; zero unless Source is "plugin".
	Plugin plugin.ID `json:"-"`
	// Source is builtin, plugin, user, project or managed.
	Source string `json:"source"`
	// Path is the absolute file that defines the component; empty for one
	// defined inline in a marketplace entry or a settings file.
	Path string `json:"path,omitempty"`
	// Root is the plugin root (CLAUDE_PLUGIN_ROOT); DataDir its data
	// directory (CLAUDE_PLUGIN_DATA). Both empty for non-plugin components.
	Root    string `json:"-"`
	DataDir string `json:"-"`
	// Description and Meta come from the Markdown front matter (commands,
	// skills, agents, output styles): Meta holds its top-level scalar
	// values as strings ("argument-hint", "model", ...). FrontMatter reads
	// the whole header, lists and maps included.
	Description string `json:"description,omitempty"`
	Meta        Meta   `json:"-"`
	// Hook holds the matchers of one event (KindHook), with variables
	// substituted in every command.
	Hook *Hook `json:"-"`
	// MCP and LSP hold a server's configuration, variables substituted.
	MCP *plugin.MCPServer `json:"-"`
	LSP *plugin.LSPServer `json:"-"`

	// options are the plugin's userConfig values as environment entries
	// (CLAUDE_PLUGIN_OPTION_<KEY>=value), sensitive ones included, for its
	// hook and server processes. Set after the component index, never
	// stored in it.
	options []string

	// sum identifies the content: two components with the same Key and sum
	// are the same activation.
	sum string
}

// Hook is one event's matchers from one hooks file or settings document.
type Hook struct {
	Event    plugin.HookEvent     `json:"event"`
	Matchers []plugin.HookMatcher `json:"matchers"`
	// Scripts pins, per command, the files the command names as they were
	// when the set was loaded (PinScripts); the runner re-checks them
	// before each run.
	Scripts map[string][]ScriptPin `json:"-"`
	// Origin, when not nil, gives the position in the defining file of
	// Matchers[i].Hooks[j] as Origin[i][j] = {matcher, hook}: the loader
	// left out hooks that cannot run, and reports keep naming the others
	// as the file does.
	Origin [][][2]int `json:"-"`
}

// Pos is the position of Matchers[i].Hooks[j] in the defining file.
func (h *Hook) Pos(i, j int) (int, int) {
	if h.Origin != nil && i < len(h.Origin) && j < len(h.Origin[i]) {
		return h.Origin[i][j][0], h.Origin[i][j][1]
	}
	return i, j
}

// Key identifies a component within a Set: kind, source, plugin, name and
// defining file. No two components of a Set share a Key.
func (c Component) Key() string {
	return string(c.Kind) + "\x00" + c.Source + "\x00" + c.Plugin.String() + "\x00" + c.Name + "\x00" + c.Path
}

// FrontMatter reads and parses the YAML front matter of a Markdown
// component (commands, skills, agents, output styles), and returns its body.
func (c Component) FrontMatter() (meta map[string]any, body []byte, err error) {
	data, err := readLimited(c.Path)
	if err != nil {
		return nil, nil, err
	}
	return plugin.ParseFrontMatter(data)
}

// Env is the environment a hook or server process of this component gets on
// top of the agent's: CLAUDE_PLUGIN_ROOT, CLAUDE_PLUGIN_DATA and
// WHARF_PLUGIN_ROOT for plugin components, CLAUDE_PROJECT_DIR, and, as in
// Claude Code, one CLAUDE_PLUGIN_OPTION_<KEY> per userConfig option set
// with `wharf config` (sensitive ones included: the process is the
// plugin's own code, as trusted as the keychain entry it could read).
func (c Component) Env(projectDir string) []string {
	var env []string
	if c.Root != "" {
		env = append(env, VarPluginRoot+"="+c.Root, VarWharfRoot+"="+c.Root, VarPluginData+"="+c.DataDir)
	}
	if projectDir != "" {
		env = append(env, VarProjectDir+"="+projectDir)
	}
	return append(env, c.options...)
}

// envLookup answers as envValue over c.Env(projectDir) does, without
// making the list: the loader pins the scripts of every hook command.
func (c *Component) envLookup(projectDir string) func(string) string {
	return func(k string) string {
		// c.Env's later entries win: the options, then the fixed ones,
		// whose names no option can have.
		for i := len(c.options) - 1; i >= 0; i-- {
			if v, ok := cutVar(c.options[i], k); ok {
				return v
			}
		}
		switch {
		case projectDir != "" && k == VarProjectDir:
			return projectDir
		case c.Root != "" && k == VarPluginData:
			return c.DataDir
		case c.Root != "" && (k == VarPluginRoot || k == VarWharfRoot):
			return c.Root
		case k == "HOME":
			return os.Getenv("HOME")
		}
		return ""
	}
}

// VarOptionPrefix starts the environment variable of each userConfig
// option: CLAUDE_PLUGIN_OPTION_<KEY>.
const VarOptionPrefix = "CLAUDE_PLUGIN_OPTION_"

// OptionVar is the environment variable of userConfig option key, as Claude
// Code names it: every character other than an ASCII letter, digit or "_"
// becomes "_", and the whole is upper-cased ("api-key" gives
// CLAUDE_PLUGIN_OPTION_API_KEY).
func OptionVar(key string) string {
	b := []byte(key)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return VarOptionPrefix + strings.ToUpper(string(b))
}

// optionEnv is the environment entries of a plugin's userConfig values,
// plain and sensitive, sorted by variable name.
func optionEnv(plain, secret map[string]string) []string {
	vals := map[string]string{}
	for k, v := range plain {
		vals[OptionVar(k)] = v
	}
	for k, v := range secret {
		vals[OptionVar(k)] = v
	}
	out := make([]string, 0, len(vals))
	for _, k := range sortedKeys(vals) {
		out = append(out, k+"="+vals[k])
	}
	return out
}

// Expand substitutes ${CLAUDE_PLUGIN_ROOT}, ${CLAUDE_PLUGIN_DATA} and
// ${CLAUDE_PROJECT_DIR} in s, as the loader did in the component's
// configuration. Use it on a Markdown body before giving it to the model.
// Other ${...} references are left as written (the shell or the server
// expands them from its environment).
func (c Component) Expand(s string, projectDir string) string {
	return expander{root: c.Root, data: c.DataDir, project: projectDir}.expand(s)
}

type expander struct {
	root, data, project string
	// uc holds the plugin's userConfig values (set, else defaults),
	// substituted as ${user_config.KEY} in hook commands and servers.
	uc map[string]string
	// held names the sensitive options that are set: substituted after
	// the component index (see loadInput.expandEnv), so their defaults do
	// not apply and their values are not here.
	held []string
}

// expand substitutes the plugin's own variables with plugin.Vars, so that
// ${CLAUDE_PLUGIN_ROOT:-...} forms read as Claude Code reads them. Environment
// references stay as written here (see loadInput.expandEnv).
func (e expander) expand(s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	out, _ := plugin.Vars{PluginRoot: e.root, PluginData: e.data, ProjectDir: e.project, UserConfig: e.uc}.Expand(s)
	return out
}

func (e expander) list(in []string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = e.expand(s)
	}
	return out
}

func (e expander) dict(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = e.expand(v)
	}
	return out
}

func (e expander) mcp(s plugin.MCPServer) *plugin.MCPServer {
	s.Command = e.expand(s.Command)
	s.Args = e.list(s.Args)
	s.Env = e.dict(s.Env)
	s.Cwd = e.expand(s.Cwd)
	s.URL = e.expand(s.URL)
	s.Headers = e.dict(s.Headers)
	return &s
}

func (e expander) lsp(s plugin.LSPServer) *plugin.LSPServer {
	s.Command = e.expand(s.Command)
	s.Args = e.list(s.Args)
	s.Env = e.dict(s.Env)
	return &s
}

func (e expander) matchers(in []plugin.HookMatcher) []plugin.HookMatcher {
	out := make([]plugin.HookMatcher, len(in))
	for i, m := range in {
		hs := make([]plugin.Hook, len(m.Hooks))
		for j, h := range m.Hooks {
			h.Command = e.expand(h.Command)
			h.Prompt = e.expand(h.Prompt)
			hs[j] = h
		}
		out[i] = plugin.HookMatcher{Matcher: m.Matcher, Hooks: hs}
	}
	return out
}

// seal computes the content sum of c from everything an activation reads
// besides its Key: the dirs substituted, the front matter, and the hook or
// server configuration. It hashes the fields directly (no encoding) because
// it runs for every component of every load.
func (c *Component) seal() {
	h := sumHasher{h: sha256.New()}
	h.str(c.Root, c.DataDir, c.Description)
	h.meta(c.Meta)
	h.list(c.options)
	if c.Hook != nil {
		h.str("hook", string(c.Hook.Event))
		h.num(len(c.Hook.Matchers))
		for _, m := range c.Hook.Matchers {
			h.str(m.Matcher)
			h.num(len(m.Hooks))
			for _, k := range m.Hooks {
				h.str(k.Type, k.Command, k.Prompt)
				h.num(k.Timeout)
				h.raw(k.Extra)
			}
		}
	}
	if s := c.MCP; s != nil {
		h.str("mcp", s.Type, s.Command, s.Cwd, s.URL)
		h.list(s.Args)
		h.dict(s.Env)
		h.dict(s.Headers)
		h.raw(s.Extra)
	}
	if s := c.LSP; s != nil {
		h.str("lsp", s.Command, s.Transport, string(s.InitializationOptions), string(s.Settings))
		h.list(s.Args)
		h.dict(s.Env)
		h.dict(s.ExtensionToLanguage)
		h.raw(s.Extra)
	}
	c.sum = hex.EncodeToString(h.h.Sum(nil)[:16])
}

type sumHasher struct{ h hash.Hash }

func (s sumHasher) num(n int) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	s.h.Write(b[:])
}

func (s sumHasher) str(vs ...string) {
	for _, v := range vs {
		s.num(len(v))
		io.WriteString(s.h, v)
	}
}

func (s sumHasher) list(vs []string) {
	s.num(len(vs))
	s.str(vs...)
}

func (s sumHasher) dict(m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s.num(len(keys))
	for _, k := range keys {
		s.str(k, m[k])
	}
}

// meta hashes m as dict hashes the same pairs as a map.
func (s sumHasher) meta(m Meta) {
	s.num(m.Len())
	for k, v := range m.All() {
		s.str(k, v)
	}
}

func (s sumHasher) raw(m map[string]json.RawMessage) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s.num(len(keys))
	for _, k := range keys {
		s.str(k, string(m[k]))
	}
}

// Builtin is a component the embedding agent ships itself ("help",
// "clear", ...). Builtins are merged first and win every collision.
type Builtin struct {
	Kind plugin.ComponentKind
	Name string
}

// ToolName is the name under which a tool of a plugin's MCP server reaches
// the model: "mcp__plugin_<plugin>_<server>__<tool>". Every character other
// than ASCII letters, digits, '_' and '-' becomes '_', as agents require of
// tool names.
func ToolName(pluginName, server, tool string) string {
	return "mcp__plugin_" + toolPart(pluginName) + "_" + toolPart(server) + "__" + toolPart(tool)
}

// ServerToolName is the tool name of an MCP server configured in settings
// (user, project or managed): "mcp__<server>__<tool>".
func ServerToolName(server, tool string) string {
	return "mcp__" + toolPart(server) + "__" + toolPart(tool)
}

// ToolName returns the model-facing name of tool on c, an MCP server
// component.
func (c Component) ToolName(tool string) string {
	if c.Source == SourcePlugin {
		// The namespace is the plugin's (plugin.Plugin.Namespace), as
		// the loader put it in Name: "plugin:<namespace>:<server>".
		ns := strings.TrimSuffix(strings.TrimPrefix(c.Name, "plugin:"), ":"+c.Local)
		return ToolName(ns, c.Local, tool)
	}
	return ServerToolName(c.Local, tool)
}

func toolPart(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// invocationNames are the names c could be invoked by (see the package doc).
func (c Component) invocationNames() []string {
	if c.Source == SourcePlugin {
		switch c.Kind {
		case plugin.KindCommand, plugin.KindSkill, plugin.KindAgent, plugin.KindOutputStyle:
			return []string{c.Name, c.Local}
		}
	}
	return []string{c.Name}
}

// kindRank orders kinds as plugin.ComponentKinds lists them. It and
// sourceRank are switches and a scan of a short list rather than maps: the
// merge compares ranks about 40,000 times for 2,000 components.
func kindRank(k plugin.ComponentKind) int {
	for i, x := range plugin.ComponentKinds {
		if x == k {
			return i
		}
	}
	return len(plugin.ComponentKinds)
}

func sourceRank(s string) int {
	switch s {
	case SourceBuiltin:
		return 0
	case SourceManaged:
		return 1
	case SourceProject:
		return 2
	case SourceUser:
		return 3
	case SourcePlugin:
		return 4
	}
	return 0
}

func lessComponent(a, b *Component) bool { return cmpComponent(a, b) < 0 }

// cmpComponent orders components by kind, name, source, plugin and path.
func cmpComponent(a, b *Component) int {
	if a.Kind != b.Kind {
		return kindRank(a.Kind) - kindRank(b.Kind)
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	if a.Source != b.Source {
		return sourceRank(a.Source) - sourceRank(b.Source)
	}
	if a.Plugin != b.Plugin {
		return strings.Compare(a.Plugin.String(), b.Plugin.String())
	}
	return strings.Compare(a.Path, b.Path)
}
