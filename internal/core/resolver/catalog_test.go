package resolver

import (
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// memCatalog is an in-memory Catalog: the marketplaces it knows (with their
// allowCrossMarketplaceDependenciesOn) and the plugins they list.
type memCatalog struct {
	nodes map[plugin.ID]Node
	known map[string]bool
	cross map[[2]string]bool
}

func newCatalog() *memCatalog {
	return &memCatalog{nodes: map[plugin.ID]Node{}, known: map[string]bool{}, cross: map[[2]string]bool{}}
}

func (c *memCatalog) Lookup(id plugin.ID) (Node, bool)  { n, ok := c.nodes[id]; return n, ok }
func (c *memCatalog) KnownMarketplace(name string) bool { return c.known[name] }
func (c *memCatalog) AllowsCross(from, to string) bool  { return c.cross[[2]string{from, to}] }

// market adds a known marketplace that allows cross dependencies on allow.
func (c *memCatalog) market(name string, allow ...string) *memCatalog {
	c.known[name] = true
	for _, a := range allow {
		c.cross[[2]string{name, a}] = true
	}
	return c
}

// add lists plugin id ("a@m") with dependencies written as in plugin.json
// strings ("b", "b@mkt"), optionally followed by " ^1.2" for a version range.
func (c *memCatalog) add(t testing.TB, id string, deps ...string) *memCatalog {
	t.Helper()
	n := Node{}
	for _, s := range deps {
		name, version, _ := strings.Cut(s, " ")
		d, err := plugin.ParseDependency(name)
		if err != nil {
			t.Fatalf("bad dependency %q in fixture: %v", s, err)
		}
		d.Version = version
		n.Dependencies = append(n.Dependencies, d)
	}
	c.nodes[plugin.MustParseID(id)] = n
	return c
}

func ids(ss ...string) []plugin.ID {
	out := make([]plugin.ID, len(ss))
	for i, s := range ss {
		out[i] = plugin.MustParseID(s)
	}
	return out
}

func idStrings(in []plugin.ID) []string {
	out := make([]string, len(in))
	for i, id := range in {
		out[i] = id.String()
	}
	return out
}

func manual(ss ...string) []Installed {
	out := make([]Installed, len(ss))
	for i, s := range ss {
		out[i] = Installed{ID: plugin.MustParseID(s)}
	}
	return out
}
