package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// ComponentKind is one of the closed set of things a plugin contributes.
type ComponentKind string

// Component kinds, as they appear in `wharf agent components --json`.
const (
	KindCommand     ComponentKind = "command"
	KindSkill       ComponentKind = "skill"
	KindAgent       ComponentKind = "agent"
	KindHook        ComponentKind = "hook"
	KindMCPServer   ComponentKind = "mcp-server"
	KindLSPServer   ComponentKind = "lsp-server"
	KindOutputStyle ComponentKind = "output-style"
)

// ComponentKinds lists every kind in the order components are reported.
var ComponentKinds = []ComponentKind{KindCommand, KindAgent, KindSkill, KindOutputStyle, KindHook, KindMCPServer, KindLSPServer}

// Component is one discovered component. Path is relative to the plugin
// root, slash-separated; it is the Markdown file for commands, agents and
// output styles, the SKILL.md for skills, and the JSON file that defines the
// hook event or server. A hook or server defined inline in plugin.json has
// Path ".claude-plugin/plugin.json"; one defined inline in the marketplace
// entry has an empty Path. A hook component's Name is its event.
type Component struct {
	Kind ComponentKind `json:"kind"`
	Name string        `json:"name"`
	Path string        `json:"path,omitempty"`
}

// FailedComponent is a component a plugin declares that cannot be used: an
// MCP or LSP server entry with an invalid name, no command, an empty or
// invalid URL, or an unknown type. As in Claude Code it fails alone; the
// rest of the plugin loads. Path is the defining file relative to the plugin
// root (".claude-plugin/plugin.json" for an inline definition, empty for one
// in the marketplace entry); Field locates the entry in it.
type FailedComponent struct {
	Kind   ComponentKind `json:"kind"`
	Name   string        `json:"name"`
	Path   string        `json:"path,omitempty"`
	Field  string        `json:"field,omitempty"`
	Reason string        `json:"reason"`
}

// String formats f for a listing: "mcp-server "x" (.mcp.json: mcpServers.x.url): reason".
func (f FailedComponent) String() string {
	where := f.Path
	if where == "" {
		where = "marketplace entry"
	}
	if f.Field != "" {
		where += ": " + f.Field
	}
	return fmt.Sprintf("%s %q (%s): %s", f.Kind, f.Name, where, f.Reason)
}

// Plugin is the effective definition of a plugin directory: its manifest
// after merging with the marketplace entry, its components, and the
// components it declares that cannot be used.
type Plugin struct {
	Manifest   Manifest
	Root       string
	Components []Component
	Failed     []FailedComponent
}

// Namespace is the prefix of the plugin's component names as Claude Code
// registers them ("<namespace>:<command>", "plugin:<namespace>:<server>"):
// the name in plugin.json when it has one, else the marketplace entry's
// name, else the directory's name. The marketplace entry name stays the
// install id (name@marketplace); the two differ when plugin.json renames
// the plugin. Every layer that namespaces components uses this.
func (p *Plugin) Namespace() string { return p.Manifest.Name }

// ComponentsOf returns the components of one kind, in order.
func (p *Plugin) ComponentsOf(kind ComponentKind) []Component {
	var out []Component
	for _, c := range p.Components {
		if c.Kind == kind {
			out = append(out, c)
		}
	}
	return out
}

// maxComponents bounds discovery so a hostile tree cannot exhaust memory.
const maxComponents = 10000

const manifestRel = ".claude-plugin/plugin.json"

