package resolver_test

import (
	"errors"
	"fmt"

	"github.com/wharfhq/wharf/internal/core/resolver"
	"github.com/wharfhq/wharf/plugin"
)

// catalog is the smallest Catalog: one marketplace, "corp", that allows
// dependencies on "community", which is known too.
type catalog map[plugin.ID][]plugin.Dependency

func (c catalog) Lookup(id plugin.ID) (resolver.Node, bool) {
	deps, ok := c[id]
	return resolver.Node{Dependencies: deps}, ok
}
func (c catalog) KnownMarketplace(name string) bool { return name == "corp" || name == "community" }
func (c catalog) AllowsCross(from, to string) bool  { return from == "corp" && to == "community" }

func ExampleResolver_Closure() {
	cat := catalog{
		plugin.MustParseID("deploy@corp"):     {{Name: "infra"}, {Name: "creds", Marketplace: "community"}},
		plugin.MustParseID("infra@corp"):      {{Name: "creds", Marketplace: "community", Version: "^2"}},
		plugin.MustParseID("creds@community"): nil,
	}
	installed := []resolver.Installed{{ID: plugin.MustParseID("creds@community")}}
	plan, err := resolver.New(cat, installed, nil).Closure(plugin.MustParseID("deploy@corp"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range plan.Steps {
		fmt.Println(s.ID, s.Role)
	}
	fmt.Println(plan.Warnings[0])

	cat[plugin.MustParseID("infra@corp")] = []plugin.Dependency{{Name: "cloud-creds"}}
	_, err = resolver.New(cat, installed, nil).Closure(plugin.MustParseID("deploy@corp"))
	var missing *resolver.MissingError
	fmt.Println(errors.As(err, &missing), missing.RequiredBy)
	fmt.Println(err)
	fmt.Println("hint:", plugin.HintOf(err))
	// Output:
	// creds@community installed
	// infra@corp dependency
	// deploy@corp root
	// dependency version ranges are ignored; wharf only checks that a dependency is installed and enabled (infra@corp → creds@community "^2")
	// true infra@corp
	// infra@corp requires cloud-creds@corp, which no known marketplace lists (deploy@corp → infra@corp → cloud-creds@corp)
	// hint: run: wharf marketplace update corp; if cloud-creds@corp is still missing, ask the maintainer of infra@corp to fix its dependencies
}

func ExampleResolver_Demote() {
	cat := catalog{
		plugin.MustParseID("a@corp"): {{Name: "b"}},
		plugin.MustParseID("b@corp"): {{Name: "c"}},
		plugin.MustParseID("c@corp"): nil,
	}
	var installed []resolver.Installed
	for _, s := range []string{"a@corp", "b@corp", "c@corp"} {
		installed = append(installed, resolver.Installed{ID: plugin.MustParseID(s)})
	}
	enabled := map[plugin.ID]bool{plugin.MustParseID("a@corp"): true, plugin.MustParseID("b@corp"): true}
	act := resolver.New(cat, installed, nil).Demote(enabled)
	for _, id := range act.Demoted() {
		why, _ := act.Why(id)
		fmt.Println(id, act.Status(id), "—", why)
	}
	// Output:
	// a@corp demoted — a@corp needs b@corp; b@corp needs c@corp; c@corp is disabled
	// b@corp demoted — b@corp needs c@corp; c@corp is disabled
}
