package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// allowedFuncVars are the package-level variables of function type that
// wharf's non-test code may declare ("<package dir>.<name>"), each with why
// it is not a hook: a variable a test reassigns changes the behaviour of
// every caller in the process, so a test of one thing quietly changes
// another, and nothing stops a release from shipping with it set. Inject
// instead: an option of the call, a field of the options or of the app.
var allowedFuncVars = map[string]string{
	// Both are set once, by package agent's initialization
	// (agentlink.Register), and never by a test: they let wharf's commands
	// hand agent.Open values of internal types without agent exporting them.
	"internal/client/agentlink.policyOf": "set by package agent's init only",
	"internal/client/agentlink.wire":     "set by package agent's init only",
}

// TestNoPackageFuncVarHooks fails when a non-test file declares a
// package-level variable holding a function (var x = func..., var x
// func(...)) that allowedFuncVars does not list.
func TestNoPackageFuncVarHooks(t *testing.T) {
	got := packageFuncVars(t)
	var unexpected []string
	for _, v := range got {
		if _, ok := allowedFuncVars[v]; !ok {
			unexpected = append(unexpected, v)
		}
	}
	if len(unexpected) > 0 {
		t.Errorf("package-level function variables %v: a test hook of this kind changes every caller in the process; inject the function instead (an option of the call, a field of the options), or list it in allowedFuncVars with why it is not a hook", unexpected)
	}
	for name := range allowedFuncVars {
		if !contains(got, name) {
			t.Errorf("allowedFuncVars lists %s, which no longer exists: remove it", name)
		}
	}
}

// The scan sees both forms of a hook, and not a function-typed field, a
// local variable or a variable holding a non-function value.
func TestFuncVarScanFindsHooks(t *testing.T) {
	src := `package p
var a = func() int { return 1 }
var b func(string) error
var (
	c, d = 1, func() {}
	e    = 2
)
type T struct{ f func() }
func g() { var h = func() {}; _ = h }
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := funcVarsOf(f, "p")
	if want := []string{"p.a", "p.b", "p.d"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("found %v, want %v", got, want)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// packageFuncVars lists the package-level function variables of every
// non-test Go file of the module (build tags included: a hook file built
// only for tests counts).
func packageFuncVars(t *testing.T) []string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
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
		found = append(found, funcVarsOf(f, filepath.ToSlash(dir))...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(found)
	return found
}

// funcVarsOf lists f's package-level variables declared with a function
// type or given a function literal, as "<dir>.<name>".
func funcVarsOf(f *ast.File, dir string) []string {
	var out []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			_, typed := vs.Type.(*ast.FuncType)
			for i, n := range vs.Names {
				lit := false
				if i < len(vs.Values) {
					_, lit = vs.Values[i].(*ast.FuncLit)
				}
				if (typed || lit) && n.Name != "_" {
					out = append(out, dir+"."+n.Name)
				}
			}
		}
	}
	return out
}