// Load returns the effective plugin in dir. entry is the plugin's marketplace
// entry, or nil for a plugin directory used on its own.
//
// The merge rule: with a strict entry (the default), plugin.json wins for
// every field it sets and the entry fills the fields plugin.json leaves
// empty; component path lists and dependencies of both are combined; an
// inline hooks/mcpServers/lspServers object in plugin.json wins over the
// entry's. A name or version that differs between the two is reported as a
// warning. With strict: false the entry is the whole definition: a
// plugin.json that also declares components is a conflict error, and one
// that declares none is ignored with a warning. Without plugin.json and
// without an entry the name is the directory's name.
//
// Components come from the manifest paths and the default layout. For
// commands, agents, skills and output styles, declared paths replace the
// default directory (so an entry listing four skills of a shared skills/
// directory gets those four); hooks, MCP and LSP files declared in the
// manifest are loaded in addition to the default files. A root SKILL.md with
// no skills/ directory and no declared skills makes a one-skill plugin.
//
// Every component path must stay inside dir, also through symlinks. Errors
// are *Error (Layer LayerMaterialization) wrapping a *FieldError, with Type
// TypeManifestParse, TypeManifestInvalid, TypeConflict or TypeComponentLoad.
func Load(dir string, entry *Entry) (*Plugin, []Diagnostic, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, nil, &Error{Layer: LayerMaterialization, Type: TypeNotFound, Object: dir, Err: err,
			Hint: "check the plugin's source path in the marketplace"}
	}
	if !fi.IsDir() {
		return nil, nil, Errorf(LayerMaterialization, TypeComponentLoad, dir, "", "plugin root %s is not a directory", dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return nil, nil, &Error{Layer: LayerMaterialization, Type: TypeComponentLoad, Object: dir, Err: err}
	}
	l := &loader{root: dir, real: real}

	var pm *Manifest
	mfile := filepath.Join(dir, filepath.FromSlash(manifestRel))
	if _, err := os.Lstat(mfile); err == nil {
		if l.inside(mfile, manifestRel, "plugin.json") {
			m, diags, err := readDocument(mfile, ParseManifest)
			l.diags = append(l.diags, diags...)
			if err != nil {
				return nil, l.diags, err
			}
			pm = m
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, &Error{Layer: LayerMaterialization, Type: TypeComponentLoad, Object: mfile, Err: err}
	}

	p := &Plugin{Root: dir}
	l.inlineFile = map[string]string{}
	switch {
	case entry == nil && pm == nil:
	case entry == nil:
		p.Manifest = *pm
		l.inlineFile = map[string]string{"hooks": manifestRel, "mcpServers": manifestRel, "lspServers": manifestRel}
	case pm == nil:
		p.Manifest = entry.Manifest
	case !entry.IsStrict():
		if fields := pm.declaredComponentFields(); len(fields) > 0 {
			l.fail(TypeConflict, mfile, strings.Join(fields, ","),
				"plugin.json declares %s but the marketplace entry %q has strict: false, which makes the entry the whole definition; move them into the entry or set strict: true",
				strings.Join(fields, ", "), entry.Name)
		} else {
			l.warn(mfile, "", "ignored: the marketplace entry %q has strict: false and is the whole definition", entry.Name)
		}
		p.Manifest = entry.Manifest
	default:
		p.Manifest = l.merge(entry.Manifest, *pm, mfile)
	}
	if p.Manifest.Name == "" {
		p.Manifest.Name = filepath.Base(real)
	}
	if err := ValidateName(p.Manifest.Name); err != nil {
		l.fail(TypeManifestInvalid, dir, "name", "plugin name: %v", err)
	}
	if l.firstType == "" {
		l.discover(&p.Manifest)
	}
	if l.firstType != "" {
		return nil, l.diags, &Error{Layer: LayerMaterialization, Type: l.firstType, Object: dir,
			Err: firstError(l.diags), Hint: "fix the plugin and run: wharf validate " + dir}
	}
	sort.SliceStable(l.comps, func(i, j int) bool {
		a, b := l.comps[i], l.comps[j]
		if a.Kind != b.Kind {
			return kindOrder(a.Kind) < kindOrder(b.Kind)
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Name < b.Name
	})
	p.Components = l.comps
	p.Failed = l.failed
	return p, l.diags, nil
}

func kindOrder(k ComponentKind) int {
	for i, c := range ComponentKinds {
		if c == k {
			return i
		}
	}
	return len(ComponentKinds)
}

type loader struct {
	root       string // as given
	real       string // absolute, symlinks resolved
	diags      []Diagnostic
	firstType  string
	comps      []Component
	seen       map[string]bool // kind + "\x00" + path + "\x00" + name
	inlineFile map[string]string
	failed     []FailedComponent
}

func (l *loader) fail(typ, file, field, format string, args ...any) {
	if l.firstType == "" {
		l.firstType = typ
	}
	l.diags = append(l.diags, Diagnostic{File: file, Field: field, Severity: SeverityError, Message: fmt.Sprintf(format, args...)})
}

func (l *loader) warn(file, field, format string, args ...any) {
	l.diags = append(l.diags, Diagnostic{File: file, Field: field, Severity: SeverityWarning, Message: fmt.Sprintf(format, args...)})
}

// merge applies the strict merge rule documented on Load.
func (l *loader) merge(e, pm Manifest, mfile string) Manifest {
	if e.Name != "" && pm.Name != "" && e.Name != pm.Name {
		l.warn(mfile, "name", "plugin.json name %q differs from the marketplace entry name %q; plugin.json wins", pm.Name, e.Name)
	}
	if e.Version != "" && pm.Version != "" && e.Version != pm.Version {
		l.warn(mfile, "version", "plugin.json version %q differs from the marketplace entry version %q; plugin.json wins", pm.Version, e.Version)
	}
	out := e
	str := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	str(&out.Name, pm.Name)
	str(&out.DisplayName, pm.DisplayName)
	str(&out.Version, pm.Version)
	str(&out.Description, pm.Description)
	str(&out.Homepage, pm.Homepage)
	str(&out.Repository, pm.Repository)
	str(&out.License, pm.License)
	if pm.Author != nil {
		out.Author = pm.Author
	}
	if pm.Keywords != nil {
		out.Keywords = pm.Keywords
	}
	if pm.DefaultEnabled != nil {
		out.DefaultEnabled = pm.DefaultEnabled
	}
	if pm.UserConfig != nil {
		out.UserConfig = pm.UserConfig
	}
	if pm.Dependencies != nil {
		out.Dependencies = nil
		seen := map[string]bool{}
		for _, d := range append(append([]Dependency(nil), e.Dependencies...), pm.Dependencies...) {
			if !seen[d.String()] {
				seen[d.String()] = true
				out.Dependencies = append(out.Dependencies, d)
			}
		}
	}
	out.Commands = unionPaths(e.Commands, pm.Commands)
	out.Agents = unionPaths(e.Agents, pm.Agents)
	out.Skills = unionPaths(e.Skills, pm.Skills)
	out.OutputStyles = unionPaths(e.OutputStyles, pm.OutputStyles)
	spec := func(name string, a, b ComponentSpec) ComponentSpec {
		s := ComponentSpec{Paths: unionPaths(a.Paths, b.Paths), Inline: a.Inline}
		if b.Inline != nil {
			if a.Inline != nil && !jsonEqual(a.Inline, b.Inline) {
				l.warn(mfile, name, "inline %s in plugin.json replaces the one in the marketplace entry", name)
			}
			s.Inline = b.Inline
			l.inlineFile[name] = manifestRel
		}
		return s
	}
	out.Hooks = spec("hooks", e.Hooks, pm.Hooks)
	out.MCPServers = spec("mcpServers", e.MCPServers, pm.MCPServers)
	out.LSPServers = spec("lspServers", e.LSPServers, pm.LSPServers)
	if len(e.Extra)+len(pm.Extra) > 0 {
		out.Extra = map[string]json.RawMessage{}
		for k, v := range e.Extra {
			out.Extra[k] = v
		}
		for k, v := range pm.Extra {
			out.Extra[k] = v
		}
	}
	return out
}

func unionPaths(a, b []string) []string {
	if a == nil && b == nil {
		return nil
	}
	out := []string{}
	seen := map[string]bool{}
	for _, p := range append(append([]string(nil), a...), b...) {
		if c := cleanRel(p); !seen[c] {
			seen[c] = true
			out = append(out, p)
		}
	}
	return out
}

// inside reports whether the file at abs (rel from the root) stays inside
// the root once symlinks are resolved; it records an error when it does not.
func (l *loader) inside(abs, rel, field string) bool {
	if l.linkFree(rel) {
		return true
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		l.fail(TypeComponentLoad, abs, field, "%s: %v", rel, err)
		return false
	}
	real, _ = filepath.Abs(real)
	r, err := filepath.Rel(l.real, real)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		l.fail(TypeComponentLoad, abs, field, "%s resolves to %s, outside the plugin root", rel, real)
		return false
	}
	return true
}

// linkFree reports whether no component of rel (a path from the root with
// no ".." in it) is a symlink, so that it resolves to the root's real path
// joined with rel: inside the root, without resolving every component of the
// absolute path as EvalSymlinks does.
func (l *loader) linkFree(rel string) bool {
	rel = cleanRel(filepath.ToSlash(rel))
	if rel == "." {
		return true
	}
	p := l.root
	for _, seg := range strings.Split(rel, "/") {
		if seg == ".." {
			return false
		}
		p = filepath.Join(p, seg)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			return false
		}
	}
	return true
}

