package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// Author is a plugin's or marketplace's author or owner.
type Author struct {
	Name  string `json:"name"`
	Email string `json:"email,omitempty"`
	URL   string `json:"url,omitempty"`
}

// Manifest is the content of a plugin's .claude-plugin/plugin.json, and the
// plugin.json fields a marketplace entry may carry.
//
// Repository holds the repository URL; the object form {type, url} found in
// npm-style manifests is accepted and reduced to its url, with a warning.
// Keys wharf does not know are kept in Extra (and reported as warnings).
type Manifest struct {
	Name           string          `json:"name"`
	DisplayName    string          `json:"displayName,omitempty"`
	Version        string          `json:"version,omitempty"`
	Description    string          `json:"description,omitempty"`
	Author         *Author         `json:"author,omitempty"`
	Homepage       string          `json:"homepage,omitempty"`
	Repository     string          `json:"repository,omitempty"`
	License        string          `json:"license,omitempty"`
	Keywords       []string        `json:"keywords,omitempty"`
	DefaultEnabled *bool           `json:"defaultEnabled,omitempty"`
	Dependencies   []Dependency    `json:"dependencies,omitempty"`
	Commands       PathList        `json:"commands,omitempty"`
	Agents         PathList        `json:"agents,omitempty"`
	Skills         PathList        `json:"skills,omitempty"`
	OutputStyles   PathList        `json:"outputStyles,omitempty"`
	Hooks          ComponentSpec   `json:"hooks,omitzero"`
	MCPServers     ComponentSpec   `json:"mcpServers,omitzero"`
	LSPServers     ComponentSpec   `json:"lspServers,omitzero"`
	UserConfig     json.RawMessage `json:"userConfig,omitempty"`
	// Network is the hosts the plugin declares it reaches (nil: none
	// declared).
	Network *Network `json:"network,omitempty"`
	// Icon is the path of the plugin's icon; PrivacyPolicyURL its privacy
	// policy. Both matter to the plugin directory checks.
	Icon             string `json:"icon,omitempty"`
	PrivacyPolicyURL string `json:"privacyPolicyUrl,omitempty"`

	// CommandObjects holds commands given in the object form of the
	// commands field, {"<name>": {"source": "./x.md", "description": ...}},
	// by name.
	CommandObjects map[string]CommandObject `json:"-"`

	// Extra holds keys wharf does not know, as written.
	Extra map[string]json.RawMessage `json:"-"`
}

// CommandObject is one command of the object form of the commands field:
// a Markdown file (Source) or, inline, the command's prompt (Content).
type CommandObject struct {
	Source      string `json:"source,omitempty"`
	Content     string `json:"content,omitempty"`
	Description string `json:"description,omitempty"`
}

// DeclaresComponents reports whether m names any component path or inline
// component configuration.
func (m *Manifest) DeclaresComponents() bool {
	return m.Commands != nil || m.CommandObjects != nil || m.Agents != nil || m.Skills != nil || m.OutputStyles != nil ||
		!m.Hooks.IsZero() || !m.MCPServers.IsZero() || !m.LSPServers.IsZero()
}

// declaredComponentFields lists the component fields m sets, by JSON name.
func (m *Manifest) declaredComponentFields() []string {
	var out []string
	add := func(set bool, name string) {
		if set {
			out = append(out, name)
		}
	}
	add(m.Commands != nil || m.CommandObjects != nil, "commands")
	add(m.Agents != nil, "agents")
	add(m.Skills != nil, "skills")
	add(m.OutputStyles != nil, "outputStyles")
	add(!m.Hooks.IsZero(), "hooks")
	add(!m.MCPServers.IsZero(), "mcpServers")
	add(!m.LSPServers.IsZero(), "lspServers")
	return out
}

// PathList is a component path field: one path or a list of paths, each
// relative to the plugin root and starting with "./".
type PathList []string

// UnmarshalJSON accepts a string or an array of strings.
func (p *PathList) UnmarshalJSON(b []byte) error {
	d, n, err := decodeFragment(b)
	if err != nil {
		return err
	}
	*p = d.pathList(n, "")
	return firstErrorOrNil(d.diags)
}

// ComponentSpec is the hooks, mcpServers or lspServers field: a path, a list
// of paths, or an inline object (the content such a file would hold).
type ComponentSpec struct {
	Paths  []string
	Inline json.RawMessage
}

// IsZero reports whether the field was absent.
func (c ComponentSpec) IsZero() bool { return c.Paths == nil && c.Inline == nil }

// UnmarshalJSON accepts a path string, an array of paths or an object.
func (c *ComponentSpec) UnmarshalJSON(b []byte) error {
	d, n, err := decodeFragment(b)
	if err != nil {
		return err
	}
	*c = d.componentSpec(n, "", nil)
	return firstErrorOrNil(d.diags)
}

