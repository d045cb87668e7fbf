package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Validate checks a marketplace or a plugin and returns every finding.
//
// path is a marketplace root (it has .claude-plugin/marketplace.json), a
// marketplace.json file, a plugin directory or a plugin.json file. For a
// marketplace every plugin it lists by relative path is loaded and checked
// too. Errors are wrong types, bad or escaping paths, invalid names,
// conflicting manifests and unparsable component files; warnings are unknown
// keys, non-standard forms, missing metadata (description, version, author)
// and unreadable Markdown front matter. With strict every warning is an
// error.
//
// The error is non-nil when the path cannot be read or any diagnostic is an
// error: an *Error with Type TypeManifestInvalid wrapping the first
// finding (*FieldError or *SyntaxError).
func Validate(path string, strict bool) ([]Diagnostic, error) {
	return ValidateWith(path, ValidateOptions{Strict: strict})
}

// ValidateOptions tune ValidateWith.
type ValidateOptions struct {
	// Strict makes every warning an error.
	Strict bool
	// Verbose adds warnings that rarely help: a missing version on an
	// entry whose plugin is fetched from elsewhere (its version comes from
	// the fetched plugin.json or its commit).
	Verbose bool
	// Profile "directory" (ProfileDirectory) makes the plugin directory's
	// blocking findings (no README of 40 words, no license) errors; by
	// default they are warnings.
	Profile string
}

// Report is everything ValidateReport finds: the diagnostics, and for a
// plugin directory what the plugin provides (nil for a marketplace or a
// manifest file).
type Report struct {
	Diagnostics []Diagnostic
	Provides    *Provides
}

// ValidateWith is Validate with options. Besides wharf's own checks it
// gives Claude Code's verdicts (claude plugin validate and its install-time
// manifest schema): a hooks file without its "hooks" wrapper, a directory
// with no .claude-plugin/plugin.json and no skills tree, author as a string
// and repository as an object in plugin.json, a plugin name that passes as
// Anthropic's own (ClaudePluginName), Markdown front matter Claude Code
// cannot read (its fields are dropped) are errors; a command without front
// matter, a CLAUDE.md at the plugin root and ${CLAUDE_PLUGIN_ROOT} unquoted
// in a hook command are warnings. A plugin directory also gets the plugin
// directory's checks (README, license, icon, privacy policy), warnings
// unless o.Profile is "directory". For a marketplace it also refuses what
// installing would: a dependency the marketplace does not list, a
// cross-marketplace dependency it does not allow, and a dependency cycle.
func ValidateWith(path string, o ValidateOptions) ([]Diagnostic, error) {
	r, err := ValidateReport(path, o)
	if r == nil {
		return nil, err
	}
	return r.Diagnostics, err
}

// ValidateReport is ValidateWith returning the whole Report.
func ValidateReport(path string, o ValidateOptions) (*Report, error) {
	if o.Profile != "" && o.Profile != ProfileDirectory {
		return nil, &Error{Layer: LayerMaterialization, Type: TypeManifestInvalid, Object: path,
			Err: fmt.Errorf("unknown profile %q", o.Profile), Hint: "the only profile is \"directory\""}
	}
	strict := o.Strict
	fi, err := os.Stat(path)
	if err != nil {
		return nil, &Error{Layer: LayerMaterialization, Type: TypeNotFound, Object: path, Err: err,
			Hint: "give a marketplace root, a plugin directory or a manifest file"}
	}
	v := &validator{verbose: o.Verbose, profile: o.Profile}
	rep := &Report{}
	switch {
	case fi.IsDir():
		if _, err := os.Stat(MarketplaceFile(path)); err == nil {
			v.marketplace(MarketplaceFile(path), path)
		} else {
			rep.Provides = v.pluginDir(path)
		}
	case filepath.Base(path) == "plugin.json":
		dir := filepath.Dir(path)
		if filepath.Base(dir) == ".claude-plugin" {
			rep.Provides = v.pluginDir(filepath.Dir(dir))
		} else {
			v.manifestFile(path)
		}
	default:
		root := filepath.Dir(path)
		if filepath.Base(root) == ".claude-plugin" {
			root = filepath.Dir(root)
		}
		v.marketplace(path, root)
	}
	if strict {
		for i := range v.diags {
			if v.diags[i].Severity == SeverityWarning {
				v.diags[i].Severity = SeverityError
				v.diags[i].Message += " (strict)"
			}
		}
	}
	rep.Diagnostics = v.diags
	n := countErrors(v.diags)
	if n == 0 {
		return rep, nil
	}
	first := firstError(v.diags)
	return rep, &Error{Layer: LayerMaterialization, Type: TypeManifestInvalid, Object: path,
		Err: fmt.Errorf("%d problem(s); first: %w", n, first), Hint: "fix the listed problems and run wharf validate again"}
}

