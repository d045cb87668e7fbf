package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/wharfhq/wharf/internal/core/lazyre"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// Layer is one policy layer: a managed settings document (plus, for a managed
// directory, its managed-settings.d fragments in name order) and admin Rego
// modules. Layers are given in order, highest (org) first.
type Layer struct {
	Name      string              // [a-z][a-z0-9_]*; admin modules use package wharf.admin.<Name>
	Settings  []byte              // JSON; nil for none
	Fragments []settings.Document // further documents of the same layer, merged after Settings
	Modules   map[string]string   // admin Rego modules by file name
	Origin    string              // where the layer came from, for messages (a path, "server bundle")
	// Unreadable lists the managed files of the layer that exist but
	// cannot be read (settings.TypeManagedUnreadable): while there is one,
	// every decision denies, naming it.
	Unreadable []string
	// Managed: the layer is a managed directory (the system one or one
	// added after it), whose settings may name the policy server.
	Managed bool
	// Waivers are the approved requests of the server bundle the layer
	// came from (ReadBundle); see Waiver for what they lift.
	Waivers Waivers

	settingsName string // file name of Settings in messages, when it differs from Origin
}

// TypeLayerInvalid is the error type of a layer that cannot be compiled.
const TypeLayerInvalid = "policy-layer-invalid"

var layerNameRE = lazyre.New(`^[a-z][a-z0-9_]{0,62}$`)

// LayerName turns a file or directory name into a valid layer name:
// lower case, [a-z0-9_], starting with a letter.
func LayerName(s string) string {
	s = strings.TrimSuffix(filepath.Base(s), filepath.Ext(s))
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	n := b.String()
	if n == "" || n[0] < 'a' || n[0] > 'z' {
		n = "l_" + n
	}
	if len(n) > 63 {
		n = n[:63]
	}
	return n
}

// Sources says where layers come from: the managed directory (one layer named
// "managed"), the added managed directory (a layer named "managed_extra", or
// "managed" when the system directory has no policy),
// then each --policy path in order. A policy path is a JSON settings file,
// a .rego file (a layer with only admin rules) or a directory laid out like
// the managed directory.
type Sources struct {
	ManagedDir string
	// ExtraManagedDir (WHARF_MANAGED_DIR, --managed-dir) is read after
	// ManagedDir: like every lower layer it can only tighten.
	ExtraManagedDir string
	Paths           []string
}

// ExtraLayerName is the layer name of Sources.ExtraManagedDir when the
// system directory gives a layer too; without one it is "managed".
const ExtraLayerName = "managed_extra"

// Load reads every layer. A managed directory that does not exist gives no
// layer; a --policy path that does not exist is an error.
func (s Sources) Load() ([]Layer, error) {
	var layers []Layer
	for _, m := range []struct{ name, dir string }{{"managed", s.ManagedDir}, {ExtraLayerName, s.ExtraManagedDir}} {
		if m.dir == "" || m.name == ExtraLayerName && filepath.Clean(m.dir) == filepath.Clean(s.ManagedDir) {
			continue
		}
		if m.name == ExtraLayerName && len(layers) == 0 {
			// No system policy: the added directory is the managed
			// layer, and its modules use package wharf.admin.managed
			// as the system directory's would.
			m.name = "managed"
		}
		l, err := LoadDir(m.name, m.dir)
		if err != nil {
			return nil, err
		}
		l.Managed = true
		if l.Settings != nil || len(l.Fragments) > 0 || len(l.Modules) > 0 || len(l.Unreadable) > 0 {
			layers = append(layers, l)
		}
	}
	seen := map[string]bool{}
	for _, l := range layers {
		seen[l.Name] = true
	}
	for _, p := range s.Paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, plugin.Errorf(plugin.LayerPolicy, TypeLayerInvalid, p, "check the --policy path", "policy layer: %v", err)
		}
		name := LayerName(p)
		for i := 2; seen[name]; i++ {
			name = fmt.Sprintf("%s_%d", LayerName(p), i)
		}
		seen[name] = true
		var l Layer
		switch {
		case st.IsDir():
			l, err = LoadDir(name, p)
		case strings.HasSuffix(p, ".rego"):
			var b []byte
			b, err = os.ReadFile(p)
			l = Layer{Name: name, Origin: p, Modules: map[string]string{filepath.Base(p): string(b)}}
		default:
			var b []byte
			b, err = os.ReadFile(p)
			l = Layer{Name: name, Origin: p, Settings: b}
		}
		if err != nil {
			return nil, plugin.Errorf(plugin.LayerPolicy, TypeLayerInvalid, p, "check the --policy path", "policy layer: %v", err)
		}
		layers = append(layers, l)
	}
	return layers, nil
}

