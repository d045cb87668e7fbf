package plugin

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// Marketplace is a marketplace's .claude-plugin/marketplace.json.
type Marketplace struct {
	Schema                              string              `json:"$schema,omitempty"`
	Name                                string              `json:"name"`
	Owner                               Author              `json:"owner"`
	Description                         string              `json:"description,omitempty"`
	Version                             string              `json:"version,omitempty"`
	Metadata                            MarketplaceMetadata `json:"metadata,omitzero"`
	Plugins                             []Entry             `json:"plugins"`
	AllowCrossMarketplaceDependenciesOn []string            `json:"allowCrossMarketplaceDependenciesOn,omitempty"`
	Renames                             map[string]*string  `json:"renames,omitempty"` // old name → new name, or nil: removed

	// Extra holds top-level keys wharf does not know, as written.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarketplaceMetadata is the "metadata" object.
type MarketplaceMetadata struct {
	Description string `json:"description,omitempty"`
	Version     string `json:"version,omitempty"`
	PluginRoot  string `json:"pluginRoot,omitempty"`
}

// EffectiveVersion is the top-level version, else metadata.version.
func (m *Marketplace) EffectiveVersion() string {
	if m.Version != "" {
		return m.Version
	}
	return m.Metadata.Version
}

// EffectiveDescription is the top-level description, else metadata.description.
func (m *Marketplace) EffectiveDescription() string {
	if m.Description != "" {
		return m.Description
	}
	return m.Metadata.Description
}

// Entry lookup by name; nil when absent.
func (m *Marketplace) Entry(name string) *Entry {
	for i := range m.Plugins {
		if m.Plugins[i].Name == name {
			return &m.Plugins[i]
		}
	}
	return nil
}

// Entry is one plugin of a marketplace: any plugin.json field plus where the
// plugin comes from and how the marketplace presents it. Unknown keys land
// in the embedded Manifest's Extra.
type Entry struct {
	Manifest
	Source     Source      `json:"source"`
	Category   string      `json:"category,omitempty"`
	Tags       []string    `json:"tags,omitempty"`
	Strict     *bool       `json:"strict,omitempty"`
	Integrity  string      `json:"integrity,omitempty"`  // wharf: "w1:" content digest
	Signatures []Signature `json:"signatures,omitempty"` // wharf: signatures over Integrity
}

// IsStrict reports the entry's strict flag; absent means true.
func (e Entry) IsStrict() bool { return e.Strict == nil || *e.Strict }

// Signature is a wharf signature over a plugin's content digest.
type Signature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"` // standard base64
}

// ParseMarketplace parses a marketplace.json. Errors are *Error{Layer:
// LayerMaterialization, Type: TypeManifestParse} wrapping a *SyntaxError,
// *FieldError or *SizeError; on error the Marketplace is nil and the
// diagnostics list every problem found. Warnings are returned either way.
func ParseMarketplace(data []byte, file string) (*Marketplace, []Diagnostic, error) {
	return parseDocument(data, file, (*decoder).marketplace)
}

// MarketplaceFile is the path of a marketplace's manifest under its root.
func MarketplaceFile(root string) string {
	return filepath.Join(root, ".claude-plugin", "marketplace.json")
}

// ManifestFile is the path of a plugin's optional plugin.json under its root.
func ManifestFile(root string) string {
	return filepath.Join(root, ".claude-plugin", "plugin.json")
}

// ReadMarketplace reads <root>/.claude-plugin/marketplace.json.
func ReadMarketplace(root string) (*Marketplace, []Diagnostic, error) {
	return ReadMarketplaceFile(MarketplaceFile(root))
}

// ReadMarketplaceFile reads and parses a marketplace.json file, and the
// pins file a wharf channel publishes beside it (PinsFileName), whose
// pins become the entries' integrity.
func ReadMarketplaceFile(path string) (*Marketplace, []Diagnostic, error) {
	m, diags, err := readDocument(path, ParseMarketplace)
	if err != nil {
		return m, diags, err
	}
	pd, err := applyPins(m, path)
	return m, append(diags, pd...), err
}

