package layering

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/wharfhq/wharf"

var update = flag.Bool("update", false, "rewrite the ranked table in docs/architecture.md from this test")

// unit is one row of the ranked table: a package with its sub-packages (a
// sub-package with a row of its own is apart from its parent), the rank it
// sits at, the units its code imports and the units only its tests import.
type unit struct {
	path    string
	rank    int
	imports []string
	tests   []string
}

// table is the ranked package table docs/architecture.md shows. Code
// imports point strictly down: a unit imports only units of a lower rank,
// and only those its row lists. Tests may also import the units of their
// row's last column (test helpers sit above what they test). Every edge a
// row lists is used, so the table cannot drift from the code either way.
var table = []unit{
	{"agent/internal/proctree", 0, nil, nil},
	{"agent/mcp/internal/testserver", 0, nil, nil},
	{"internal/cli/cliusage", 0, nil, nil},
	{"internal/client/diskrec", 0, nil, nil},
	{"internal/core/apiclient", 0, nil, nil},
	{"internal/core/atomicfile", 0, nil, nil},
	{"internal/core/layout", 0, nil, nil},
	{"internal/core/lazyre", 0, nil, nil},
	{"internal/core/netidle", 0, nil, []string{"internal/testutil/silentnet"}},
	{"internal/core/progress", 0, nil, []string{"internal/core/netidle"}},
	{"internal/layering", 0, nil, nil},
	{"internal/server/gitserver", 0, nil, nil},
	{"internal/server/web", 0, nil, nil},
	{"internal/testutil/claudecompat", 0, nil, []string{"internal/testutil/claudetest", "internal/testutil/sharedtest", "plugin"}},
	{"internal/testutil/etcdtest", 0, nil, nil},
	{"internal/testutil/gitserve", 0, nil, nil},
	{"internal/testutil/netnstest", 0, nil, nil},
	{"internal/testutil/oidctest", 0, nil, nil},
	{"internal/testutil/processtest", 0, nil, nil},
	{"internal/testutil/sharedtest", 0, nil, nil},
	{"internal/testutil/silentnet", 0, nil, nil},
	{"plugin", 0, nil, []string{"internal/testutil/claudetest", "internal/testutil/sharedtest"}},
	{"(root)", 1, []string{"internal/core/atomicfile"}, nil},
	{"internal/cli/cliconfig", 1, []string{"plugin"}, nil},
	{"internal/client/login", 1, []string{"internal/core/apiclient", "internal/core/atomicfile"}, nil},
	{"internal/client/userconfig", 1, []string{"internal/core/atomicfile", "internal/core/layout", "plugin"}, nil},
	{"internal/core/capability", 1, []string{"internal/core/lazyre", "plugin"}, []string{"internal/testutil/sharedtest"}},
	{"internal/core/fetch", 1, []string{"internal/core/lazyre", "internal/core/netidle", "internal/core/progress", "plugin"}, []string{"internal/testutil/gitserve", "internal/testutil/silentnet"}},
	{"internal/core/resolver", 1, []string{"plugin"}, nil},
	{"internal/core/settings", 1, []string{"internal/core/atomicfile", "internal/core/layout", "internal/core/lazyre", "plugin"}, nil},
	{"internal/core/store", 1, []string{"internal/core/atomicfile"}, []string{"internal/core/store/storetest"}},
	{"internal/core/toolpin", 1, []string{"plugin"}, nil},
	{"internal/core/trust", 1, []string{"internal/core/atomicfile", "plugin"}, nil},
	{"internal/testutil/agentcli", 1, []string{"internal/testutil/processtest"}, nil},
	{"internal/testutil/claudetest", 1, []string{"internal/testutil/processtest"}, nil},
	{"internal/cli/shell", 2, []string{"internal/cli/cliconfig", "internal/core/apiclient", "internal/core/lazyre", "internal/core/trust", "plugin"}, nil},
	{"internal/client/cache", 2, []string{"internal/client/diskrec", "internal/core/atomicfile", "internal/core/layout", "internal/core/store", "internal/core/trust", "plugin"}, []string{"internal/core/source"}},
	{"internal/core/inventory", 2, []string{"internal/core/lazyre", "internal/core/toolpin", "plugin"}, nil},
	{"internal/core/marketplace", 2, []string{"internal/core/atomicfile", "internal/core/fetch", "internal/core/lazyre", "internal/core/netidle", "internal/core/store", "plugin"}, []string{"internal/testutil/claudetest", "internal/testutil/gitserve", "internal/testutil/netnstest", "internal/testutil/sharedtest", "internal/testutil/silentnet"}},
	{"internal/core/policy", 2, []string{"internal/core/atomicfile", "internal/core/capability", "internal/core/lazyre", "internal/core/settings", "internal/core/toolpin", "plugin"}, []string{"internal/testutil/agentcli", "internal/testutil/claudetest"}},
	{"internal/core/source", 2, []string{"internal/core/atomicfile", "internal/core/fetch", "internal/core/lazyre", "internal/core/netidle", "internal/core/progress", "plugin"}, []string{"internal/testutil/gitserve", "internal/testutil/netnstest", "internal/testutil/silentnet"}},
	{"internal/core/store/storetest", 2, []string{"internal/core/store"}, nil},
	{"internal/server/etcdstore", 2, []string{"internal/core/store"}, []string{"internal/core/store/storetest", "internal/testutil/etcdtest"}},
	{"internal/server/follow", 2, []string{"internal/core/store"}, []string{"internal/testutil/storeharness"}},
	{"internal/client/agentlink", 3, []string{"internal/client/cache", "internal/core/policy", "plugin"}, nil},
	{"internal/client/load", 3, []string{"internal/client/cache", "internal/core/atomicfile", "internal/core/capability", "internal/core/policy", "internal/core/resolver", "internal/core/settings", "plugin"}, []string{"internal/core/store", "internal/testutil/sharedtest"}},
	{"internal/client/policyremote", 3, []string{"internal/core/apiclient", "internal/core/atomicfile", "internal/core/layout", "internal/core/policy", "plugin"}, []string{"internal/testutil/testapi"}},
	{"internal/server/catalog", 3, []string{"internal/core/capability", "internal/core/marketplace", "plugin"}, []string{"internal/core/store"}},
	{"internal/server/fleet", 3, []string{"internal/core/inventory", "internal/core/store"}, []string{"internal/testutil/storeharness"}},
	{"internal/server/mcpregistry", 3, []string{"internal/core/capability", "internal/core/lazyre", "internal/core/store"}, []string{"internal/testutil/storeharness"}},
	{"internal/server/toolpins", 3, []string{"internal/core/inventory", "internal/core/store", "internal/core/toolpin", "plugin"}, []string{"internal/testutil/storeharness"}},
	{"internal/testutil/storeharness", 3, []string{"internal/core/store", "internal/server/etcdstore", "internal/testutil/etcdtest"}, nil},
	{"internal/testutil/testworld", 3, []string{"internal/client/cache", "internal/core/layout", "internal/core/policy", "internal/core/settings", "internal/core/store", "plugin"}, nil},
	{"agent", 4, []string{"agent/internal/proctree", "internal/client/agentlink", "internal/client/cache", "internal/client/diskrec", "internal/client/load", "internal/client/userconfig", "internal/core/atomicfile", "internal/core/layout", "internal/core/lazyre", "internal/core/policy", "internal/core/settings", "internal/core/store", "internal/core/toolpin", "plugin"}, []string{"agent/internal/worldtest", "internal/core/marketplace", "internal/core/trust", "internal/testutil/processtest", "internal/testutil/sharedtest", "internal/testutil/testworld"}},
	{"internal/client/collect", 4, []string{"internal/client/load", "internal/core/apiclient", "internal/core/atomicfile", "internal/core/inventory", "internal/core/policy", "internal/core/trust", "plugin"}, nil},
	{"internal/client/install", 4, []string{"internal/client/cache", "internal/client/load", "internal/core/atomicfile", "internal/core/capability", "internal/core/fetch", "internal/core/layout", "internal/core/marketplace", "internal/core/policy", "internal/core/resolver", "internal/core/settings", "internal/core/source", "internal/core/trust", "plugin"}, []string{"internal/core/store", "internal/testutil/sharedtest", "internal/testutil/testworld"}},
	{"internal/server/approvals", 4, []string{"internal/core/capability", "internal/core/policy", "internal/core/store", "internal/core/trust", "plugin"}, []string{"internal/testutil/storeharness"}},
	{"internal/server/tokens", 4, []string{"internal/core/inventory", "internal/core/lazyre", "internal/core/store", "internal/server/fleet"}, []string{"internal/testutil/storeharness"}},
	{"agent/internal/worldtest", 5, []string{"agent", "internal/client/agentlink", "internal/core/policy", "internal/testutil/testworld"}, nil},
	{"internal/client/home", 5, []string{"agent", "internal/cli/cliconfig", "internal/cli/shell", "internal/client/agentlink", "internal/client/cache", "internal/client/collect", "internal/client/install", "internal/client/policyremote", "internal/core/fetch", "internal/core/layout", "internal/core/marketplace", "internal/core/policy", "internal/core/settings", "internal/core/source", "internal/core/store", "internal/core/toolpin", "internal/core/trust", "plugin"}, []string{"internal/testutil/gitserve", "internal/testutil/testworld"}},
	{"internal/server/audit", 5, []string{"internal/core/store", "internal/server/tokens"}, []string{"internal/testutil/storeharness"}},
	{"internal/server/identity", 5, []string{"internal/core/store", "internal/server/tokens"}, []string{"internal/testutil/oidctest"}},
	{"internal/server/sessions", 5, []string{"internal/core/store", "internal/server/tokens"}, []string{"internal/testutil/storeharness"}},
	{"internal/server/channel", 6, []string{"internal/core/atomicfile", "internal/core/capability", "internal/core/fetch", "internal/core/marketplace", "internal/core/policy", "internal/core/resolver", "internal/core/source", "internal/core/store", "internal/core/trust", "internal/server/audit", "plugin"}, []string{"internal/testutil/gitserve", "internal/testutil/netnstest", "internal/testutil/sharedtest"}},
	{"internal/server/requests", 6, []string{"internal/core/lazyre", "internal/core/policy", "internal/core/store", "plugin"}, []string{"internal/testutil/storeharness"}},
	{"internal/server/revocations", 6, []string{"internal/core/policy", "internal/core/store", "internal/server/audit"}, []string{"internal/testutil/storeharness"}},
	{"internal/server/policystate", 7, []string{"internal/core/policy", "internal/core/store", "internal/core/toolpin", "internal/server/approvals", "internal/server/audit", "internal/server/requests", "internal/server/revocations", "internal/server/tokens", "internal/server/toolpins"}, []string{"internal/core/inventory", "internal/testutil/storeharness"}},
	{"internal/server/api", 8, []string{"internal/core/apiclient", "internal/core/capability", "internal/core/inventory", "internal/core/lazyre", "internal/core/marketplace", "internal/core/policy", "internal/core/resolver", "internal/core/source", "internal/core/store", "internal/core/toolpin", "internal/core/trust", "internal/server/approvals", "internal/server/audit", "internal/server/catalog", "internal/server/channel", "internal/server/fleet", "internal/server/follow", "internal/server/gitserver", "internal/server/identity", "internal/server/mcpregistry", "internal/server/policystate", "internal/server/requests", "internal/server/revocations", "internal/server/sessions", "internal/server/tokens", "internal/server/toolpins", "internal/server/web", "plugin"}, []string{"internal/core/fetch", "internal/server/etcdstore", "internal/testutil/agentcli", "internal/testutil/claudetest", "internal/testutil/etcdtest", "internal/testutil/gitserve", "internal/testutil/oidctest"}},
	{"internal/server/serverhome", 9, []string{"internal/cli/shell", "internal/core/fetch", "internal/core/layout", "internal/core/marketplace", "internal/core/source", "internal/core/store", "internal/server/api", "internal/server/catalog", "internal/server/etcdstore", "internal/server/identity", "plugin"}, []string{"internal/testutil/etcdtest"}},
	{"internal/testutil/testapi", 9, []string{"internal/core/layout", "internal/core/store", "internal/server/api"}, nil},
	{"bench", 10, []string{"internal/client/cache", "internal/core/capability", "internal/core/inventory", "internal/core/layout", "internal/core/store", "internal/core/trust", "internal/server/api", "internal/server/etcdstore", "internal/server/fleet", "internal/server/gitserver", "plugin"}, nil},
	{"cmd/wharf", 10, []string{"agent", "internal/cli/cliconfig", "internal/cli/cliusage", "internal/cli/shell", "internal/client/agentlink", "internal/client/cache", "internal/client/collect", "internal/client/home", "internal/client/install", "internal/client/load", "internal/client/login", "internal/client/policyremote", "internal/client/userconfig", "internal/core/apiclient", "internal/core/atomicfile", "internal/core/capability", "internal/core/fetch", "internal/core/inventory", "internal/core/layout", "internal/core/marketplace", "internal/core/policy", "internal/core/resolver", "internal/core/settings", "internal/core/source", "internal/core/store", "internal/core/toolpin", "internal/core/trust", "plugin"}, []string{"internal/server/api", "internal/server/catalog", "internal/server/fleet", "internal/server/identity", "internal/testutil/agentcli", "internal/testutil/claudetest", "internal/testutil/gitserve", "internal/testutil/oidctest", "internal/testutil/processtest", "internal/testutil/sharedtest", "internal/testutil/silentnet", "internal/testutil/testapi", "internal/testutil/testworld"}},
	{"cmd/wharf-server", 10, []string{"(root)", "internal/cli/cliconfig", "internal/cli/cliusage", "internal/cli/shell", "internal/core/layout", "internal/core/marketplace", "internal/core/store", "internal/server/api", "internal/server/catalog", "internal/server/identity", "internal/server/serverhome", "internal/server/tokens", "plugin"}, []string{"internal/testutil/etcdtest", "internal/testutil/oidctest"}},
}

