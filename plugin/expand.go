package plugin

import (
	"strconv"
	"strings"
)

// Variables a plugin's configuration may reference, as Claude Code names
// them.
const (
	VarPluginRoot = "CLAUDE_PLUGIN_ROOT"
	VarPluginData = "CLAUDE_PLUGIN_DATA"
	VarProjectDir = "CLAUDE_PROJECT_DIR"
	// UserConfigPrefix starts a reference to a userConfig option:
	// ${user_config.KEY}.
	UserConfigPrefix = "user_config."
)

// Vars is what the ${...} references of a plugin's configuration resolve to.
// Claude Code expands them in MCP server command, args, env, url and headers,
// LSP server command, args and env, and hook commands:
//
//	${NAME}            the value of NAME
//	${NAME:-default}   the value of NAME, or default when NAME is unset or empty
//
// NAME is CLAUDE_PLUGIN_ROOT, CLAUDE_PLUGIN_DATA, CLAUDE_PROJECT_DIR,
// user_config.KEY (a userConfig option of the plugin) or an environment
// variable. A field left empty here is unset: ${CLAUDE_PLUGIN_DATA} with no
// PluginData and no default stays as written and is reported missing.
type Vars struct {
	PluginRoot string
	PluginData string
	ProjectDir string
	// UserConfig holds the userConfig options that are set.
	UserConfig map[string]string
	// Env looks up an environment variable; nil resolves none.
	Env func(string) (string, bool)
}

func (v Vars) lookup(name string) (string, bool) {
	switch {
	case name == VarPluginRoot:
		return v.PluginRoot, v.PluginRoot != ""
	case name == VarPluginData:
		return v.PluginData, v.PluginData != ""
	case name == VarProjectDir:
		return v.ProjectDir, v.ProjectDir != ""
	case strings.HasPrefix(name, UserConfigPrefix):
		s, ok := v.UserConfig[strings.TrimPrefix(name, UserConfigPrefix)]
		return s, ok
	case v.Env != nil:
		return v.Env(name)
	}
	return "", false
}

// Expand substitutes the references in s. A reference that resolves to
// nothing and has no default is left as written and its name returned in
// missing (once per name, in order of appearance). Text that is not a
// well-formed reference ("${", "${}", "$HOME") is left as it is.
func (v Vars) Expand(s string) (out string, missing []string) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			break
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		ref := s[i+2 : i+2+j]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validRefName(name) {
			b.WriteString(s[i : i+3+j])
			s = s[i+3+j:]
			continue
		}
		val, ok := v.lookup(name)
		switch {
		case ok && (val != "" || !hasDef):
			b.WriteString(val)
		case hasDef:
			b.WriteString(def)
		default:
			b.WriteString(s[i : i+3+j])
			if !containsStr(missing, name) {
				missing = append(missing, name)
			}
		}
		s = s[i+3+j:]
	}
	return b.String(), missing
}

// References returns the names s references, once each, in order.
func References(s string) []string {
	var out []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return out
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			return out
		}
		name, _, _ := strings.Cut(s[i+2:i+2+j], ":-")
		if validRefName(name) && !containsStr(out, name) {
			out = append(out, name)
		}
		s = s[i+3+j:]
	}
}