func (d *decoder) marketplace(n *node) *Marketplace {
	m := &Marketplace{}
	if !d.object(n, "") {
		return m
	}
	// pluginRoot is needed before the entries are decoded.
	if md := n.get("metadata"); md != nil && md.kind == kindObject {
		if pr := md.get("pluginRoot"); pr != nil && pr.kind == kindString {
			if err := checkRelPath(pr.str, false); err != nil {
				d.errorf(pr, "metadata.pluginRoot", "%v", err)
			} else {
				m.Metadata.PluginRoot = pr.str
			}
		}
	}
	for _, mem := range n.members {
		v := mem.val
		switch mem.key {
		case "$schema":
			m.Schema = d.str(v, "$schema")
		case "name":
			m.Name = d.str(v, "name")
			if v.kind == kindString {
				if err := ValidateName(m.Name); err != nil {
					d.errorf(v, "name", "%v", err)
				} else if !isKebab(m.Name) {
					d.warnf(v, "name", "marketplace name %q is not kebab-case", m.Name)
				}
			}
		case "owner":
			if a := d.author(v, "owner"); a != nil {
				m.Owner = *a
			}
		case "description":
			m.Description = d.str(v, "description")
		case "version":
			m.Version = d.str(v, "version")
		case "metadata":
			if !d.object(v, "metadata") {
				continue
			}
			for _, mm := range v.members {
				f := key("metadata", mm.key)
				switch mm.key {
				case "description":
					m.Metadata.Description = d.str(mm.val, f)
				case "version":
					m.Metadata.Version = d.str(mm.val, f)
				case "pluginRoot":
					d.str(mm.val, f) // decoded above
				default:
					d.unknown(mm, "metadata")
				}
			}
		case "plugins":
			if v.kind != kindArray {
				d.typeError(v, "plugins", "array")
				continue
			}
			m.Plugins = make([]Entry, 0, len(v.elems))
			seen := map[string]int{}
			for i, e := range v.elems {
				f := index("plugins", i)
				entry := d.entry(e, f, m.Metadata.PluginRoot)
				if entry.Name != "" {
					if j, dup := seen[entry.Name]; dup {
						d.errorf(e, key(f, "name"), "plugin %q is listed twice (also plugins[%d])", entry.Name, j)
					}
					seen[entry.Name] = i
				}
				m.Plugins = append(m.Plugins, entry)
			}
		case "allowCrossMarketplaceDependenciesOn":
			m.AllowCrossMarketplaceDependenciesOn = d.strList(v, mem.key, false)
			for i, s := range m.AllowCrossMarketplaceDependenciesOn {
				if err := ValidateName(s); err != nil {
					d.errorf(v, index(mem.key, i), "%v", err)
				}
			}
		case "renames":
			if !d.object(v, "renames") {
				continue
			}
			m.Renames = make(map[string]*string, len(v.members))
			for _, r := range v.members {
				f := key("renames", r.key)
				if err := ValidateName(r.key); err != nil {
					d.errorf(&node{off: r.keyOff}, f, "%v", err)
				}
				switch r.val.kind {
				case kindNull:
					m.Renames[r.key] = nil
				case kindString:
					to := r.val.str
					if err := ValidateName(to); err != nil {
						d.errorf(r.val, f, "%v", err)
					}
					m.Renames[r.key] = &to
				default:
					d.typeError(r.val, f, "new name string or null")
				}
			}
		default:
			d.unknown(mem, "")
			m.Extra = d.keep(m.Extra, mem)
		}
	}
	for _, req := range []string{"name", "owner", "plugins"} {
		if n.get(req) == nil {
			d.errorf(n, req, "required field is missing")
		}
	}
	return m
}

func (d *decoder) entry(n *node, f, pluginRoot string) Entry {
	var e Entry
	if !d.object(n, f) {
		return e
	}
	for _, mem := range n.members {
		if d.manifestField(&e.Manifest, mem, f) {
			continue
		}
		v := mem.val
		mf := key(f, mem.key)
		switch mem.key {
		case "source":
			e.Source = d.source(v, mf, pluginRoot)
		case "category":
			e.Category = d.str(v, mf)
		case "tags":
			e.Tags = d.strList(v, mf, true)
		case "strict":
			e.Strict = d.boolPtr(v, mf)
		case "integrity":
			e.Integrity = d.str(v, mf)
			if v.kind == kindString {
				if msg := checkIntegrity(e.Integrity); msg != "" {
					d.errorf(v, mf, "%s", msg)
				}
			}
		case "signatures":
			e.Signatures = d.signatures(v, mf)
		default:
			d.unknown(mem, f)
			e.Extra = d.keep(e.Extra, mem)
		}
	}
	for _, req := range []string{"name", "source"} {
		if n.get(req) == nil {
			d.errorf(n, key(f, req), "required field is missing")
		}
	}
	return e
}

