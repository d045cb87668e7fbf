package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// homeNames are the names of the home's entries; first path elements
// (and the agent/ files) that no package but this one may join to a home.
var homeNames = map[string]bool{
	settingsFile: true, stateDBFile: true, lockFile: true, marketplacesDir: true,
	cacheDir: true, leasesDir: true, dataDir: true, pluginConfigDir: true,
	pluginSecretsDir: true, agentDir: true, policyMemoFile: true, policyDir: true,
	keysDir: true, trustedFoldersFile: true, stateDir: true, machineIDFile: true,
	trustedFoldersFile + lockFile: true,
	"config.json":                 true, "config.yaml": true, "config.yml": true,
}

// distinctNames cannot mean anything but an entry of the home: no package
// but this one spells them in code at all (messages and flag help aside,
// which are not path expressions).
var distinctNames = []string{stateDBFile, trustedFoldersFile, policyMemoFile,
	agentIndexFile, agentLegacyIndex, hooksOnceDir,
	machineIDFile, inventoryState, inventoryLock, leasesDir, pluginConfigDir, pluginSecretsDir}

// TestOnlyLayoutKnowsTheHome fails when a package other than layout builds
// a path under the home by hand: a Join whose first argument names a home
// and whose next argument is a literal naming one of the home's entries, or
// any path expression spelling one of the names only the home has. Tests
// are left out: they name files on disk on purpose, to check that the
// names stay what existing homes hold.
func TestOnlyLayoutKnowsTheHome(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found above the layout package: %v", err)
	}
	var bad []string
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules" || path == filepath.Join(root, "internal", "core", "layout")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, pos := range homePaths(f) {
			p := fset.Position(pos)
			rel, _ := filepath.Rel(root, p.Filename)
			bad = append(bad, rel+":"+strconv.Itoa(p.Line))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("scanned %d files under %s; the test is not looking at the module", files, root)
	}
	for _, b := range bad {
		t.Errorf("%s: builds a path under the home by hand; use a layout.Paths method", b)
	}
}

// homePaths returns where f joins a home entry's name to a home, or spells
// a name only the home has as a path (a literal without spaces, one of
// whose elements is that name).
func homePaths(f *ast.File) []token.Pos {
	var out []token.Pos
	joined := map[token.Pos]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			if isJoin(x.Fun) && len(x.Args) > 1 && namesHome(x.Args[0]) {
				if s, ok := stringLit(x.Args[1]); ok {
					first, _, _ := strings.Cut(filepath.ToSlash(s), "/")
					if homeNames[first] {
						out = append(out, x.Args[1].Pos())
						joined[x.Args[1].Pos()] = true
					}
				}
			}
		case *ast.BasicLit:
			if s, ok := stringLit(x); ok && !joined[x.Pos()] && spellsHomeEntry(s) {
				out = append(out, x.Pos())
			}
		}
		return true
	})
	return out
}

func spellsHomeEntry(s string) bool {
	if strings.ContainsAny(s, " \t\n") {
		return false
	}
	for _, el := range strings.Split(filepath.ToSlash(s), "/") {
		for _, d := range distinctNames {
			if el == d {
				return true
			}
		}
	}
	return false
}

// isJoin reports whether fun is filepath.Join or path.Join.
func isJoin(fun ast.Expr) bool {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Join" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && (id.Name == "filepath" || id.Name == "path")
}

func stringLit(e ast.Expr) (string, bool) {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(bl.Value)
	return s, err == nil
}

// namesHome reports whether e is an expression naming wharf's home: an
// identifier, field or call whose name says home (home, c.home, o.Home,
// a.env.Home(), w.Home) — but not the user's home directory.
func namesHome(e ast.Expr) bool {
	var name string
	switch x := e.(type) {
	case *ast.Ident:
		name = x.Name
	case *ast.SelectorExpr:
		name = x.Sel.Name
	case *ast.CallExpr:
		return namesHome(x.Fun)
	default:
		return false
	}
	l := strings.ToLower(name)
	return strings.Contains(l, "home") && !strings.Contains(l, "user")
}
