package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// A concept is one rule wharf keeps in one function. find reports the
// functions of a non-test file that carry a copy of the rule; the owner is
// the one function allowed to.
type concept struct {
	name  string
	owner string // "<package dir>.<func>"
	find  func(fn *ast.FuncDecl) bool
}

var concepts = []concept{
	{"revocation text", "internal/core/policy.RevokedReason", func(fn *ast.FuncDecl) bool {
		return hasLit(fn, func(s string) bool {
			return strings.Contains(s, "revoked by revocation") || strings.HasPrefix(s, "revoked: ") || strings.HasPrefix(s, "revoked (")
		})
	}},
	{"version of an unversioned plugin", "plugin.VersionOf", func(fn *ast.FuncDecl) bool {
		return fn.Name.Name != "ShortCommit" && calls(fn, "ShortCommit")
	}},
	{"namespaced component name", "plugin.ComponentName", func(fn *ast.FuncDecl) bool {
		if buildsServerName(fn) {
			return true
		}
		return namespacingName.MatchString(fn.Name.Name) && hasLit(fn, func(s string) bool { return s == ":" })
	}},
	{"cross-marketplace dependency rule", "internal/core/resolver.CrossAllowed", func(fn *ast.FuncDecl) bool {
		return fn.Name.Name == "CrossAllowed" || rangesOver(fn, "AllowCrossMarketplaceDependenciesOn")
	}},
	{"enabled but not installed", "internal/client/load.NotInstalledError", func(fn *ast.FuncDecl) bool {
		return hasLit(fn, func(s string) bool { return strings.Contains(s, "enabled but not installed") })
	}},
	{"durable tree (fsync of every file and directory)", "internal/core/atomicfile.syncTree", func(fn *ast.FuncDecl) bool {
		return (calls(fn, "WalkDir") || calls(fn, "Walk")) && (calls(fn, "Sync") || calls(fn, "SyncDir") || calls(fn, "syncPath"))
	}},
	{"agent export format switch (which exporter, document and revocation handling per agent)", "internal/core/policy.ExportAgent", func(fn *ast.FuncDecl) bool {
		n := 0
		for _, x := range []string{"ExportCopilot", "ExportCodex", "ExportGemini", "ExportOpenCode"} {
			if calls(fn, x) {
				n++
			}
		}
		return n >= 2 || calls(fn, "ForceRevokedOff") && calls(fn, "ExportCopilot")
	}},
	{"staged directory renamed into place", "internal/core/atomicfile.RenameDir", func(fn *ast.FuncDecl) bool {
		return fn.Name.Name == "RenameDir" || calls(fn, "Rename") && (calls(fn, "MkdirTemp") || calls(fn, "mkdirTempIn"))
	}},
}

// pluginSourceTypes say where a plugin's files come from, not a
// marketplace: another concept (see isMarketplaceSource).
var pluginSourceTypes = map[string]bool{"plugin.Source": true, "internal/core/marketplace.ResolvedSource": true}

// derivedSourceTypes are computed from the one type and never parsed: the
// canonical key, and marketplace sources in another agent's format, which
// wharf writes and never reads (their kinds are that agent's, not Claude
// Code's).
var derivedSourceTypes = map[string]bool{
	// What allow and block decisions compare; only
	// plugin.MarketplaceSource.Canonical makes one.
	"plugin.CanonicalSource": true,
	// Codex's requirements.toml allowed_sources entry (git, local,
	// host_pattern), mapped from a settings.PolicySource by codexSource.
	"internal/core/policy.CodexSource": true,
}

// marketplaceSourceOwner is the one type that describes a marketplace
// source as Claude Code writes it.
const marketplaceSourceOwner = "plugin.MarketplaceSource"

var namespacingName = regexp.MustCompile(`(?i)namespaced|commandname|servername|componentname`)

// exempt are the functions that touch a concept's words without deciding
// it: the marketplace format parses and validates the field.
var exempt = map[string]bool{
	"plugin.marketplace":  true, // decodes the field
	"plugin.dependencies": true, // validates a marketplace's dependencies against it
}

// TestConceptOwners fails when a second function carries one of the rules
// above: the failure names the owner to call instead.
func TestConceptOwners(t *testing.T) {
	found := conceptHolders(t)
	for _, c := range concepts {
		got := found[c.name]
		t.Logf("owners of %s: %d %v", c.name, len(got), got)
		if len(got) != 1 || got[0] != c.owner {
			t.Errorf("%s has %d owners %v; %s is its one owner: call it instead of repeating the rule", c.name, len(got), got, c.owner)
		}
	}
	got := found[marketplaceSourceConcept]
	t.Logf("owners of %s: %d %v", marketplaceSourceConcept, len(got), got)
	if len(got) != 1 || got[0] != marketplaceSourceOwner {
		t.Errorf("%s has %d owners %v; %s is its one owner: use it (a policy-only pattern refers to it, as settings.PolicySource does) instead of declaring another", marketplaceSourceConcept, len(got), got, marketplaceSourceOwner)
	}
}

const marketplaceSourceConcept = "marketplace source type"