// LoadDir reads a managed directory: managed-settings.json,
// managed-settings.d/*.json (name order) and *.rego admin modules
// (*_test.rego files are tests, not policy, and are skipped). A file that
// exists but cannot be read as a regular file (a dangling link, a FIFO, a
// directory, a permission denied) does not fail the load: it is recorded
// in Layer.Unreadable, and every decision of an engine with that layer
// denies, naming it.
func LoadDir(name, dir string) (Layer, error) {
	l := Layer{Name: name, Origin: dir}
	unreadable := func(err error) bool {
		var pe *plugin.Error
		if errors.As(err, &pe) && pe.Type == settings.TypeManagedUnreadable {
			l.Unreadable = append(l.Unreadable, pe.Err.Error())
			return true
		}
		return false
	}
	docs, err := settings.ReadManagedDir(dir)
	if err != nil {
		if unreadable(err) {
			return l, nil
		}
		return Layer{}, err
	}
	for i, d := range docs {
		if d.Missing {
			continue
		}
		if i == 0 {
			l.Settings = d.Data
			l.settingsName = d.Name
			continue
		}
		l.Fragments = append(l.Fragments, settings.Document{Scope: settings.ScopeManaged, Name: d.Name, Data: d.Data})
	}
	names, err := settings.ManagedEntries(dir, ".rego")
	if err != nil {
		if unreadable(err) {
			return l, nil
		}
		return Layer{}, err
	}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.rego") {
			continue
		}
		m := filepath.Join(dir, n)
		b, missing, err := settings.ReadManagedFile(m)
		if err != nil {
			if unreadable(err) {
				continue
			}
			return Layer{}, err
		}
		if missing { // removed since the listing
			continue
		}
		if l.Modules == nil {
			l.Modules = map[string]string{}
		}
		l.Modules[n] = string(b)
	}
	return l, nil
}

// documents lists the layer's settings documents in merge order.
func (l Layer) documents() []settings.Document {
	var docs []settings.Document
	name := l.Origin
	if name == "" {
		name = l.Name
	}
	if l.settingsName != "" {
		name = l.settingsName
	}
	if l.Settings != nil {
		docs = append(docs, settings.Document{Scope: settings.ScopeManaged, Name: name, Data: l.Settings})
	}
	for _, f := range l.Fragments {
		f.Scope = settings.ScopeManaged
		docs = append(docs, f)
	}
	return docs
}

// checkModule parses an admin module and checks that it stays inside its
// layer's package and that its deny rules are partial set rules (a deny that
// is not a set would be read as no reasons: silently open).
func checkModule(layer, file, text string) (*ast.Module, error) {
	fail := func(format string, args ...any) (*ast.Module, error) {
		return nil, plugin.Errorf(plugin.LayerPolicy, TypeLayerInvalid, file,
			fmt.Sprintf("admin rules of layer %s go in package wharf.admin.%s as `deny contains msg if { ... }`", layer, layer), format, args...)
	}
	// Parsed under "<layer>/<file>", so that a location (of an evaluation
	// error too) tells which layer's module of that name it is in.
	m, err := ast.ParseModuleWithOpts(layer+"/"+file, text, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return fail("%v", err)
	}
	if err := aliasPluginContent(m); err != nil {
		return fail("%v", err)
	}
	want := ast.MustParseRef("data.wharf.admin." + layer)
	if !m.Package.Path.HasPrefix(want) {
		return fail("package %s is outside layer %s's package wharf.admin.%s", strings.TrimPrefix(m.Package.Path.String(), "data."), layer, layer)
	}
	if err := checkBuiltins(layer, file, m); err != nil {
		return nil, err
	}
	exact := m.Package.Path.Equal(want)
	for _, r := range m.Rules {
		if r.Head.Name.String() == "deny" || (len(r.Head.Reference) > 0 && r.Head.Reference[0].Value.Compare(ast.Var("deny")) == 0) {
			if r.Head.RuleKind() != ast.MultiValue {
				return fail("%s: deny must be a set rule (`deny contains msg if ...`)", r.Location)
			}
			if !exact {
				// Only data.wharf.admin.<layer>.deny is read: a deny
				// elsewhere would be silently ignored.
				return fail("%s: deny rules in package %s are not read; only wharf.admin.%s.deny is", r.Location, strings.TrimPrefix(m.Package.Path.String(), "data."), layer)
			}
		}
	}
	return m, nil
}