// side says which command runs a unit, from where it sits in the tree.
func side(u string) string {
	switch {
	case u == "agent/internal/worldtest" || u == "agent/mcp/internal/testserver":
		return "test" // the agent's own test helpers
	case u == "cmd/wharf" || u == "agent" || strings.HasPrefix(u, "agent/") || strings.HasPrefix(u, "internal/client/"):
		return "client"
	case u == "cmd/wharf-server" || strings.HasPrefix(u, "internal/server/"):
		return "server"
	case strings.HasPrefix(u, "internal/cli/"):
		return "cli"
	case strings.HasPrefix(u, "internal/testutil/") || u == "internal/layering":
		return "test"
	case u == "bench":
		return "bench"
	}
	return "core" // plugin, internal/core/*, the embedded demo (root)
}

// sideMayImport is the tree's promise: the shared core imports only the
// core, the client and the server never each other, and both commands
// share the CLI shell.
func sideMayImport(from, to string) bool {
	switch from {
	case "test", "bench":
		return to != "bench"
	case "core":
		return to == "core"
	case "cli":
		return to == "core" || to == "cli"
	case "client", "server":
		return to == from || to == "core" || to == "cli"
	}
	return false
}

func byPath() map[string]unit {
	m := map[string]unit{}
	for _, u := range table {
		m[u.path] = u
	}
	return m
}

