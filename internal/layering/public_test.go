package layering

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// public are the only packages a program outside wharf may import: the
// runtime an agent embeds and the plugin formats. The module's root package
// carries the embedded demo marketplace (go:embed cannot reach a parent
// directory); cmd/ and bench/ are programs.
var public = []string{
	module,
	module + "/agent",
	module + "/agent/hooks",
	module + "/agent/mcp",
	module + "/agent/protocol",
	module + "/plugin",
}

// TestOnlyTheRuntimeAndFormatsArePublic lists the module's importable
// packages (go list, minus internal/, cmd/ and bench/) and fails on any
// other than public: a new package goes under internal/ unless an outside
// program has a reason to import it.
func TestOnlyTheRuntimeAndFormatsArePublic(t *testing.T) {
	out, err := exec.Command("go", "list", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var got []string
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(p, module+"/")
		if strings.Contains("/"+rel+"/", "/internal/") || strings.HasPrefix(rel, "cmd/") || strings.HasPrefix(rel, "bench/") {
			continue
		}
		got = append(got, p)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(public))
	if !slices.Equal(got, want) {
		t.Errorf("public packages:\n got %v\nwant %v\nmove a new package under internal/ (core, client, server, cli or testutil)", got, want)
	}
}