// validRefName accepts an environment variable name or user_config.KEY.
func validRefName(name string) bool {
	name = strings.TrimPrefix(name, UserConfigPrefix)
	if name == "" {
		return false
	}
	for i, c := range name {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ExpandList applies Expand to each element, collecting what is missing.
func (v Vars) ExpandList(in []string) ([]string, []string) {
	if in == nil {
		return nil, nil
	}
	var missing []string
	out := make([]string, len(in))
	for i, s := range in {
		var m []string
		out[i], m = v.Expand(s)
		missing = appendNew(missing, m)
	}
	return out, missing
}

// ExpandMap applies Expand to each value, collecting what is missing.
func (v Vars) ExpandMap(in map[string]string) (map[string]string, []string) {
	if in == nil {
		return nil, nil
	}
	var missing []string
	out := make(map[string]string, len(in))
	for k, s := range in {
		var m []string
		out[k], m = v.Expand(s)
		missing = appendNew(missing, m)
	}
	return out, missing
}

func appendNew(dst, src []string) []string {
	for _, s := range src {
		if !containsStr(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}

// ExpandMCP returns s with the references of its command, args, env, cwd,
// url and headers substituted, and the names that stayed unresolved.
func (v Vars) ExpandMCP(s MCPServer) (MCPServer, []string) {
	var m, all []string
	s.Command, m = v.Expand(s.Command)
	all = appendNew(all, m)
	s.Args, m = v.ExpandList(s.Args)
	all = appendNew(all, m)
	s.Env, m = v.ExpandMap(s.Env)
	all = appendNew(all, m)
	s.Cwd, m = v.Expand(s.Cwd)
	all = appendNew(all, m)
	s.URL, m = v.Expand(s.URL)
	all = appendNew(all, m)
	s.Headers, m = v.ExpandMap(s.Headers)
	all = appendNew(all, m)
	return s, all
}

// ExpandLSP returns s with the references of its command, args and env
// substituted, and the names that stayed unresolved.
func (v Vars) ExpandLSP(s LSPServer) (LSPServer, []string) {
	var m, all []string
	s.Command, m = v.Expand(s.Command)
	all = appendNew(all, m)
	s.Args, m = v.ExpandList(s.Args)
	all = appendNew(all, m)
	s.Env, m = v.ExpandMap(s.Env)
	all = appendNew(all, m)
	return s, all
}

// CheckMCPServer reports why s, with its references substituted, cannot be
// used: a remote server without a usable URL, a local one without a
// command. It returns the field at fault and the reason, or "" when s is
// usable. A URL that still holds unresolved references is not judged.
func CheckMCPServer(s MCPServer) (field, reason string) {
	switch s.Type {
	case "", "stdio":
		if s.Command == "" {
			return "command", "required for a stdio server"
		}
	case "http", "sse", "ws":
		if s.URL == "" {
			return "url", "required for a " + s.Type + " server"
		}
		if len(References(s.URL)) > 0 {
			return "", ""
		}
		if msg, warn := checkRemoteURL(s.URL); msg != "" && !warn {
			return "url", msg
		}
	default:
		return "type", "unknown server type " + strconv.Quote(s.Type) + "; expected stdio, http, sse or ws"
	}
	return "", ""
}

// VersionSources are what a plugin's version can come from, in the order
// VersionOf tries them.
type VersionSources struct {
	Manifest          string // plugin.json "version"
	Entry             string // the marketplace entry's "version"
	Fetched           string // the version its source reported (npm)
	SourceCommit      string // the commit its git source was fetched at
	MarketplaceCommit string // the commit of the git marketplace it is stored in
}

// UnknownVersion is the version of a plugin none of VersionSources names.
const UnknownVersion = "unknown"

// VersionOf is the version wharf gives a plugin, as Claude Code does: its
// plugin.json version, else its marketplace entry's, else the version its
// source reported, else the 12-digit commit of its git source, else that of
// the git marketplace it is stored in; "" when none is known (callers that
// must name one use UnknownVersion). It is the one place that versions an
// unversioned plugin.
func VersionOf(s VersionSources) string {
	for _, v := range []string{s.Manifest, s.Entry, s.Fetched, ShortCommit(s.SourceCommit), ShortCommit(s.MarketplaceCommit)} {
		if v != "" {
			return v
		}
	}
	return ""
}

// ShortCommitLen is how many hex digits of a commit Claude Code uses as the
// version of a plugin that declares none.
const ShortCommitLen = 12

// ShortCommit returns the first 12 hex digits of a git commit SHA, the
// version Claude Code gives a versionless plugin fetched from git (or
// stored in a git marketplace); "" when sha is not a commit SHA.
func ShortCommit(sha string) string {
	if len(sha) < ShortCommitLen {
		return ""
	}
	for _, c := range sha {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return ""
		}
	}
	return sha[:ShortCommitLen]
}