// stat resolves a checked relative path. declared paths that are missing are
// errors; default locations that are missing are skipped.
func (l *loader) stat(rel, field string, declared bool) (string, fs.FileInfo, bool) {
	if err := checkRelPath(rel, declared); err != nil {
		l.fail(TypeManifestInvalid, l.root, field, "%v", err)
		return "", nil, false
	}
	abs := filepath.Join(l.root, filepath.FromSlash(cleanRel(rel)))
	if _, err := os.Lstat(abs); err != nil {
		if declared {
			l.fail(TypeComponentLoad, l.root, field, "%s: declared path does not exist", rel)
		}
		return "", nil, false
	}
	if !l.inside(abs, rel, field) {
		return "", nil, false
	}
	fi, err := os.Stat(abs)
	if err != nil {
		l.fail(TypeComponentLoad, l.root, field, "%s: %v", rel, err)
		return "", nil, false
	}
	return abs, fi, true
}

func (l *loader) add(kind ComponentKind, name, rel string) {
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	k := string(kind) + "\x00" + rel + "\x00" + name
	if l.seen[k] {
		return
	}
	l.seen[k] = true
	if kind != KindHook {
		nk := string(kind) + "\x01" + name
		if l.seen[nk] {
			l.fail(TypeComponentLoad, l.root, "", "two %ss are named %q (the second is %s)", kind, name, rel)
			return
		}
		l.seen[nk] = true
	}
	if len(l.comps) >= maxComponents {
		if len(l.comps) == maxComponents {
			l.fail(TypeComponentLoad, l.root, "", "more than %d components", maxComponents)
		}
		return
	}
	l.comps = append(l.comps, Component{Kind: kind, Name: name, Path: rel})
}