func conceptHolders(t *testing.T) map[string][]string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string][]string{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "testdata" || strings.HasPrefix(n, ".") || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, 0)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(p))
		dir = filepath.ToSlash(dir)
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Body == nil {
					continue
				}
				name := dir + "." + d.Name.Name
				if exempt[name] {
					continue
				}
				for _, c := range concepts {
					if c.find(d) {
						found[c.name] = append(found[c.name], name)
					}
				}
				// A struct declared inside a function counts too.
				if sourceStructIn(d.Body, "") {
					found[marketplaceSourceConcept] = append(found[marketplaceSourceConcept], name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						name := dir + "." + s.Name.Name
						if !pluginSourceTypes[name] && !derivedSourceTypes[name] && sourceStructIn(s.Type, s.Name.Name) {
							found[marketplaceSourceConcept] = append(found[marketplaceSourceConcept], name)
						}
					case *ast.ValueSpec:
						if s.Type != nil && sourceStructIn(s.Type, "") && len(s.Names) > 0 {
							found[marketplaceSourceConcept] = append(found[marketplaceSourceConcept], dir+"."+s.Names[0].Name)
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range found {
		sort.Strings(v)
	}
	return found
}

// sourceStructIn reports whether n declares (at any depth: a field's type,
// a map's value, a variable inside a function) a struct that describes a
// marketplace source; typeName is the name n is declared under, "" for
// none.
func sourceStructIn(n ast.Node, typeName string) bool {
	hit := false
	ast.Inspect(n, func(n ast.Node) bool {
		if st, ok := n.(*ast.StructType); ok && isMarketplaceSource(st, typeName) {
			hit = true
		}
		return !hit
	})
	return hit
}

// sourceKeys are the JSON and TOML keys of a marketplace source object:
// Claude Code's, its policy patterns', and Codex's spelling.
var sourceKeys = map[string]bool{
	"source": true, "repo": true, "url": true, "ref": true, "path": true, "headers": true,
	"hostPattern": true, "pathPattern": true, "host_pattern": true,
}

// isMarketplaceSource reports a struct describing a marketplace source,
// by either of two signs:
//
//   - its JSON or TOML keys are "source" with one or more of "repo", "url"
//     and "path", and nothing but keys of a source object (sourceKeys): a
//     plugin's source (which has "sha", "package", ...) or a hook's row
//     (which has a "source" and a "url" among many) is not one;
//   - its name ends in "Source" and it has a kind (a field Kind or Source)
//     beside a Repo, URL, Host or Path field.
func isMarketplaceSource(st *ast.StructType, typeName string) bool {
	names, keys := map[string]bool{}, map[string]bool{}
	onlySourceKeys := true
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			names[n.Name] = true
		}
		tag := ""
		if f.Tag != nil {
			tag, _ = strconv.Unquote(f.Tag.Value)
		}
		tagged := false
		for _, k := range []string{"json", "toml"} {
			if v, ok := reflect.StructTag(tag).Lookup(k); ok {
				key, _, _ := strings.Cut(v, ",")
				if key == "-" {
					continue
				}
				tagged = true
				keys[key] = true
				onlySourceKeys = onlySourceKeys && sourceKeys[key]
			}
		}
		if !tagged {
			onlySourceKeys = false
		}
	}
	if onlySourceKeys && keys["source"] && (keys["repo"] || keys["url"] || keys["path"]) {
		return true
	}
	return strings.HasSuffix(typeName, "Source") && (names["Kind"] || names["Source"]) &&
		(names["Repo"] || names["URL"] || names["Host"] || names["Path"])
}

// buildsServerName reports "plugin:" + ... + ":" + ...: a server's
// namespaced name built by hand.
func buildsServerName(fn *ast.FuncDecl) bool {
	hit := false
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		b, ok := n.(*ast.BinaryExpr)
		if !ok || b.Op != token.ADD {
			return !hit
		}
		var lits []string
		var walk func(e ast.Expr)
		walk = func(e ast.Expr) {
			switch x := e.(type) {
			case *ast.BinaryExpr:
				if x.Op == token.ADD {
					walk(x.X)
					walk(x.Y)
				}
			case *ast.BasicLit:
				if s, err := strconv.Unquote(x.Value); err == nil {
					lits = append(lits, s)
				}
			}
		}
		walk(b)
		for i, s := range lits {
			if strings.HasPrefix(s, "plugin:") && (s != "plugin:" || i+1 < len(lits) && strings.HasPrefix(lits[i+1], ":")) {
				hit = true
			}
		}
		return false
	})
	return hit
}

func hasLit(fn *ast.FuncDecl, match func(string) bool) bool {
	hit := false
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING {
			if s, err := strconv.Unquote(l.Value); err == nil && match(s) {
				hit = true
			}
		}
		return !hit
	})
	return hit
}

func calls(fn *ast.FuncDecl, name string) bool {
	hit := false
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			switch f := c.Fun.(type) {
			case *ast.Ident:
				hit = hit || f.Name == name
			case *ast.SelectorExpr:
				hit = hit || f.Sel.Name == name
			}
		}
		return !hit
	})
	return hit
}

func rangesOver(fn *ast.FuncDecl, field string) bool {
	hit := false
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if r, ok := n.(*ast.RangeStmt); ok {
			if s, ok := r.X.(*ast.SelectorExpr); ok && s.Sel.Name == field {
				hit = true
			}
		}
		return !hit
	})
	return hit
}
