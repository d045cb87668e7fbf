package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// thirdParty lists the packages outside the standard library and outside
// wharf that pkg links.
func thirdParty(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	var deps []string
	for _, p := range strings.Fields(string(out)) {
		if !strings.HasPrefix(p, "github.com/wharfhq/wharf") {
			deps = append(deps, p)
		}
	}
	slices.Sort(deps)
	return deps
}

// The floor program must link exactly the third-party packages the wharf
// client links: with fewer, bench/startfloor.sh and bench/install.sh would
// report a floor below the real one; with more, above it.
func TestFloorLinksWhatWharfLinks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	wharf := thirdParty(t, "github.com/wharfhq/wharf/cmd/wharf")
	floor := thirdParty(t, "github.com/wharfhq/wharf/bench/startfloor")
	for _, p := range wharf {
		if _, found := slices.BinarySearch(floor, p); !found {
			t.Errorf("wharf links %s, bench/startfloor does not: import it (or what imports it) there", p)
		}
	}
	for _, p := range floor {
		if _, found := slices.BinarySearch(wharf, p); !found {
			t.Errorf("bench/startfloor links %s, wharf does not: drop it there", p)
		}
	}
}
