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
// rule of their top-level package and may import their parent.
var allowed = map[string][]string{
	"cmd":         {"*"},
	"bench":       {"*"},
	"api":         {"inventory", "install", "policy", "trust", "marketplace", "store", "web", "resolver", "cache", "plugin", "settings", "source", "atomicfile", "wire"},
	"web":         {},
	"agent":       {"load", "policy", "cache", "plugin", "settings", "store", "atomicfile", "wire"},
	"install":     {"load", "resolver", "marketplace", "cache", "trust", "policy", "plugin", "store", "settings", "source", "atomicfile", "wire"},
	"load":        {"cache", "plugin", "policy", "resolver", "settings"},
	"resolver":    {"plugin", "atomicfile"},
	"marketplace": {"plugin", "store", "atomicfile", "netidle"},
	"cache":       {"plugin", "trust", "store", "atomicfile", "wire"},
	"source":      {"plugin", "atomicfile", "netidle"},
	"trust":       {"plugin", "atomicfile"},
	"policy":      {"plugin", "settings", "atomicfile"},
	"settings":    {"plugin", "atomicfile"},
	"store":       {"atomicfile"},
	"plugin":      {"atomicfile"},
	"internal":    {"*"},
	"(root)":      {}, // embedded assets (the demo marketplace)
	"atomicfile":  {},
	"wire":        {},
	"netidle":     {},
	"inventory":   {"plugin", "store"}, // the server's store
	// A sub-package with its own row follows it, not its parent's: its
	// imports, its parent included, are listed.
	"inventory/collect": {"inventory", "load", "policy", "trust", "plugin", "atomicfile"},
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
		rule, ok := allowed[from]
		own, hasOwn := allowed[strings.TrimPrefix(p.ImportPath, module)]
		if hasOwn {
			rule, ok = own, true
		}
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
			if to == from && !hasOwn {
				continue
			}
			okImp := false
			for _, a := range rule {
				if a == to && (!hasOwn || imp == module+a || to != from) {
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
