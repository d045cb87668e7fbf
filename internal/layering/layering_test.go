package layering

import (
	"encoding/json"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/wharfhq/wharf/"

// allowed lists, for each package, the wharf packages it may import. A package
// missing from the map may import nothing of wharf's. Sub-packages inherit the
// rule of their top-level package and may import their parent, unless a
// rule is keyed by the sub-package's own path (the longest key wins). An
// allowed entry names a top-level package or one sub-package
// ("internal/testworld").
var allowed = map[string][]string{
	"cmd":         {"*"},
	"bench":       {"*"},
	"api":         {"install", "policy", "trust", "marketplace", "store", "web", "resolver", "cache", "plugin", "settings", "source", "atomicfile", "wire"},
	"web":         {},
	"agent":       {"install", "policy", "trust", "cache", "plugin", "settings", "resolver", "store", "marketplace", "source", "atomicfile", "wire", "layout"},
	"install":     {"resolver", "marketplace", "cache", "trust", "policy", "plugin", "store", "settings", "source", "atomicfile", "wire"},
	"resolver":    {"plugin", "atomicfile"},
	"marketplace": {"plugin", "store", "atomicfile", "netidle"},
	"cache":       {"plugin", "trust", "store", "atomicfile", "wire", "layout"},
	"source":      {"plugin", "atomicfile", "netidle"},
	"trust":       {"plugin", "atomicfile"},
	"policy":      {"plugin", "settings", "atomicfile", "layout"},
	"settings":    {"plugin", "atomicfile", "layout"},
	"store":       {"atomicfile"},
	"plugin":      {"atomicfile", "layout"},
	"internal":    {"*"},
	// The shared test fixtures: a home and directory marketplaces; never
	// agent, install or cmd, whose tests use them.
	"internal/testworld": {"cache", "layout", "plugin", "policy", "settings", "store"},
	// A real API server for the tests of its clients.
	"internal/testapi": {"api", "layout", "store"},
	// The agent sub-packages' world is testworld's plus a Runtime.
	"agent/internal/worldtest": {"internal/testworld"},
	"(root)":                   {}, // embedded assets (the demo marketplace)
	"atomicfile":               {},
	"wire":                     {},
	"netidle":                  {},
	"inventory":                {},
	"layout":                   {},
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func top(p string) string {
	if p+"/" == module {
		return "(root)"
	}
	rel := strings.TrimPrefix(p, module)
	first, _, _ := strings.Cut(rel, "/")
	return first
}

// ruleFor returns the rule of package p: the rule keyed by the longest
// leading part of its path, at least its top-level package.
func ruleFor(p string) ([]string, bool) {
	parts := strings.Split(strings.TrimPrefix(p, module), "/")
	for n := len(parts); n > 1; n-- {
		if r, ok := allowed[strings.Join(parts[:n], "/")]; ok {
			return r, true
		}
	}
	r, ok := allowed[top(p)]
	return r, ok
}

// allows reports whether the rule entry a allows importing imp.
func allows(a, imp string) bool {
	rel := strings.TrimPrefix(imp, module)
	return a == top(imp) || rel == a || strings.HasPrefix(rel, a+"/")
}

func TestImportsPointDownward(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", "-json=ImportPath,Imports", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var bad []string
	seen := 0
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		seen++
		from := top(p.ImportPath)
		rule, ok := ruleFor(p.ImportPath)
		if !ok {
			bad = append(bad, p.ImportPath+": package not in the layering table; add it to ARCHITECTURE.md and to this test")
			continue
		}
		if len(rule) == 1 && rule[0] == "*" {
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to := top(imp)
			if to == from {
				continue
			}
			okImp := false
			for _, a := range rule {
				if allows(a, imp) {
					okImp = true
				}
			}
			if !okImp {
				bad = append(bad, p.ImportPath+" imports "+imp)
			}
		}
	}
	if seen < 2 {
		t.Fatalf("go list found %d packages; the test is not looking at the module", seen)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}
