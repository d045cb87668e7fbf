package plugin

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// plugin is the leaf of wharf's import graph: it may not import any other
// wharf package, or every package could end up depending on every other.
func TestImportsNothingFromWharf(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/wharfhq/wharf") {
				t.Errorf("%s imports %s; package plugin must import nothing from wharf", f, path)
			}
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("only %d source files found", checked)
	}
}
