package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// warning. With strict: false the entry is the whole definition of the
// metadata (see below for components). Without plugin.json and without an
// entry the name is the directory's name.
//
// Components come from the manifest paths and the default layout, as Claude
// Code finds them. For commands, agents and output styles, declared paths
// replace the default directory; declared skills add to skills/, except in a
// plugin that is its marketplace's root (so an entry with source "./"
// listing four skills of the shared skills/ directory gets those four);
// hooks, MCP and LSP files declared in the manifest are loaded in addition
// to the default files, and of two servers with the same name the inline
// definition wins over a file's. A declared path that does not exist is
// skipped (an error diagnostic and a failed component; the rest loads). A
// Markdown file reached twice is one component; of two components of a kind
// with the same name the first is kept, with a warning. Agents are named by
// their front matter's name. A root SKILL.md with no skills/ directory and
// no declared skills makes a one-skill plugin. Without
// .claude-plugin/plugin.json, a plugin.json at the root gives the version.
//
// With strict: false, plugin.json's components load when the entry declares
// none; both declaring components is a conflict.
//
// Every component path must stay inside dir, also through symlinks. Errors
// are *Error (Layer LayerMaterialization) wrapping a *FieldError, with Type
// TypeManifestParse, TypeManifestInvalid, TypeConflict or TypeComponentLoad.
func Load(dir string, entry *Entry) (*Plugin, []Diagnostic, error) {
	return LoadFiles(dir, entry, nil)
}

// LoadFiles is Load for a caller that has already read some of the files
// under dir: files maps a file's path, filepath.Join(dir, rel), to its
// contents, which must be what the file holds now. Load takes a file's
// contents from there instead of reading it again (the manifests, the
// hooks, MCP and LSP files, the front matter of Markdown files); every
// other file, and everything about the tree's layout, is read from disk
// as Load reads it.
func LoadFiles(dir string, entry *Entry, files map[string][]byte) (*Plugin, []Diagnostic, error) {
	if files == nil {
		return loadWith(dir, entry, nil)
	}
	return loadWith(dir, entry, &Tree{Files: files})
}

func loadWith(dir string, entry *Entry, tree *Tree) (*Plugin, []Diagnostic, error) {
	l := &loader{root: dir, tree: tree}
	if tree != nil {
		l.files = tree.Files
	}
	p, err := l.manifest(entry)
	if err != nil {
		return nil, l.diags, err
	}
	if l.firstType == "" {
		l.discover(&p.Manifest)
	}
	return l.finish(p)
}

// LoadManifest is the part of Load that gives the effective manifest: the
// checks of the root, plugin.json (or a root plugin.json's version), the
// merge with entry and the name, without discovering components. When
// Load(dir, entry) returns a plugin, LoadManifest returns its Manifest;
// when that part of Load fails, LoadManifest fails with the same error. It
// succeeds where Load fails only on a component.
func LoadManifest(dir string, entry *Entry) (*Manifest, error) {
	l := &loader{root: dir}
	p, err := l.manifest(entry)
	if err != nil {
		return nil, err
	}
	if p, _, err = l.finish(p); err != nil {
		return nil, err
	}
	return &p.Manifest, nil
}