func (l *loader) discover(m *Manifest) {
	l.markdown(KindCommand, "commands", m.Commands, "./commands")
	l.markdown(KindAgent, "agents", m.Agents, "./agents")
	l.markdown(KindOutputStyle, "outputStyles", m.OutputStyles, "./output-styles")
	l.skills(m)
	l.jsonComponents(KindHook, "hooks", m.Hooks, "./hooks/hooks.json")
	l.jsonComponents(KindMCPServer, "mcpServers", m.MCPServers, "./.mcp.json")
	l.jsonComponents(KindLSPServer, "lspServers", m.LSPServers, "./.lsp.json")
}

// relOf returns abs relative to the root, slash-separated.
func (l *loader) relOf(abs string) string {
	r, err := filepath.Rel(l.root, abs)
	if err != nil {
		return filepath.ToSlash(abs)
	}
	return filepath.ToSlash(r)
}

// markdown discovers Markdown components. A file in a subdirectory is named
// with ':' between the parts, as Claude Code namespaces commands.
func (l *loader) markdown(kind ComponentKind, field string, declared PathList, def string) {
	paths, isDeclared := []string(declared), declared != nil
	if !isDeclared {
		paths = []string{def}
	}
	for i, rel := range paths {
		f := field
		if isDeclared {
			f = index(field, i)
		}
		abs, fi, ok := l.stat(rel, f, isDeclared)
		if !ok {
			continue
		}
		if !fi.IsDir() {
			if !strings.HasSuffix(fi.Name(), ".md") {
				l.fail(TypeComponentLoad, l.root, f, "%s: expected a Markdown (.md) file or a directory", rel)
				continue
			}
			l.add(kind, strings.TrimSuffix(filepath.Base(abs), ".md"), l.relOf(abs))
			continue
		}
		l.walkMarkdown(kind, abs, f)
	}
}