// unitOf returns the row a package belongs to: the longest row its path
// starts with ("(root)" for the module's own package), or "" for none.
func unitOf(p string) string {
	if p == module {
		return "(root)"
	}
	rel := strings.TrimPrefix(p, module+"/")
	best := ""
	for _, u := range table {
		if (rel == u.path || strings.HasPrefix(rel, u.path+"/")) && len(u.path) > len(best) {
			best = u.path
		}
	}
	return best
}

type listed struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func goList(t *testing.T) []listed {
	t.Helper()
	out, err := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; the test is not looking at the module", len(pkgs))
	}
	return pkgs
}

// TestImportsFollowTheRankedTable fails on an import that goes up or
// sideways, on one the table does not list, on a package in no row, and on
// a listed edge nothing uses.
func TestImportsFollowTheRankedTable(t *testing.T) {
	rows := byPath()
	used := map[[2]string]bool{}
	var bad []string
	for _, p := range goList(t) {
		from := unitOf(p.ImportPath)
		if from == "" {
			bad = append(bad, p.ImportPath+": in no row of the ranked table; add a row here and run go test ./internal/layering -update")
			continue
		}
		row := rows[from]
		check := func(imp string, test bool) {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				return
			}
			to := unitOf(imp)
			if to == from {
				return
			}
			if to == "" {
				return // reported as a package of its own
			}
			switch {
			case slices.Contains(row.imports, to):
				used[[2]string{from, to}] = true
			case test && slices.Contains(row.tests, to):
				used[[2]string{from, "test:" + to}] = true
			default:
				kind := "imports"
				if test {
					kind = "tests import"
				}
				bad = append(bad, fmt.Sprintf("%s %s %s (%s): the row of %s does not list it", p.ImportPath, kind, imp, to, from))
			}
		}
		for _, imp := range p.Imports {
			check(imp, false)
		}
		for _, imp := range append(slices.Clone(p.TestImports), p.XTestImports...) {
			check(imp, true)
		}
	}
	for _, u := range table {
		for _, to := range u.imports {
			if !used[[2]string{u.path, to}] {
				bad = append(bad, fmt.Sprintf("%s lists %s, which its code does not import: remove the edge", u.path, to))
			}
		}
		for _, to := range u.tests {
			if !used[[2]string{u.path, "test:" + to}] {
				bad = append(bad, fmt.Sprintf("%s lists %s for its tests, which they do not import (or its code does): remove it", u.path, to))
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// TestTableRanks checks the table itself: every edge points to a row of a
// strictly lower rank and allowed by the sides of the tree, rows are unique
// and sorted by rank.
func TestTableRanks(t *testing.T) {
	rows := byPath()
	if len(rows) != len(table) {
		t.Errorf("the table has %d rows for %d paths: a path is listed twice", len(table), len(rows))
	}
	for i, u := range table {
		if i > 0 && (table[i-1].rank > u.rank || table[i-1].rank == u.rank && table[i-1].path >= u.path) {
			t.Errorf("row %s is out of order: rows go by rank, then path", u.path)
		}
		for _, to := range u.imports {
			v, ok := rows[to]
			switch {
			case !ok:
				t.Errorf("%s imports %s, which has no row", u.path, to)
			case v.rank >= u.rank:
				t.Errorf("%s (rank %d) imports %s (rank %d): imports point strictly down", u.path, u.rank, to, v.rank)
			case !sideMayImport(side(u.path), side(to)):
				t.Errorf("%s (%s side) imports %s (%s side)", u.path, side(u.path), to, side(to))
			}
		}
		for _, to := range u.tests {
			if _, ok := rows[to]; !ok {
				t.Errorf("%s tests import %s, which has no row", u.path, to)
			}
			if slices.Contains(u.imports, to) {
				t.Errorf("%s lists %s twice", u.path, to)
			}
		}
	}
}

// TestRanksCatchAnUpwardEdge shows the rank check at work on a made-up
// table: a core package importing the client fails twice (rank and side).
func TestRanksCatchAnUpwardEdge(t *testing.T) {
	if r := side("internal/core/store"); r != "core" {
		t.Fatalf("side(internal/core/store) = %s", r)
	}
	if sideMayImport("core", "client") || sideMayImport("client", "server") || sideMayImport("server", "client") {
		t.Fatal("the sides allow a crossing they must not")
	}
	if !sideMayImport("client", "core") || !sideMayImport("server", "cli") {
		t.Fatal("the sides refuse an edge they must allow")
	}
	if got := unitOf(module + "/agent/hooks"); got != "agent" {
		t.Errorf("unitOf(agent/hooks) = %q, want agent", got)
	}
	if got := unitOf(module + "/agent/internal/worldtest"); got != "agent/internal/worldtest" {
		t.Errorf("unitOf(agent/internal/worldtest) = %q", got)
	}
	if got := unitOf(module + "/nowhere"); got != "" {
		t.Errorf("unitOf(nowhere) = %q, want none", got)
	}
}

// markdown renders the table as docs/architecture.md shows it.
func markdown() string {
	var b strings.Builder
	b.WriteString("| rank | package | side | imports | its tests also import |\n|---|---|---|---|---|\n")
	list := func(l []string) string {
		if len(l) == 0 {
			return "—"
		}
		return "`" + strings.Join(l, "`, `") + "`"
	}
	for _, u := range table {
		fmt.Fprintf(&b, "| %d | `%s` | %s | %s | %s |\n", u.rank, u.path, side(u.path), list(u.imports), list(u.tests))
	}
	return b.String()
}

const (
	beginMark = "<!-- ranked table: generated by go test ./internal/layering -update -->\n"
	endMark   = "<!-- end of ranked table -->\n"
)

// TestDocShowsTheTable fails when docs/architecture.md's ranked table is not
// this test's; -update rewrites it.
func TestDocShowsTheTable(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "architecture.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		t.Fatalf("%s has no ranked table between %q and %q", path, strings.TrimSpace(beginMark), strings.TrimSpace(endMark))
	}
	want := s[:i+len(beginMark)] + markdown() + s[j:]
	if want == s {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's ranked table differs from the one in internal/layering; run go test ./internal/layering -update", path)
}