// manifest checks the root and makes the effective manifest of Load. An
// error it records as a diagnostic (l.firstType) is returned by finish.
func (l *loader) manifest(entry *Entry) (*Plugin, error) {
	dir, tree := l.root, l.tree
	// A tree with the root's listing says the root is a directory; its
	// real path is then resolved only if a path must be checked against
	// it (a symlink, a plugin without a name).
	if _, listed := tree.dirs()[filepath.Clean(dir)]; !listed {
		fi, err := os.Stat(dir)
		if err != nil {
			return nil, &Error{Layer: LayerMaterialization, Type: TypeNotFound, Object: dir, Err: err,
				Hint: "check the plugin's source path in the marketplace"}
		}
		if !fi.IsDir() {
			return nil, Errorf(LayerMaterialization, TypeComponentLoad, dir, "", "plugin root %s is not a directory", dir)
		}
		if _, err := l.realRoot(); err != nil {
			return nil, &Error{Layer: LayerMaterialization, Type: TypeComponentLoad, Object: dir, Err: err}
		}
	}

	var pm *Manifest
	mfile := filepath.Join(dir, filepath.FromSlash(manifestRel))
	if _, err := l.lstat(mfile); err == nil {
		if l.inside(mfile, manifestRel, "plugin.json") {
			m, diags, err := l.readDocument(mfile)
			l.diags = append(l.diags, diags...)
			if err != nil {
				return nil, err
			}
			pm = m
			l.hasManifest = true
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, &Error{Layer: LayerMaterialization, Type: TypeComponentLoad, Object: mfile, Err: err}
	}

	if pm == nil {
		if pm = l.rootManifestVersion(dir); pm != nil {
			mfile = filepath.Join(dir, "plugin.json")
		}
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
		// As Claude Code: the two conflict only when both declare
		// components; plugin.json's components load when the entry
		// declares none; its other fields are ignored either way.
		fields, efields := pm.declaredComponentFields(), entry.Manifest.declaredComponentFields()
		switch {
		case len(fields) > 0 && len(efields) > 0:
			l.fail(TypeConflict, mfile, strings.Join(fields, ","),
				"plugin.json declares %s and the marketplace entry %q, which has strict: false, declares %s; keep the components in one place, or set strict: true to merge them",
				strings.Join(fields, ", "), entry.Name, strings.Join(efields, ", "))
		case len(fields) > 0:
			l.warn(mfile, "", "the marketplace entry %q has strict: false: only the components of plugin.json are used, its other fields are ignored", entry.Name)
		default:
			l.warn(mfile, "", "ignored: the marketplace entry %q has strict: false and is the whole definition", entry.Name)
		}
		p.Manifest = entry.Manifest
		if len(fields) > 0 && len(efields) == 0 {
			pm.copyComponents(&p.Manifest)
			for _, k := range []string{"hooks", "mcpServers", "lspServers"} {
				l.inlineFile[k] = manifestRel
			}
		}
	default:
		p.Manifest = l.merge(entry.Manifest, *pm, mfile)
	}
	if p.Manifest.Name == "" {
		real, err := l.realRoot()
		if err != nil {
			return nil, &Error{Layer: LayerMaterialization, Type: TypeComponentLoad, Object: dir, Err: err}
		}
		p.Manifest.Name = filepath.Base(real)
	}
	if err := ValidateName(p.Manifest.Name); err != nil {
		l.fail(TypeManifestInvalid, dir, "name", "plugin name: %v", err)
	}
	// Declared skills add to the default skills/ directory, except for a
	// plugin that is its marketplace's root ("source": "./"), where the
	// skills/ directory holds the marketplace's skills: there they replace
	// it (what Claude Code does).
	l.skillsAddDefault = entry == nil || !(entry.Source.Kind == SourceRelative && cleanRel(entry.Source.Path) == ".")
	return p, nil
}

// finish returns Load's result once the manifest is made and, without an
// error so far, the components discovered.
func (l *loader) finish(p *Plugin) (*Plugin, []Diagnostic, error) {
	dir := l.root
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
	root string // as given
	// real is the root, absolute, symlinks resolved (realRoot), once
	// resolved (realDone), or the error resolving it.
	real       string
	realErr    error
	realDone   bool
	diags      []Diagnostic
	firstType  string
	comps      []Component
	seen       map[string]bool // kind + "\x00" + path + "\x00" + name
	inlineFile map[string]string
	failed     []FailedComponent
	names      map[string]string // kind + "\x01" + name → path of the first
	// skillsAddDefault: declared skills add to skills/ instead of replacing it.
	skillsAddDefault bool
	hasManifest      bool // .claude-plugin/plugin.json exists
	// files are contents the caller already read (LoadFiles), tree what
	// it listed (LoadTree).
	files map[string][]byte
	tree  *Tree
}

// readFile is readManifestFile, from the caller's copy when it has one
// within the size limit (a larger one is read, and refused, as usual).
func (l *loader) readFile(abs string) ([]byte, error) {
	if data, ok := l.files[abs]; ok && int64(len(data)) <= MaxManifestSize {
		return data, nil
	}
	return readManifestFile(abs)
}

// readDocument reads and parses plugin.json (readDocument through
// readFile).
func (l *loader) readDocument(path string) (*Manifest, []Diagnostic, error) {
	data, err := l.readFile(path)
	if err != nil {
		return nil, nil, err
	}
	return ParseManifest(data, path)
}

func isMarkdownKind(k ComponentKind) bool {
	return k == KindCommand || k == KindAgent || k == KindSkill || k == KindOutputStyle
}

// where names a component's defining file for a message.
func where(rel string) string {
	if rel == "" {
		return "the marketplace entry"
	}
	return rel
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
	if pm.Network != nil {
		out.Network = pm.Network
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
	if pm.CommandObjects != nil {
		out.CommandObjects = pm.CommandObjects
	}
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

// symlinkOutAdvice ends the error for a symlink that leaves the plugin
// folder. Claude Code copies the target of such a link when it stays in the
// marketplace repository; wharf refuses it, because a plugin's digest,
// signatures and approval cover its own folder only (see
// docs/claude-compat.md).
const symlinkOutAdvice = "wharf does not follow a link out of the plugin folder, even into the same marketplace repository (Claude Code copies such a target): " +
	"the plugin's digest, signatures and approval cover its folder only. To publish it, replace the link with a copy of its target " +
	"in the marketplace repository (for example: cp -RL), or ask the plugin's authors to"

// realRoot resolves the root's real path, once.
func (l *loader) realRoot() (string, error) {
	if !l.realDone {
		l.realDone = true
		l.real, l.realErr = filepath.EvalSymlinks(l.root)
		if l.realErr == nil {
			l.real, l.realErr = filepath.Abs(l.real)
		}
	}
	return l.real, l.realErr
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
	root, err := l.realRoot()
	if err != nil {
		l.fail(TypeComponentLoad, abs, field, "%s: the plugin root: %v", rel, err)
		return false
	}
	r, err := filepath.Rel(root, real)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		l.fail(TypeComponentLoad, abs, field, "%s resolves to %s, outside the plugin root; %s", rel, real, symlinkOutAdvice)
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
		fi, err := l.lstat(p)
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
	if _, err := l.lstat(abs); err != nil {
		if declared {
			l.missing(rel, field)
		}
		return "", nil, false
	}
	if !l.inside(abs, rel, field) {
		return "", nil, false
	}
	fi, err := l.statPath(abs)
	if err != nil {
		l.fail(TypeComponentLoad, l.root, field, "%s: %v", rel, err)
		return "", nil, false
	}
	return abs, fi, true
}

// add records a component. As in Claude Code, a Markdown file reached twice
// (a directory and a file or subdirectory of it both declared) is one
// component, named by its first path; and of two components of a kind with
// the same name the first is kept, with a warning.
// missing records a declared component path that does not exist. As in
// Claude Code the rest of the plugin loads: the path is listed as a failed
// component and reported as an error that does not stop the load (claude
// plugin validate fails on it too).
func (l *loader) missing(rel, field string) {
	l.diags = append(l.diags, Diagnostic{File: l.root, Field: field, Severity: SeverityError,
		Message: fmt.Sprintf("%s: declared path does not exist; the rest of the plugin loads without it", rel)})
	where := ""
	if l.hasManifest {
		where = manifestRel
	}
	l.failed = append(l.failed, FailedComponent{Kind: fieldKind(field), Name: rel, Path: where, Field: field,
		Reason: "declared path does not exist"})
}

// fieldKind is the component kind a manifest field ("commands[2]") declares.
func fieldKind(field string) ComponentKind {
	name, _, _ := strings.Cut(field, "[")
	switch name {
	case "commands":
		return KindCommand
	case "agents":
		return KindAgent
	case "skills":
		return KindSkill
	case "outputStyles":
		return KindOutputStyle
	case "hooks":
		return KindHook
	case "mcpServers":
		return KindMCPServer
	case "lspServers":
		return KindLSPServer
	}
	return ComponentKind(name)
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
		if isMarkdownKind(kind) {
			pk := string(kind) + "\x02" + rel
			if l.seen[pk] {
				return
			}
			l.seen[pk] = true
		}
		nk := string(kind) + "\x01" + name
		if first, ok := l.names[nk]; ok {
			l.warn(l.root, "", "two %ss are named %q: %s and %s; the first is kept", kind, name, where(first), where(rel))
			return
		}
		if l.names == nil {
			l.names = map[string]string{}
		}
		l.names[nk] = rel
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
	cmds := m.Commands
	if cmds == nil && m.CommandObjects != nil {
		cmds = PathList{} // the object form replaces commands/ too
	}
	l.markdown(KindCommand, "commands", cmds, "./commands")
	l.commandObjects(m.CommandObjects)
	l.markdown(KindAgent, "agents", m.Agents, "./agents")
	l.markdown(KindOutputStyle, "outputStyles", m.OutputStyles, "./output-styles")
	l.skills(m)
	l.jsonComponents(KindHook, "hooks", m.Hooks, "./hooks/hooks.json")
	l.jsonComponents(KindMCPServer, "mcpServers", m.MCPServers, "./.mcp.json")
	l.jsonComponents(KindLSPServer, "lspServers", m.LSPServers, "./.lsp.json")
}

// commandObjects adds the commands of the object form of the commands
// field: one named by its key for each source file. A command given only as
// inline content is listed as failed: wharf reads a command from a file.
func (l *loader) commandObjects(objs map[string]CommandObject) {
	for _, name := range sortedKeys(objs) {
		c, f := objs[name], key("commands", name)
		if c.Source == "" {
			l.warn(l.root, f, "an inline command (content) is not read by wharf; it is skipped, the rest of the plugin loads")
			l.failed = append(l.failed, FailedComponent{Kind: KindCommand, Name: name, Path: manifestRel, Field: f,
				Reason: "an inline command (content); wharf reads commands from Markdown files: give it a source"})
			continue
		}
		abs, fi, ok := l.stat(c.Source, f, true)
		if !ok {
			continue
		}
		if fi.IsDir() {
			l.fail(TypeComponentLoad, l.root, f, "%s: expected a Markdown file, found a directory", c.Source)
			continue
		}
		l.add(KindCommand, name, l.relOf(abs))
	}
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
			l.add(kind, l.markdownName(kind, abs, strings.TrimSuffix(filepath.Base(abs), ".md"), f), l.relOf(abs))
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
	err = l.walkDir(walkRoot, func(p string, de fs.DirEntry, err error) error {
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
			if fi, err := l.statPath(p); err != nil || !fi.Mode().IsRegular() {
				l.warn(l.root, field, "%s: symlink to something other than a file; skipped", rel)
				return nil
			}
		} else if !de.Type().IsRegular() {
			return nil
		}
		name := strings.ReplaceAll(strings.TrimSuffix(filepath.ToSlash(sub), ".md"), "/", ":")
		l.add(kind, l.markdownName(kind, p, name, field), rel)
		return nil
	})
	if err != nil {
		l.fail(TypeComponentLoad, l.root, field, "%v", err)
	}
}

// skills discovers skills/<name>/SKILL.md, declared skill directories (each
// a skill itself or a directory of skills) and a root SKILL.md.
//
// Unlike commands and agents, declared skill paths add to the default
// skills/ directory (as in Claude Code), except in a plugin that is its
// marketplace's root, where they replace it. A declared path that is itself a
// skill is named by its front matter's name, a skill found in a directory
// of skills by its directory.
func (l *loader) skills(m *Manifest) {
	declared := m.Skills != nil
	type src struct {
		rel, field string
		declared   bool
	}
	var srcs []src
	if !declared || l.skillsAddDefault {
		srcs = append(srcs, src{"./skills", "skills", false})
	}
	for i, rel := range m.Skills {
		if len(srcs) > 0 && !srcs[0].declared && checkRelPath(rel, true) == nil && cleanRel(rel) == "skills" {
			srcs[0] = src{rel, index("skills", i), true}
			continue
		}
		srcs = append(srcs, src{rel, index("skills", i), true})
	}
	before := len(l.comps)
	for _, s := range srcs {
		rel, f := s.rel, s.field
		abs, fi, ok := l.stat(rel, f, s.declared)
		if !ok {
			continue
		}
		if !fi.IsDir() {
			if fi.Name() != "SKILL.md" {
				l.fail(TypeComponentLoad, l.root, f, "%s: expected a skill directory or a SKILL.md file", rel)
				continue
			}
			l.addSkill(filepath.Dir(abs), m.Name, f, s.declared)
			continue
		}
		if l.isSkillDir(filepath.Join(abs, "SKILL.md"), f) {
			l.addSkill(abs, m.Name, f, s.declared)
			continue
		}
		entries, err := l.readDir(abs)
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
			if fi, err := l.statPath(sub); err != nil || !fi.IsDir() {
				continue
			}
			if l.isSkillDir(filepath.Join(sub, "SKILL.md"), f) {
				l.addSkill(sub, m.Name, f, false)
				found = true
			}
		}
		if !found && s.declared {
			l.warn(l.root, f, "%s: no SKILL.md found in it or in its subdirectories", rel)
		}
	}
	if !declared && len(l.comps) == before {
		abs := filepath.Join(l.root, "SKILL.md")
		if _, err := l.lstat(filepath.Join(l.root, "skills")); errors.Is(err, fs.ErrNotExist) && l.isSkillDir(abs, "skills") {
			l.add(KindSkill, m.Name, "SKILL.md")
		}
	}
}

// isSkillDir reports whether skillMD exists as a regular file inside the root.
func (l *loader) isSkillDir(skillMD, field string) bool {
	fi, err := l.lstat(skillMD)
	if err != nil {
		return false
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if !l.inside(skillMD, l.relOf(skillMD), field) {
			return false
		}
		fi, err = l.statPath(skillMD)
		if err != nil {
			return false
		}
	}
	return fi.Mode().IsRegular()
}

// addSkill adds the skill in dir. A declared path that is itself a skill
// takes the name of its front matter, as in Claude Code.
func (l *loader) addSkill(dir, pluginName, field string, byFrontMatter bool) {
	name := filepath.Base(dir)
	if rel := l.relOf(dir); rel == "." {
		name = pluginName
	} else if byFrontMatter {
		name = l.frontMatterName(filepath.Join(dir, "SKILL.md"), name, field)
	}
	l.add(KindSkill, name, path.Join(l.relOf(dir), "SKILL.md"))
}

// markdownName is the name of a Markdown component: an agent is named by
// its front matter's name (as Claude Code names it), the others by path.
func (l *loader) markdownName(kind ComponentKind, abs, byPath, field string) string {
	if kind != KindAgent {
		return byPath
	}
	return l.frontMatterName(abs, byPath, field)
}

// maxNamedFile bounds how much of a Markdown file is read for its name.
const maxNamedFile = 1 << 20

// frontMatterName returns the name field of a Markdown file's YAML front
// matter, or fallback when there is none, the header is not valid YAML
// (Claude Code then keeps only a name derived from the file), or the name
// is not a usable component name (with a warning).
func (l *loader) frontMatterName(abs, fallback, field string) string {
	data, ok := l.files[abs]
	if ok {
		data = data[:min(len(data), maxNamedFile)]
	} else {
		f, err := os.Open(abs)
		if err != nil {
			return fallback
		}
		data, err = io.ReadAll(io.LimitReader(f, maxNamedFile))
		f.Close()
		if err != nil {
			return fallback
		}
	}
	meta, _, lenient, err := parseFrontMatter(data)
	if l.tree != nil && l.tree.FrontMatter != nil && len(data) < maxNamedFile {
		l.tree.FrontMatter[abs] = FrontMatter{Meta: meta, Lenient: lenient, Err: err}
	}
	if err != nil || lenient {
		return fallback
	}
	name, ok := meta["name"].(string)
	if !ok || name == "" {
		return fallback
	}
	if err := validComponentName(name); err != nil {
		l.warn(abs, field, "front matter name %q: %v; named %q from its path instead", name, err, fallback)
		return fallback
	}
	return name
}

// validComponentName accepts the names a front matter may give a skill or
// agent: what becomes part of "<plugin>:<name>" and of a path in an
// agent's listing, so no separators, colons or control characters.
func validComponentName(name string) error {
	if len(name) > 128 {
		return fmt.Errorf("longer than 128 bytes")
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return fmt.Errorf("contains %q; use letters, digits, '-', '_' and '.'", r)
		}
	}
	if name == "." || name == ".." || strings.HasPrefix(name, ".") {
		return fmt.Errorf("starts with '.'")
	}
	return nil
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
	// The inline object comes first: of two servers with the same name,
	// Claude Code keeps plugin.json's (or the entry's) over a file's.
	if spec.Inline != nil {
		file := l.inlineFile[field]
		where := file
		if where == "" {
			where = "marketplace entry"
		}
		l.parseComponents(kind, spec.Inline, where, file)
	}
	done := map[string]bool{}
	for _, s := range srcs {
		if kind == KindMCPServer && s.declared && IsMCPBundle(s.rel) {
			l.bundle(s.rel, s.f)
			continue
		}
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
		data, err := l.readFile(abs)
		if err != nil {
			l.fail(TypeComponentLoad, abs, s.f, "%v", err)
			continue
		}
		l.parseComponents(kind, data, abs, l.relOf(abs))
	}
}

