package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	fi, err := os.Stat(path)
	if err != nil {
		return nil, &Error{Layer: LayerMaterialization, Type: TypeNotFound, Object: path, Err: err,
			Hint: "give a marketplace root, a plugin directory or a manifest file"}
	}
	v := &validator{}
	switch {
	case fi.IsDir():
		if _, err := os.Stat(MarketplaceFile(path)); err == nil {
			v.marketplace(MarketplaceFile(path), path)
		} else {
			v.plugin(path, nil)
		}
	case filepath.Base(path) == "plugin.json":
		dir := filepath.Dir(path)
		if filepath.Base(dir) == ".claude-plugin" {
			v.plugin(filepath.Dir(dir), nil)
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
	n := countErrors(v.diags)
	if n == 0 {
		return v.diags, nil
	}
	first := firstError(v.diags)
	return v.diags, &Error{Layer: LayerMaterialization, Type: TypeManifestInvalid, Object: path,
		Err: fmt.Errorf("%d problem(s); first: %w", n, first), Hint: "fix the listed problems and run wharf validate again"}
}

type validator struct {
	diags []Diagnostic
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
	data, err := readManifestFile(file)
	if err != nil {
		v.fromError(err, file)
		return
	}
	m, diags, err := ParseManifest(data, file)
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
	if int64(len(data)) > MaxManifestSize {
		v.fromError(&SizeError{File: file, Size: int64(len(data)), Limit: MaxManifestSize}, file)
		return
	}
	n, err := parseJSON(data, file)
	if err != nil {
		v.fromError(err, file)
		return
	}
	// Decode directly (not ParseMarketplace) so that one bad entry does not
	// hide the problems of the plugins listed after it.
	d := newDecoder(file, data)
	m := d.marketplace(n)
	v.diags = append(v.diags, d.finish()...)
	if m.EffectiveDescription() == "" {
		v.add(SeverityWarning, file, "description", "marketplace has no description (top level or metadata.description)")
	}
	if m.EffectiveVersion() == "" {
		v.add(SeverityWarning, file, "version", "marketplace has no version (top level or metadata.version)")
	}
	for i := range m.Plugins {
		e := &m.Plugins[i]
		f := index("plugins", i)
		if e.Name == "" || ValidateName(e.Name) != nil {
			continue // already reported
		}
		if e.Source.Kind != SourceRelative {
			if e.Source.Kind != "" {
				v.metadata(&e.Manifest, file, f)
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
		v.plugin(dir, e)
	}
}

// plugin loads one plugin directory and checks its metadata and Markdown.
func (v *validator) plugin(dir string, e *Entry) {
	p, diags, err := Load(dir, e)
	v.diags = append(v.diags, diags...)
	if err != nil {
		if !hasErrors(diags) {
			v.fromError(err, dir)
		}
		return
	}
	file := ManifestFile(dir)
	if _, err := os.Stat(file); err != nil {
		file = dir
	}
	v.metadata(&p.Manifest, file, "")
	for _, c := range p.Components {
		switch c.Kind {
		case KindCommand, KindAgent, KindOutputStyle, KindSkill:
		default:
			continue
		}
		abs := filepath.Join(dir, filepath.FromSlash(c.Path))
		data, err := readManifestFile(abs)
		if err != nil {
			v.fromError(err, abs)
			continue
		}
		meta, _, lenient, err := parseFrontMatter(data)
		if err != nil {
			var fe *FrontMatterError
			line := 0
			if errors.As(err, &fe) {
				line = fe.Line
			}
			v.diags = append(v.diags, Diagnostic{File: abs, Line: line, Severity: SeverityWarning,
				Message: fmt.Sprintf("%s %q: %v", c.Kind, c.Name, err)})
			continue
		}
		if lenient {
			v.add(SeverityWarning, abs, "", "%s %q: front matter is not valid YAML; read leniently as one key: value per line (quote values that contain \": \")", c.Kind, c.Name)
		}
		if c.Kind == KindSkill {
			if d, _ := meta["description"].(string); d == "" {
				v.add(SeverityWarning, abs, "description", "skill %q has no description in its front matter; agents pick skills by it", c.Name)
			}
		}
	}
}

func (v *validator) metadata(m *Manifest, file, field string) {
	if m.Description == "" {
		v.add(SeverityWarning, file, key(field, "description"), "plugin %q has no description", m.Name)
	}
	if m.Version == "" {
		v.add(SeverityWarning, file, key(field, "version"), "plugin %q has no version; it will be versioned by its git commit, or \"unknown\"", m.Name)
	}
	if m.Author == nil {
		v.add(SeverityWarning, file, key(field, "author"), "plugin %q has no author", m.Name)
	}
}
