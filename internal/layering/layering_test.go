package layering

import (
	"encoding/json"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/wharfhq/wharf/"

// allowed lists, for each unit of the module, the units it may import. A
// unit is a top-level package with its sub-packages, or a sub-package that
// has an entry of its own here (cmd/wharf, store/etcd): a package belongs
// to the longest entry its path starts with. Packages of one unit import
// each other freely. A package in no unit fails the test, and so does an
// entry that is not an explicit list: there are no wildcards.
var allowed = map[string][]string{
	// The client: developers, CI and agents. No server package, no etcd.
	"cmd/wharf": {"internal/cliconfig", "internal/cliusage", "agent", "load", "fetch", "inventory", "inventory/collect", "api/client", "atomicfile", "cache", "install", "internal/lazyre", "marketplace", "plugin", "policy", "settings", "source", "store", "trust", "wire", "layout"},
	// The server: the HTTP API, the web console and the etcd store.
	"cmd/wharf-server": {"internal/cliconfig", "internal/cliusage", "(root)", "api", "fetch", "source", "marketplace", "plugin", "policy", "store", "store/etcd", "trust", "layout"},
	"bench":            {},
	// The fleet benchmark runs real API replicas over etcd.
	"bench/channelrepo": {"githttp"},
	"bench/fleetbench":  {"api", "inventory", "store", "store/etcd"},
	"api":               {"api/client", "inventory", "channel", "githttp", "install", "policy", "trust", "marketplace", "store", "web", "resolver", "cache", "plugin", "settings", "source", "atomicfile", "wire"},
	"api/client":        {},
	"web":               {},
	"agent":             {"load", "policy", "cache", "plugin", "settings", "store", "atomicfile", "wire", "internal/lazyre", "layout"},
	"install":           {"load", "resolver", "marketplace", "cache", "trust", "policy", "plugin", "store", "settings", "source", "fetch", "atomicfile", "wire"},
	"fetch":             {"netidle", "internal/lazyre"},
	"channel":           {"fetch", "marketplace", "source", "trust", "policy", "store", "plugin", "atomicfile", "netidle", "settings"},
	"load":              {"cache", "plugin", "policy", "resolver", "settings"},
	"resolver":          {"plugin", "atomicfile"},
	"marketplace":       {"plugin", "settings", "store", "atomicfile", "fetch", "netidle", "internal/lazyre"},
	"cache":             {"plugin", "trust", "store", "atomicfile", "wire", "layout"},
	"source":            {"plugin", "atomicfile", "fetch", "netidle", "internal/lazyre"},
	"trust":             {"plugin", "atomicfile"},
	"policy":            {"plugin", "settings", "atomicfile", "internal/lazyre", "layout"},
	"settings":          {"plugin", "atomicfile", "internal/lazyre", "layout"},
	"store":             {"atomicfile"},
	// etcd, gRPC and protobuf: only the server command imports it.
	"store/etcd":      {"store"},
	"store/etcdtest":  {},
	"store/storetest": {"store"},
	"plugin":          {"atomicfile", "layout"},
	"(root)":          {}, // embedded assets (the demo marketplace)
	"atomicfile":      {},
	"wire":            {},
	"netidle":         {},
	"inventory":       {"plugin", "store", "internal/lazyre"}, // the server's store; inventory/collect has its own rule
	"layout":          {},
	// The client side of the inventory: reports from a wharf or Claude Code home.
	"inventory/collect": {"inventory", "load", "policy", "trust", "plugin", "atomicfile", "layout", "internal/lazyre"},
	"githttp":           {},
	// The shared test fixtures: a home and directory marketplaces; never
	// agent, install or cmd, whose tests use them.
	"internal/testworld": {"cache", "layout", "plugin", "policy", "settings", "store"},
	// A real API server for the tests of its clients.
	"internal/testapi": {"api", "layout", "store"},
	// The agent sub-packages' world is testworld's plus a Runtime.
	"agent/internal/worldtest": {"agent", "internal/testworld"},
	// Test helpers and the lazy regexp; internal/layering is this test.
	"internal/claudecompat": {},
	"internal/claudetest":   {},
	"internal/cliconfig":    {"plugin"},
	"internal/cliusage":     {},
	"internal/gitserve":     {},
	"internal/layering":     {},
	"internal/lazyre":       {},
	"internal/netnstest":    {},
	"internal/processtest":  {},
	"internal/sharedtest":   {},
	"internal/silentnet":    {},
}

// importers lists, for the units only some packages may import, which
// units may: store/etcd links etcd, gRPC and protobuf, which the client
// and the agent must not.
var importers = map[string][]string{
	"store/etcd": {"cmd/wharf-server", "bench/fleetbench"},
}

type pkg struct {
	ImportPath string
	Imports    []string
}

// unit returns the entry of allowed that p belongs to: the longest one
// its path starts with, else its top-level directory.
func unit(p string) string {
	if p+"/" == module {
		return "(root)"
	}
	rel := strings.TrimPrefix(p, module)
	best := ""
	for u := range allowed {
		if (rel == u || strings.HasPrefix(rel, u+"/")) && len(u) > len(best) {
			best = u
		}
	}
	if best != "" {
		return best
	}
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
		from := unit(p.ImportPath)
		rule, ok := allowed[from]
		if !ok {
			bad = append(bad, p.ImportPath+": package not in the layering table; add it to docs/architecture.md and to this test")
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) && imp+"/" != module {
				continue
			}
			to := unit(imp)
			if to == from {
				continue
			}
			if who, ok := importers[to]; ok && !slices.Contains(who, from) {
				bad = append(bad, p.ImportPath+" imports "+imp+": only "+strings.Join(who, ", ")+" may")
				continue
			}
			okImp := false
			for _, a := range rule {
				if a == to {
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

// The table has no wildcard, every entry it allows exists, and the units
// that only some may import are allowed to them and no one else.
func TestTableIsExplicit(t *testing.T) {
	for from, rule := range allowed {
		for _, to := range rule {
			if strings.Contains(to, "*") {
				t.Errorf("%s: wildcard %q; list the packages it may import", from, to)
			}
			if _, ok := allowed[to]; !ok {
				t.Errorf("%s may import %q, which is not in the table", from, to)
			}
			if who, ok := importers[to]; ok && !slices.Contains(who, from) {
				t.Errorf("%s may import %s, which only %v may", from, to, who)
			}
		}
	}
	for _, u := range []string{"cmd/wharf/x", "cmd/wharf-server", "store/etcd", "store/etcdtest/y", "store/x", "agent/hooks", "api/client", "api/x"} {
		got := unit(module + u)
		want := map[string]string{"cmd/wharf/x": "cmd/wharf", "cmd/wharf-server": "cmd/wharf-server", "store/etcd": "store/etcd",
			"store/etcdtest/y": "store/etcdtest", "store/x": "store", "agent/hooks": "agent", "api/client": "api/client", "api/x": "api"}[u]
		if got != want {
			t.Errorf("unit(%s) = %s, want %s", u, got, want)
		}
	}
}