// MarshalJSON writes the inline object, a single path as a string, or a list.
func (c ComponentSpec) MarshalJSON() ([]byte, error) {
	switch {
	case c.Inline != nil:
		return c.Inline, nil
	case len(c.Paths) == 1:
		return json.Marshal(c.Paths[0])
	case c.Paths == nil:
		return []byte("null"), nil
	default:
		return json.Marshal(c.Paths)
	}
}

// decodeFragment parses a JSON fragment for an UnmarshalJSON method.
func decodeFragment(b []byte) (*decoder, *node, error) {
	n, err := parseJSON(b, "")
	if err != nil {
		return nil, nil, err
	}
	return newDecoder("", b), n, nil
}

func firstErrorOrNil(diags []Diagnostic) error {
	if fe := firstError(diags); fe != nil {
		return fe
	}
	return nil
}

// ParseManifest parses a plugin.json. Errors are *Error{Layer:
// LayerMaterialization, Type: TypeManifestParse} wrapping a *SyntaxError,
// *FieldError or *SizeError; on error the Manifest is nil. Warnings (unknown
// keys, non-standard forms) are returned either way.
func ParseManifest(data []byte, file string) (*Manifest, []Diagnostic, error) {
	return parseDocument(data, file, (*decoder).manifest)
}

// entryOnlyKeys are marketplace entry fields that mean nothing in plugin.json.
var entryOnlyKeys = map[string]bool{"source": true, "category": true, "tags": true, "strict": true, "integrity": true, "signatures": true}

func (d *decoder) manifest(n *node) *Manifest {
	m := &Manifest{}
	if !d.object(n, "") {
		return m
	}
	for _, mem := range n.members {
		if d.manifestField(m, mem, "") {
			continue
		}
		if mem.key == "$schema" {
			d.str(mem.val, "$schema")
			continue
		}
		if entryOnlyKeys[mem.key] {
			d.warnf(&node{off: mem.keyOff}, mem.key, "%q belongs in the marketplace entry, not in plugin.json (kept, but not used)", mem.key)
		} else {
			d.unknown(mem, "")
		}
		m.Extra = d.keep(m.Extra, mem)
	}
	nameNode := n.get("name")
	if nameNode == nil {
		d.errorf(n, "name", "required field is missing")
	}
	return m
}

// manifestField decodes one plugin.json field into m; it returns false for
// keys that are not plugin.json fields. prefix is the field path of the
// containing object ("" or "plugins[3]").
func (d *decoder) manifestField(m *Manifest, mem member, prefix string) bool {
	f := key(prefix, mem.key)
	v := mem.val
	switch mem.key {
	case "name":
		m.Name = d.str(v, f)
		if v.kind == kindString {
			if err := ValidateName(m.Name); err != nil {
				d.errorf(v, f, "%v", err)
			} else if !isKebab(m.Name) {
				d.warnf(v, f, "name %q is not kebab-case (lowercase letters, digits and '-')", m.Name)
			}
		}
	case "displayName":
		m.DisplayName = d.str(v, f)
	case "version":
		m.Version = d.str(v, f)
		if v.kind == kindString {
			if _, err := SanitizeVersion(m.Version); err != nil {
				d.errorf(v, f, "%v; the version names a cache directory", err)
			}
		}
	case "description":
		m.Description = d.str(v, f)
	case "author":
		m.Author = d.author(v, f)
	case "homepage":
		m.Homepage = d.str(v, f)
	case "repository":
		m.Repository = d.repository(v, f)
	case "license":
		m.License = d.str(v, f)
	case "keywords":
		m.Keywords = d.strList(v, f, true)
	case "defaultEnabled":
		m.DefaultEnabled = d.boolPtr(v, f)
	case "dependencies":
		m.Dependencies = d.dependencies(v, f)
	case "commands":
		if v.kind == kindObject {
			m.CommandObjects = d.commandObjects(v, f)
		} else {
			m.Commands = d.pathList(v, f)
		}
	case "agents":
		m.Agents = d.pathList(v, f)
	case "skills":
		m.Skills = d.pathList(v, f)
	case "outputStyles":
		m.OutputStyles = d.pathList(v, f)
	case "hooks":
		m.Hooks = d.componentSpec(v, f, func(n *node, f string) { d.hooksInline(n, f) })
	case "mcpServers":
		m.MCPServers = d.mcpComponentSpec(v, f)
	case "lspServers":
		m.LSPServers = d.componentSpec(v, f, func(n *node, f string) { d.lspInline(n, f) })
	case "network":
		m.Network = d.network(v, f)
	case "icon":
		m.Icon = d.str(v, f)
	case "privacyPolicyUrl":
		m.PrivacyPolicyURL = d.str(v, f)
	case "userConfig":
		if v.kind != kindObject {
			d.typeError(v, f, "object")
		}
		m.UserConfig = d.raw(v)
	default:
		return false
	}
	return true
}