// IsMCPBundle reports whether an mcpServers path names an MCP bundle
// (.mcpb): an https:// URL or a relative path ending in ".mcpb".
func IsMCPBundle(p string) bool {
	return strings.HasSuffix(strings.ToLower(p), ".mcpb") && (strings.HasPrefix(p, "https://") || strings.HasPrefix(p, "./"))
}

// bundle records an MCP bundle named in mcpServers as a failed component:
// Claude Code lists no server for it until the bundle is downloaded and
// unpacked, and wharf neither downloads nor runs bundles, so the rest of the
// plugin loads without it.
func (l *loader) bundle(rel, field string) {
	name := path.Base(rel)
	if i := strings.IndexAny(name, "?#"); i >= 0 {
		name = name[:i]
	}
	name = strings.TrimSuffix(strings.TrimSuffix(name, ".mcpb"), ".MCPB")
	l.warn(l.root, field, "%s is an MCP bundle (.mcpb); wharf does not download or run MCP bundles, so it is skipped and the rest of the plugin loads", rel)
	l.failed = append(l.failed, FailedComponent{Kind: KindMCPServer, Name: name, Path: manifestRel, Field: field,
		Reason: "an MCP bundle (.mcpb); wharf does not download or run MCP bundles"})
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

// rootManifestVersion reads the version of a plugin.json at the plugin's
// root, the place some plugins put their manifest instead of
// .claude-plugin/. Claude Code versions such a plugin by it, so wharf does
// too; nothing else of the file is used. It returns nil when there is no
// such file or it gives no usable version (with a warning).
func (l *loader) rootManifestVersion(dir string) *Manifest {
	const rel = "plugin.json"
	abs := filepath.Join(dir, rel)
	fi, err := l.lstat(abs)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	data, err := l.readFile(abs)
	if err != nil {
		l.warn(abs, "", "%v; its version is not used", err)
		return nil
	}
	var doc struct {
		Version json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.Version == nil {
		return nil
	}
	var v string
	if err := json.Unmarshal(doc.Version, &v); err != nil || v == "" {
		l.warn(abs, "version", "not a version string; not used")
		return nil
	}
	if _, err := SanitizeVersion(v); err != nil {
		l.warn(abs, "version", "%v; not used", err)
		return nil
	}
	l.warn(abs, "", "a plugin.json at the plugin root is not a manifest (that is %s); only its version %q is used, as Claude Code does", manifestRel, v)
	return &Manifest{Version: v}
}

// ClaudeCacheBookkeeping names what Claude Code keeps at the top of each
// version directory of its plugin cache (~/.claude/plugins/cache/<mkt>/
// <plugin>/<version>/) beside the plugin's files: the lease directory of
// the sessions using that version, and the mark of an orphaned version.
// They are not part of the plugin: whatever reads Claude Code's cache (the
// inventory report, a seed cache) leaves them out.
var ClaudeCacheBookkeeping = []string{".in_use", ".orphaned_at"}