func (l *loader) walkMarkdown(kind ComponentKind, dir, field string) {
	// WalkDir does not descend into a symlinked root; walk what it points
	// to (already checked to be inside the plugin) and name files by the
	// path the manifest used.
	base := l.relOf(dir)
	walkRoot, err := dir, error(nil)
	if !l.linkFree(base) {
		walkRoot, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		l.fail(TypeComponentLoad, l.root, field, "%s: %v", base, err)
		return
	}
	err = filepath.WalkDir(walkRoot, func(p string, de fs.DirEntry, err error) error {
		sub, _ := filepath.Rel(walkRoot, p)
		rel := path.Join(base, filepath.ToSlash(sub))
		if err != nil {
			l.fail(TypeComponentLoad, l.root, field, "%s: %v", rel, err)
			return nil
		}
		if p == walkRoot {
			return nil
		}
		if strings.HasPrefix(de.Name(), ".") {
			if de.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if de.IsDir() || !strings.HasSuffix(de.Name(), ".md") {
			return nil
		}
		if de.Type()&fs.ModeSymlink != 0 {
			if !l.inside(p, rel, field) {
				return nil
			}
			if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
				l.warn(l.root, field, "%s: symlink to something other than a file; skipped", rel)
				return nil
			}
		} else if !de.Type().IsRegular() {
			return nil
		}
		name := strings.ReplaceAll(strings.TrimSuffix(filepath.ToSlash(sub), ".md"), "/", ":")
		l.add(kind, name, rel)
		return nil
	})
	if err != nil {
		l.fail(TypeComponentLoad, l.root, field, "%v", err)
	}
}

// skills discovers skills/<name>/SKILL.md, declared skill directories (each
// a skill itself or a directory of skills) and a root SKILL.md.
func (l *loader) skills(m *Manifest) {
	declared := m.Skills != nil
	paths := []string(m.Skills)
	if !declared {
		paths = []string{"./skills"}
	}
	before := len(l.comps)
	for i, rel := range paths {
		f := "skills"
		if declared {
			f = index("skills", i)
		}
		abs, fi, ok := l.stat(rel, f, declared)
		if !ok {
			continue
		}
		if !fi.IsDir() {
			if fi.Name() != "SKILL.md" {
				l.fail(TypeComponentLoad, l.root, f, "%s: expected a skill directory or a SKILL.md file", rel)
				continue
			}
			l.addSkill(filepath.Dir(abs), m.Name)
			continue
		}
		if l.isSkillDir(filepath.Join(abs, "SKILL.md"), f) {
			l.addSkill(abs, m.Name)
			continue
		}
		entries, err := os.ReadDir(abs)
		if err != nil {
			l.fail(TypeComponentLoad, l.root, f, "%s: %v", rel, err)
			continue
		}
		found := false
		for _, de := range entries {
			if strings.HasPrefix(de.Name(), ".") {
				continue
			}
			sub := filepath.Join(abs, de.Name())
			if de.Type()&fs.ModeSymlink != 0 && !l.inside(sub, l.relOf(sub), f) {
				continue
			}
			if fi, err := os.Stat(sub); err != nil || !fi.IsDir() {
				continue
			}
			if l.isSkillDir(filepath.Join(sub, "SKILL.md"), f) {
				l.addSkill(sub, m.Name)
				found = true
			}
		}
		if !found && declared {
			l.warn(l.root, f, "%s: no SKILL.md found in it or in its subdirectories", rel)
		}
	}
	if !declared && len(l.comps) == before {
		abs := filepath.Join(l.root, "SKILL.md")
		if _, err := os.Lstat(filepath.Join(l.root, "skills")); errors.Is(err, fs.ErrNotExist) && l.isSkillDir(abs, "skills") {
			l.add(KindSkill, m.Name, "SKILL.md")
		}
	}
}