func (d *decoder) author(n *node, f string) *Author {
	switch n.kind {
	case kindString:
		// npm style "Name <email> (url)": keep it whole as the name.
		d.warnf(n, f, "author as a string is non-standard; expected {name, email?, url?}")
		return &Author{Name: n.str}
	case kindObject:
		a := &Author{}
		d.object(n, f)
		for _, m := range n.members {
			switch m.key {
			case "name":
				a.Name = d.str(m.val, key(f, "name"))
			case "email":
				a.Email = d.str(m.val, key(f, "email"))
			case "url":
				a.URL = d.str(m.val, key(f, "url"))
			default:
				d.unknown(m, f)
			}
		}
		if n.get("name") == nil {
			d.errorf(n, key(f, "name"), "required field is missing")
		}
		return a
	}
	d.typeError(n, f, "object {name, email?, url?}")
	return nil
}

func (d *decoder) repository(n *node, f string) string {
	switch n.kind {
	case kindString:
		return n.str
	case kindObject:
		d.object(n, f)
		var url string
		for _, m := range n.members {
			switch m.key {
			case "url":
				url = d.str(m.val, key(f, "url"))
			case "type", "directory":
				d.str(m.val, key(f, m.key))
			default:
				d.unknown(m, f)
			}
		}
		d.warnf(n, f, "repository as an object is the npm form; wharf keeps only its url")
		return url
	}
	d.typeError(n, f, "string or object {type, url}")
	return ""
}

// dependencies accepts the standard array form and, with a warning, the
// forms found in the wild: a single string, and an npm-style object
// {"name": "version range"}.
func (d *decoder) dependencies(n *node, f string) []Dependency {
	var out []Dependency
	one := func(v *node, vf string) {
		switch v.kind {
		case kindString:
			dep, err := ParseDependency(v.str)
			if err != nil {
				d.errorf(v, vf, "%v", err)
				return
			}
			out = append(out, dep)
		case kindObject:
			d.object(v, vf)
			var dep Dependency
			for _, m := range v.members {
				switch m.key {
				case "name":
					dep.Name = d.str(m.val, key(vf, "name"))
				case "marketplace":
					dep.Marketplace = d.str(m.val, key(vf, "marketplace"))
				case "version":
					dep.Version = d.str(m.val, key(vf, "version"))
				default:
					d.unknown(m, vf)
				}
			}
			if err := ValidateName(dep.Name); err != nil {
				d.errorf(v, key(vf, "name"), "dependency name: %v", err)
				return
			}
			if dep.Marketplace != "" {
				if err := ValidateName(dep.Marketplace); err != nil {
					d.errorf(v, key(vf, "marketplace"), "dependency marketplace: %v", err)
					return
				}
			}
			if dep.Version != "" {
				d.warnf(v, key(vf, "version"), "version %q is ignored: wharf dependencies mean presence, not a version range", dep.Version)
			}
			out = append(out, dep)
		default:
			d.typeError(v, vf, "string \"name[@marketplace]\" or object {name, marketplace?, version?}")
		}
	}
	switch n.kind {
	case kindArray:
		for i, e := range n.elems {
			one(e, index(f, i))
		}
		if out == nil {
			out = []Dependency{}
		}
	case kindString:
		d.warnf(n, f, "expected an array of dependencies, got a single string; read as a one-element array")
		one(n, f)
	case kindObject:
		d.object(n, f)
		d.warnf(n, f, "dependencies as an object {name: version} is the npm form; read as a list of names, versions ignored")
		for _, m := range n.members {
			mf := key(f, m.key)
			dep, err := ParseDependency(m.key)
			if err != nil {
				d.errorf(&node{off: m.keyOff}, mf, "%v", err)
				continue
			}
			if m.val.kind == kindString {
				dep.Version = m.val.str
			} else if m.val.kind != kindNull && m.val.kind != kindBool {
				d.typeError(m.val, mf, "version string")
				continue
			}
			out = append(out, dep)
		}
	default:
		d.typeError(n, f, "array of dependencies")
	}
	return out
}

func (d *decoder) pathList(n *node, f string) PathList {
	var out PathList
	switch n.kind {
	case kindString:
		if d.componentPath(n, f) {
			out = PathList{n.str}
		}
		return out
	case kindArray:
		out = PathList{}
		for i, e := range n.elems {
			ef := index(f, i)
			if e.kind != kindString {
				d.typeError(e, ef, "path string")
				continue
			}
			if d.componentPath(e, ef) {
				out = append(out, e.str)
			}
		}
		return out
	}
	d.typeError(n, f, "path string or array of paths")
	return nil
}