// pluginDir validates a plugin directory given on its own. Claude Code
// takes a directory without .claude-plugin/plugin.json only when it holds
// a skills tree (skills/<name>/SKILL.md); then its Markdown is checked.
func (v *validator) pluginDir(dir string) *Provides {
	hasManifest := fileExists(ManifestFile(dir))
	if !hasManifest && !hasSkillsTree(dir) {
		msg := "no .claude-plugin/plugin.json: Claude Code refuses a plugin directory without one unless it holds a skills tree (skills/<name>/SKILL.md)"
		if fileExists(filepath.Join(dir, "plugin.json")) {
			msg = "plugin.json is at the plugin's root: Claude Code reads it only at .claude-plugin/plugin.json; move it there"
		}
		v.add(SeverityError, dir, "", "%s", msg)
		return nil
	}
	p := v.plugin(dir, nil)
	if p == nil {
		return nil
	}
	file := ManifestFile(dir)
	if !hasManifest {
		file = dir
	}
	v.directoryChecks(p, file, hasManifest, repoRoot(dir))
	pr := p.Provides()
	return &pr
}

// repoRoot is the repository holding dir (the nearest parent with .git),
// or "": a README or LICENSE there counts for a plugin in a sub-folder.
func repoRoot(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// hasSkillsTree reports skills/<name>/SKILL.md in dir.
func hasSkillsTree(dir string) bool {
	entries, err := os.ReadDir(filepath.Join(dir, "skills"))
	if err != nil {
		return false
	}
	for _, e := range entries {
		if fileExists(filepath.Join(dir, "skills", e.Name(), "SKILL.md")) {
			return true
		}
	}
	return false
}

type validator struct {
	diags   []Diagnostic
	verbose bool
	// official: the marketplace being checked has a name Claude Code
	// reserves for Anthropic, whose plugins may carry Anthropic's names.
	official bool
	// inMarketplace: plugins are checked as part of a marketplace, where
	// Claude Code does not read their Markdown; its verdicts on it are
	// warnings there.
	inMarketplace bool
	profile       string
}

func (v *validator) add(sev Severity, file, field, format string, args ...any) {
	v.diags = append(v.diags, Diagnostic{File: file, Field: field, Severity: sev, Message: fmt.Sprintf(format, args...)})
}

// fromError records err as a diagnostic unless it is already one.
func (v *validator) fromError(err error, file string) {
	var se *SyntaxError
	var ze *SizeError
	switch {
	case errors.As(err, &se):
		v.diags = append(v.diags, Diagnostic{File: se.File, Line: se.Line, Col: se.Col, Severity: SeverityError, Message: "invalid JSON: " + se.Msg})
	case errors.As(err, &ze):
		v.add(SeverityError, ze.File, "", "%d bytes is over the %d byte limit", ze.Size, ze.Limit)
	default:
		v.add(SeverityError, file, "", "%v", err)
	}
}

func (v *validator) manifestFile(file string) {
	m, diags, err := readDocument(file, ParseManifest)
	v.diags = append(v.diags, diags...)
	if err != nil {
		if !hasErrors(diags) {
			v.fromError(err, file)
		}
		return
	}
	v.metadata(m, file, "")
}

func (v *validator) marketplace(file, root string) {
	data, err := readManifestFile(file)
	if err != nil {
		v.fromError(err, file)
		return
	}
	n, d, err := openDocument(data, file)
	if err != nil {
		v.fromError(err, file)
		return
	}
	// Decode directly (not ParseMarketplace) so that one bad entry does not
	// hide the problems of the plugins listed after it.
	m := d.marketplace(n)
	v.diags = append(v.diags, d.finish()...)
	v.official = isReservedMarketplace(m.Name)
	v.inMarketplace = true
	if pd, err := applyPins(m, file); err != nil {
		if len(pd) > 0 {
			v.diags = append(v.diags, pd...)
		} else {
			v.fromError(err, filepath.Join(filepath.Dir(file), PinsFileName))
		}
	}
	deps := make([][]Dependency, len(m.Plugins))
	for i := range m.Plugins {
		deps[i] = m.Plugins[i].Dependencies
	}
	if m.EffectiveDescription() == "" {
		v.add(SeverityWarning, file, "description", "marketplace has no description (top level or metadata.description)")
	}
	if m.EffectiveVersion() == "" {
		v.add(SeverityWarning, file, "version", "marketplace has no version (top level or metadata.version)")
	}
	if len(m.Plugins) == 0 {
		v.add(SeverityWarning, file, "plugins", "marketplace lists no plugins")
	}
	if v.profile == ProfileDirectory {
		v.add(SeverityError, file, "", "the directory profile checks a plugin folder, and this is a marketplace: give the folder of one of its plugins")
	}
	for i := range m.Plugins {
		e := &m.Plugins[i]
		f := index("plugins", i)
		if e.Name == "" || ValidateName(e.Name) != nil {
			continue // already reported
		}
		v.pluginName(e.Name, file, key(f, "name"))
		if e.Source.Kind != SourceRelative {
			if e.Source.Kind != "" {
				v.metadataOf(&e.Manifest, file, f, !v.verbose)
			}
			continue
		}
		if checkRelPath(e.Source.Path, true) != nil {
			continue // already reported
		}
		dir, err := e.LocalDir(root)
		if err != nil {
			var pe *Error
			if errors.As(err, &pe) {
				err = pe.Err
			}
			v.add(SeverityError, file, key(f, "source"), "%v", err)
			continue
		}
		if p := v.plugin(dir, e); p != nil {
			deps[i] = p.Manifest.Dependencies
		}
	}
	v.dependencies(m, file, deps)
}

// dependencies refuses what installing would: a dependency on a plugin the
// marketplace does not list, on another marketplace it does not allow, and
// a cycle. deps holds each entry's effective dependencies (its loaded
// plugin's for a relative source, else the entry's).
func (v *validator) dependencies(m *Marketplace, file string, deps [][]Dependency) {
	byName := map[string]int{}
	for i := range m.Plugins {
		if _, dup := byName[m.Plugins[i].Name]; !dup {
			byName[m.Plugins[i].Name] = i
		}
	}
	allowed := map[string]bool{}
	for _, s := range m.AllowCrossMarketplaceDependenciesOn {
		allowed[s] = true
	}
	edges := make([][]int, len(m.Plugins))
	for i := range m.Plugins {
		f := key(index("plugins", i), "dependencies")
		for j, d := range deps[i] {
			df := index(f, j)
			if d.Marketplace != "" && d.Marketplace != m.Name {
				if !allowed[d.Marketplace] {
					v.add(SeverityError, file, df, "%s depends on %s, but the marketplace does not list %q in allowCrossMarketplaceDependenciesOn; wharf install refuses it",
						m.Plugins[i].Name, d, d.Marketplace)
				}
				continue
			}
			k, ok := byName[d.Name]
			if !ok {
				v.add(SeverityError, file, df, "%s depends on %q, which this marketplace does not list; wharf install refuses it (dependency unsatisfied)", m.Plugins[i].Name, d.Name)
				continue
			}
			edges[i] = append(edges[i], k)
		}
	}
	// A cycle is reported once, at the entry where the search meets it.
	state := make([]uint8, len(m.Plugins)) // 0 new, 1 on path, 2 done
	var path []int
	var visit func(i int)
	visit = func(i int) {
		state[i] = 1
		path = append(path, i)
		for _, k := range edges[i] {
			switch state[k] {
			case 0:
				visit(k)
			case 1:
				var chain []string
				for at := len(path) - 1; at >= 0; at-- {
					if path[at] == k {
						for _, x := range path[at:] {
							chain = append(chain, m.Plugins[x].Name)
						}
						break
					}
				}
				chain = append(chain, m.Plugins[k].Name)
				v.add(SeverityError, file, key(index("plugins", i), "dependencies"), "dependency cycle: %s; wharf install refuses it", strings.Join(chain, " -> "))
			}
		}
		path = path[:len(path)-1]
		state[i] = 2
	}
	for i := range m.Plugins {
		if state[i] == 0 {
			visit(i)
		}
	}
}

// plugin loads one plugin directory and checks its metadata and Markdown.
func (v *validator) plugin(dir string, e *Entry) *Plugin {
	p, diags, err := Load(dir, e)
	v.diags = append(v.diags, diags...)
	if err != nil {
		if !hasErrors(diags) {
			v.fromError(err, dir)
		}
		return nil
	}
	file := ManifestFile(dir)
	hasManifest := true
	if _, err := os.Stat(file); err != nil {
		file, hasManifest = dir, false
	}
	if hasManifest {
		// Claude Code warns about the metadata of a plugin.json; a plugin
		// without one is described by its marketplace entry.
		v.metadata(&p.Manifest, file, "")
	}
	v.claude(p, file, hasManifest)
	v.contentChecks(p)
	return p
}

// claude adds Claude Code's verdicts on a plugin that wharf's loader
// accepts leniently.
func (v *validator) claude(p *Plugin, file string, hasManifest bool) {
	if !hasManifest && len(p.Components) == 0 && len(p.Failed) == 0 {
		v.add(SeverityError, p.Root, "", "not a plugin: no .claude-plugin/plugin.json and no commands, agents, skills, output styles, hooks, MCP or LSP servers (Claude Code refuses it)")
	}
	if hasManifest || !v.inMarketplace {
		// Without plugin.json the name is the entry's, checked there.
		v.pluginName(p.Manifest.Name, file, "name")
	}
	if hasManifest {
		if data, err := readManifestFile(file); err == nil {
			if n, d, err := openDocument(data, file); err == nil && n.kind == kindObject {
				if a := n.get("author"); a != nil && a.kind == kindString {
					d.errorf(a, "author", "expected object {name, email?, url?}, received string; Claude Code refuses to install this plugin.json (write {\"name\": %q})", a.str)
				}
				if a := n.get("agents"); a != nil {
					items := []*node{a}
					if a.kind == kindArray {
						items = a.elems
					}
					for i, it := range items {
						f := "agents"
						if a.kind == kindArray {
							f = index(f, i)
						}
						if it.kind == kindString && !strings.HasSuffix(it.str, ".md") {
							d.errorf(it, f, "%q is not a Markdown file: Claude Code takes agents only as a list of .md files and refuses this plugin.json (list each agent file, or leave agents out to use the agents/ folder)", it.str)
						}
					}
				}
				if r := n.get("repository"); r != nil && r.kind == kindObject {
					d.errorf(r, "repository", "expected string, received object; Claude Code refuses to install this plugin.json (write the URL as a string)")
				}
				found := d.finish()
				// The loader's lenient warnings about the same fields
				// give way to the errors.
				kept := v.diags[:0]
				for _, x := range v.diags {
					if !(x.Severity == SeverityWarning && x.File == file && hasField(found, x.Field)) {
						kept = append(kept, x)
					}
				}
				v.diags = append(kept, found...)
			}
		}
	}
	seen := map[string]bool{}
	for _, c := range p.ComponentsOf(KindHook) {
		if c.Path == "" || c.Path == manifestRel || seen[c.Path] {
			continue
		}
		seen[c.Path] = true
		abs := filepath.Join(p.Root, filepath.FromSlash(c.Path))
		data, err := readManifestFile(abs)
		if err != nil {
			continue
		}
		if n, _, err := openDocument(data, abs); err == nil && n.kind == kindObject && n.get("hooks") == nil {
			v.add(SeverityError, abs, "", "hooks file without its \"hooks\" wrapper: Claude Code expects {\"hooks\": {\"<Event>\": [...]}} and refuses this file (wharf reads it leniently)")
		}
	}
}

// pluginName gives Claude Code's verdict on a plugin name.
func (v *validator) pluginName(name, file, field string) {
	if v.official {
		return
	}
	switch verdict, msg := ClaudePluginName(name); verdict {
	case NameImitation:
		v.add(SeverityError, file, field, "%s", msg)
	case NameLooksOwn:
		v.add(SeverityWarning, file, field, "%s", msg)
	}
}

func (v *validator) metadata(m *Manifest, file, field string) {
	v.metadataOf(m, file, field, false)
}

// metadataOf checks the descriptive fields; quietVersion leaves out the
// missing version (an entry fetched from elsewhere).
func (v *validator) metadataOf(m *Manifest, file, field string, quietVersion bool) {
	if m.Description == "" {
		v.add(SeverityWarning, file, key(field, "description"), "plugin %q has no description", m.Name)
	}
	if m.Version == "" && !quietVersion {
		v.add(SeverityWarning, file, key(field, "version"), "plugin %q has no version; it will be versioned by the 12-digit commit of its git source or marketplace, or \"unknown\"", m.Name)
	}
	if m.Author == nil {
		v.add(SeverityWarning, file, key(field, "author"), "plugin %q has no author", m.Name)
	}
}

func hasField(diags []Diagnostic, field string) bool {
	for _, d := range diags {
		if d.Field == field {
			return true
		}
	}
	return false
}