// isSkillDir reports whether skillMD exists as a regular file inside the root.
func (l *loader) isSkillDir(skillMD, field string) bool {
	fi, err := os.Lstat(skillMD)
	if err != nil {
		return false
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if !l.inside(skillMD, l.relOf(skillMD), field) {
			return false
		}
		fi, err = os.Stat(skillMD)
		if err != nil {
			return false
		}
	}
	return fi.Mode().IsRegular()
}

func (l *loader) addSkill(dir, pluginName string) {
	name := filepath.Base(dir)
	if rel := l.relOf(dir); rel == "." {
		name = pluginName
	}
	l.add(KindSkill, name, path.Join(l.relOf(dir), "SKILL.md"))
}

// jsonComponents loads hooks, MCP or LSP definitions: the default file, the
// declared files and the inline object.
func (l *loader) jsonComponents(kind ComponentKind, field string, spec ComponentSpec, def string) {
	type src struct {
		rel, f   string
		declared bool
	}
	srcs := []src{{def, field, false}}
	for i, p := range spec.Paths {
		srcs = append(srcs, src{p, index(field, i), true})
	}
	done := map[string]bool{}
	for _, s := range srcs {
		if err := checkRelPath(s.rel, true); err == nil && done[cleanRel(s.rel)] {
			continue
		}
		abs, fi, ok := l.stat(s.rel, s.f, s.declared)
		if !ok {
			continue
		}
		done[cleanRel(s.rel)] = true
		if fi.IsDir() {
			l.fail(TypeComponentLoad, l.root, s.f, "%s: expected a JSON file, found a directory", s.rel)
			continue
		}
		data, err := readManifestFile(abs)
		if err != nil {
			l.fail(TypeComponentLoad, abs, s.f, "%v", err)
			continue
		}
		l.parseComponents(kind, data, abs, l.relOf(abs))
	}
	if spec.Inline != nil {
		file := l.inlineFile[field]
		where := file
		if where == "" {
			where = "marketplace entry"
		}
		l.parseComponents(kind, spec.Inline, where, file)
	}
}

func (l *loader) parseComponents(kind ComponentKind, data []byte, file, rel string) {
	var names []string
	var diags []Diagnostic
	var err error
	switch kind {
	case KindHook:
		var h *HooksConfig
		if h, diags, err = ParseHooks(data, file); err == nil {
			for _, ev := range HookEvents {
				if len(h.Hooks[ev]) > 0 {
					names = append(names, string(ev))
				}
			}
			var unknown []string
			for ev := range h.Hooks {
				if !ev.IsKnown() {
					unknown = append(unknown, string(ev))
				}
			}
			sort.Strings(unknown)
			names = append(names, unknown...)
		}
	case KindMCPServer:
		var c *MCPConfig
		if c, diags, err = ParseMCPServers(data, file); err == nil {
			names = c.Names()
			l.addFailed(c.Failed, rel, "mcpServers")
		}
	case KindLSPServer:
		var c *LSPConfig
		if c, diags, err = ParseLSPServers(data, file); err == nil {
			names = c.Names()
			l.addFailed(c.Failed, rel, "lspServers")
		}
	}
	if rel == "" || rel == manifestRel {
		// Inline definitions were checked, with positions, when the
		// manifest was parsed; repeating their warnings adds nothing.
		diags = nil
	}
	l.diags = append(l.diags, diags...)
	if err != nil {
		if fe := firstError(diags); fe == nil {
			l.fail(TypeComponentLoad, file, "", "%v", err)
		} else if l.firstType == "" {
			l.firstType = TypeComponentLoad
		}
		return
	}
	for _, n := range names {
		l.add(kind, n, rel)
	}
}

// addFailed records the failed entries of one file; those of an inline
// object are located under its manifest key.
func (l *loader) addFailed(failed []FailedComponent, rel, field string) {
	for _, f := range failed {
		f.Path = rel
		if rel == "" || rel == manifestRel {
			if strings.HasPrefix(f.Field, "[") {
				f.Field = field + f.Field
			} else {
				f.Field = field + "." + f.Field
			}
		}
		l.failed = append(l.failed, f)
	}
}