func (d *decoder) componentSpec(n *node, f string, inline func(*node, string)) ComponentSpec {
	switch n.kind {
	case kindObject:
		if inline != nil {
			inline(n, f)
		}
		return ComponentSpec{Inline: d.raw(n)}
	case kindString, kindArray:
		return ComponentSpec{Paths: d.pathList(n, f)}
	}
	d.typeError(n, f, "path string, array of paths or object")
	return ComponentSpec{}
}

// mcpComponentSpec is componentSpec for mcpServers, which may also name
// MCP bundles (IsMCPBundle), including by an https:// URL.
func (d *decoder) mcpComponentSpec(n *node, f string) ComponentSpec {
	bundle := func(e *node) bool { return e.kind == kindString && IsMCPBundle(e.str) }
	switch {
	case bundle(n):
		return ComponentSpec{Paths: []string{n.str}}
	case n.kind == kindArray:
		var paths []string
		for i, e := range n.elems {
			ef := index(f, i)
			switch {
			case bundle(e):
				paths = append(paths, e.str)
			case e.kind != kindString:
				d.typeError(e, ef, "path string")
			case d.componentPath(e, ef):
				paths = append(paths, e.str)
			}
		}
		if paths == nil {
			paths = []string{}
		}
		return ComponentSpec{Paths: paths}
	}
	return d.componentSpec(n, f, func(n *node, f string) { d.mcpInline(n, f) })
}

// commandObjects decodes the object form of the commands field, which
// Claude Code reads: each key a command name, each value an object with a
// source path (a Markdown file in the plugin) or inline content.
func (d *decoder) commandObjects(n *node, f string) map[string]CommandObject {
	out := map[string]CommandObject{}
	for _, m := range n.members {
		mf := key(f, m.key)
		if err := validComponentName(m.key); err != nil {
			d.errorf(&node{off: m.keyOff}, mf, "command name: %v", err)
			continue
		}
		if !d.object(m.val, mf) {
			continue
		}
		var c CommandObject
		for _, k := range m.val.members {
			kf := key(mf, k.key)
			switch k.key {
			case "source":
				c.Source = d.str(k.val, kf)
				if k.val.kind == kindString {
					d.componentPath(k.val, kf)
				}
			case "content":
				c.Content = d.str(k.val, kf)
			case "description":
				c.Description = d.str(k.val, kf)
			default:
				d.unknown(k, mf)
			}
		}
		if c.Source == "" && c.Content == "" {
			d.errorf(m.val, mf, "needs a source (a Markdown file) or content")
			continue
		}
		out[m.key] = c
	}
	return out
}

// copyComponents copies m's component fields into dst.
func (m *Manifest) copyComponents(dst *Manifest) {
	dst.CommandObjects = m.CommandObjects
	dst.Commands, dst.Agents, dst.Skills, dst.OutputStyles = m.Commands, m.Agents, m.Skills, m.OutputStyles
	dst.Hooks, dst.MCPServers, dst.LSPServers = m.Hooks, m.MCPServers, m.LSPServers
}

// componentPath checks a path inside a plugin: relative, starting with "./",
// without "..". It reports and returns false for a bad path.
func (d *decoder) componentPath(n *node, f string) bool {
	if err := checkRelPath(n.str, true); err != nil {
		d.errorf(n, f, "%v", err)
		return false
	}
	return true
}

// checkRelPath validates a path that will be joined to a root directory.
func checkRelPath(p string, requireDotSlash bool) error {
	switch {
	case p == "":
		return fmt.Errorf("empty path")
	case strings.ContainsRune(p, 0) || strings.ContainsAny(p, "\r\n"):
		return fmt.Errorf("path %q contains a control character", p)
	case strings.Contains(p, `\`):
		return fmt.Errorf("path %q contains '\\'; use '/' separators", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q is absolute; write it relative, starting with ./", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return fmt.Errorf("path %q contains \"..\"; paths must stay inside the root", p)
		}
	}
	if requireDotSlash && !strings.HasPrefix(p, "./") && p != "." {
		return fmt.Errorf("path %q must start with ./ (relative to the root)", p)
	}
	return nil
}

// cleanRel turns a checked "./a/b/" into "a/b" ("." for the root itself).
func cleanRel(p string) string { return path.Clean(strings.TrimPrefix(p, "./")) }

func isKebab(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return s != "" && s[0] != '-'
}

// jsonEqual reports whether two raw JSON values are byte-identical after
// compaction (used to skip duplicate inline definitions).
func jsonEqual(a, b json.RawMessage) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return false
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}