func (d *decoder) signatures(n *node, f string) []Signature {
	if n.kind != kindArray {
		d.typeError(n, f, "array of {keyid, sig}")
		return nil
	}
	out := make([]Signature, 0, len(n.elems))
	for i, e := range n.elems {
		ef := index(f, i)
		if !d.object(e, ef) {
			continue
		}
		var s Signature
		for _, m := range e.members {
			switch m.key {
			case "keyid":
				s.KeyID = d.str(m.val, key(ef, "keyid"))
			case "sig":
				s.Sig = d.str(m.val, key(ef, "sig"))
				if m.val.kind == kindString {
					if _, err := base64.StdEncoding.DecodeString(s.Sig); err != nil || s.Sig == "" {
						d.errorf(m.val, key(ef, "sig"), "not standard base64")
					}
				}
			default:
				d.unknown(m, ef)
			}
		}
		for _, req := range []string{"keyid", "sig"} {
			if e.get(req) == nil {
				d.errorf(e, key(ef, req), "required field is missing")
			}
		}
		out = append(out, s)
	}
	return out
}

// checkIntegrity checks the shape of a "w1:" digest: standard base64 of 32
// bytes.
func checkIntegrity(s string) string {
	b64, ok := strings.CutPrefix(s, "w1:")
	if !ok {
		return fmt.Sprintf("%q is not a w1: digest", s)
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != 32 {
		return fmt.Sprintf("%q is not w1: followed by the base64 of a sha256", s)
	}
	return ""
}

// LocalDir returns the directory of a relative entry under the marketplace
// root, after checking that it stays inside the root through symlinks. It is
// an error for any other source kind.
func (e *Entry) LocalDir(root string) (string, error) {
	if err := e.checkLocal(); err != nil {
		return "", err
	}
	realRoot, err := RealRoot(root)
	if err != nil {
		return "", err
	}
	return e.LocalDirIn(root, realRoot)
}

// RealRoot resolves a marketplace root through its symlinks
// (filepath.EvalSymlinks), with the error LocalDir gives when it cannot.
func RealRoot(root string) (string, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", &Error{Layer: LayerMaterialization, Type: TypeNotFound, Object: root, Err: err}
	}
	return realRoot, nil
}

// LocalDirIn is LocalDir for a root already resolved by RealRoot, so that a
// pass over every entry of a marketplace resolves the root once: it gives
// what LocalDir(root) gives whenever realRoot is RealRoot(root).
func (e *Entry) LocalDirIn(root, realRoot string) (string, error) {
	if err := e.checkLocal(); err != nil {
		return "", err
	}
	rel := cleanRel(e.Source.Path)
	dir := filepath.Join(root, filepath.FromSlash(rel))
	realDir, err := evalUnder(realRoot, rel, dir)
	if err != nil {
		return "", &Error{Layer: LayerMaterialization, Type: TypeNotFound, Object: e.Name,
			Err:  fmt.Errorf("plugin %q: source %s is not in the marketplace: %w", e.Name, e.Source.Path, err),
			Hint: "the marketplace lists " + e.Source.Path + " but it is not there; update the marketplace or fix its source"}
	}
	r, err := filepath.Rel(realRoot, realDir)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", Errorf(LayerMaterialization, TypeManifestInvalid, e.Name, "", "plugin %q source %s resolves to %s, outside the marketplace", e.Name, e.Source.Path, realDir)
	}
	return dir, nil
}

func (e *Entry) checkLocal() error {
	if e.Source.Kind != SourceRelative {
		return Errorf(LayerMaterialization, TypeSource, e.Name, "", "plugin %q has a %s source, not a path in the marketplace", e.Name, e.Source.Kind)
	}
	if err := checkRelPath(e.Source.Path, true); err != nil {
		return &Error{Layer: LayerMaterialization, Type: TypeManifestInvalid, Object: e.Name, Err: err}
	}
	return nil
}

// evalUnder is filepath.EvalSymlinks(dir) for dir = root/rel when realRoot
// is EvalSymlinks(root): EvalSymlinks reaches realRoot after root's own
// components, so only rel's components are looked at (one lstat each).
// At the first symlink among them, or for a root that is not absolute and
// clean, it is EvalSymlinks(dir) itself.
func evalUnder(realRoot, rel, dir string) (string, error) {
	if runtime.GOOS == "windows" || !filepath.IsAbs(realRoot) || filepath.Clean(realRoot) != realRoot {
		return filepath.EvalSymlinks(dir)
	}
	dest := realRoot
	if rel == "." {
		return dest, nil
	}
	for rest := rel; rest != ""; {
		c, more, _ := strings.Cut(rest, "/")
		rest = more
		if !os.IsPathSeparator(dest[len(dest)-1]) {
			dest += string(filepath.Separator)
		}
		dest += c
		fi, err := os.Lstat(dest)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return filepath.EvalSymlinks(dir)
		}
		if !fi.IsDir() && rest != "" {
			return "", syscall.ENOTDIR
		}
	}
	return dest, nil
}
