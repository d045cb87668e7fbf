package resolver

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// refuse is a CrossPolicy that refuses edges into one marketplace and
// records every edge it is asked about.
type refuse struct {
	market string
	asked  []string
}

func (p *refuse) AllowCross(from, to plugin.ID) error {
	p.asked = append(p.asked, from.String()+"->"+to.String())
	if to.Source == p.market {
		return plugin.Errorf(plugin.LayerPolicy, plugin.TypePolicyDenied, to.String(),
			"ask an admin to allow marketplace "+p.market, "managed policy blocks dependencies on %q", p.market)
	}
	return nil
}

func TestClosure(t *testing.T) {
	type errWant struct {
		kind string // "cycle", "missing", "cross"
		msg  string // exact message of the typed error
		hint string // substring of the hint
	}
	cases := []struct {
		name      string
		cat       func(t *testing.T) *memCatalog
		installed []Installed
		policy    *refuse
		root      string
		steps     []string // "id role"
		install   []string // ToInstall ids
		warnings  []string // substrings, one per warning
		err       *errWant
		asked     []string // edges the policy was asked about
	}{
		{
			name:    "no dependencies",
			cat:     func(t *testing.T) *memCatalog { return newCatalog().market("m").add(t, "a@m") },
			root:    "a@m",
			steps:   []string{"a@m root"},
			install: []string{"a@m"},
		},
		{
			name: "chain installs dependencies first",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("m").add(t, "a@m", "b").add(t, "b@m", "c").add(t, "c@m")
			},
			root:    "a@m",
			steps:   []string{"c@m dependency", "b@m dependency", "a@m root"},
			install: []string{"c@m", "b@m", "a@m"},
		},
		{
			name: "diamond is not a cycle and plans the shared dependency once",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("m").add(t, "a@m", "b", "c").add(t, "b@m", "d").add(t, "c@m", "d").add(t, "d@m")
			},
			root:  "a@m",
			steps: []string{"d@m dependency", "b@m dependency", "c@m dependency", "a@m root"},
		},
		{
			name: "same dependency written twice",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("m").add(t, "a@m", "b", "b@m").add(t, "b@m")
			},
			root:  "a@m",
			steps: []string{"b@m dependency", "a@m root"},
		},
		{
			name: "self-dependency is a cycle",
			cat:  func(t *testing.T) *memCatalog { return newCatalog().market("m").add(t, "a@m", "a") },
			root: "a@m",
			err:  &errWant{"cycle", "dependency cycle: a@m → a@m", "remove its dependency on itself"},
		},
		{
			name: "3-cycle prints its chain",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("m").add(t, "a@m", "b").add(t, "b@m", "c").add(t, "c@m", "a")
			},
			root: "a@m",
			err:  &errWant{"cycle", "dependency cycle: a@m → b@m → c@m → a@m", "c@m on a@m"},
		},
		{
			name: "cycle below the root starts where it closes",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("m").add(t, "r@m", "x", "a").add(t, "x@m").add(t, "a@m", "b").add(t, "b@m", "a")
			},
			root: "r@m",
			err:  &errWant{"cycle", "dependency cycle: a@m → b@m → a@m", "b@m on a@m"},
		},
		{
			name: "missing direct dependency names who required it",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("corp").add(t, "deploy@corp", "cloud-creds")
			},
			root: "deploy@corp",
			err: &errWant{"missing", "deploy@corp requires cloud-creds@corp, which no known marketplace lists",
				"run: wharf marketplace update corp"},
		},
		{
			name: "missing dependency two levels down",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("corp").add(t, "deploy@corp", "infra").add(t, "infra@corp", "cloud-creds")
			},
			root: "deploy@corp",
			err: &errWant{"missing",
				"infra@corp requires cloud-creds@corp, which no known marketplace lists (deploy@corp → infra@corp → cloud-creds@corp)",
				"ask the maintainer of infra@corp"},
		},
		{
			name: "cross-marketplace allowed when listed and known",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("corp", "community").market("community").
					add(t, "deploy@corp", "creds@community").add(t, "creds@community", "base").add(t, "base@community")
			},
			policy: &refuse{market: "elsewhere"},
			root:   "deploy@corp",
			// "base" is bare in creds@community, so it means base@community.
			steps: []string{"base@community dependency", "creds@community dependency", "deploy@corp root"},
			asked: []string{"deploy@corp->creds@community"},
		},
		{
			name: "cross-marketplace refused: not listed",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("corp").market("community").
					add(t, "deploy@corp", "creds@community").add(t, "creds@community")
			},
			root: "deploy@corp",
			err: &errWant{"cross",
				`deploy@corp depends on creds@community; marketplace "corp" must list "community" in allowCrossMarketplaceDependenciesOn`,
				`ask the maintainer of marketplace "corp" to add "community"`},
		},
		{
			name: "cross-marketplace refused: target marketplace unknown",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("corp", "community").add(t, "deploy@corp", "creds@community")
			},
			root: "deploy@corp",
			err: &errWant{"cross",
				`deploy@corp depends on creds@community, but marketplace "community" is not known (wharf never adds a marketplace on its own)`,
				"run: wharf marketplace add <source of community>"},
		},
		{
			name: "cross-marketplace refused: policy hook",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("corp", "community").market("community").
					add(t, "deploy@corp", "creds@community").add(t, "creds@community")
			},
			policy: &refuse{market: "community"},
			root:   "deploy@corp",
			err: &errWant{"cross",
				`deploy@corp depends on creds@community; policy refuses dependencies from marketplace "corp" on "community": creds@community: managed policy blocks dependencies on "community"`,
				"ask an admin to allow marketplace community"},
			asked: []string{"deploy@corp->creds@community"},
		},
		{
			name: "cross edge to a plugin already planned is still checked",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("corp", "community").market("community").
					add(t, "deploy@corp", "creds@community", "tool").add(t, "creds@community").add(t, "tool@corp", "creds@community")
			},
			policy: &refuse{market: "none"},
			root:   "deploy@corp",
			steps:  []string{"creds@community dependency", "tool@corp dependency", "deploy@corp root"},
			asked:  []string{"deploy@corp->creds@community", "tool@corp->creds@community"},
		},
		{
			name:      "reinstall of an installed root",
			cat:       func(t *testing.T) *memCatalog { return newCatalog().market("m").add(t, "a@m", "b").add(t, "b@m") },
			installed: manual("a@m", "b@m"),
			root:      "a@m",
			steps:     []string{"b@m installed", "a@m root"},
			install:   []string{"a@m"},
		},
		{
			name: "installed dependencies are skipped but walked",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("m").add(t, "a@m", "b").add(t, "b@m", "c").add(t, "c@m")
			},
			installed: manual("b@m"),
			root:      "a@m",
			steps:     []string{"c@m dependency", "b@m installed", "a@m root"},
			install:   []string{"c@m", "a@m"},
		},
		{
			name: "installed dependency with a missing dependency fails",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("m").add(t, "a@m", "b").add(t, "b@m", "gone")
			},
			installed: manual("b@m"),
			root:      "a@m",
			err:       &errWant{"missing", "b@m requires gone@m, which no known marketplace lists (a@m → b@m → gone@m)", "wharf marketplace update m"},
		},
		{
			name:      "installed dependency no longer listed counts as present",
			cat:       func(t *testing.T) *memCatalog { return newCatalog().market("m").add(t, "a@m", "old") },
			installed: manual("old@m"),
			root:      "a@m",
			steps:     []string{"old@m installed", "a@m root"},
			install:   []string{"a@m"},
		},
		{
			name:      "installed root no longer listed is reinstalled alone",
			cat:       func(t *testing.T) *memCatalog { return newCatalog().market("m") },
			installed: manual("a@m"),
			root:      "a@m",
			steps:     []string{"a@m root"},
		},
		{
			name: "version ranges are ignored with one warning",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("m").add(t, "a@m", "b ^1.2", "c >=2").add(t, "b@m", "c ~2.1").add(t, "c@m")
			},
			root:     "a@m",
			steps:    []string{"c@m dependency", "b@m dependency", "a@m root"},
			warnings: []string{`version ranges are ignored; wharf only checks that a dependency is installed and enabled (a@m → b@m "^1.2" and 2 more)`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cat := tc.cat(t)
			newResolver := func(p CrossPolicy) *Resolver { return New(cat, tc.installed, p) }
			var pol CrossPolicy
			if tc.policy != nil {
				tc.policy.asked = nil
				pol = tc.policy
			}
			r := newResolver(pol)
			plan, err := r.Closure(plugin.MustParseID(tc.root))
			if tc.policy != nil && fmt.Sprint(tc.policy.asked) != fmt.Sprint(tc.asked) {
				t.Errorf("policy asked about %v, want %v", tc.policy.asked, tc.asked)
			}
			if tc.err != nil {
				if err == nil {
					t.Fatalf("got plan %v, want %s error", plan.Steps, tc.err.kind)
				}
				checkDepError(t, err, tc.err.kind, tc.err.msg, tc.err.hint)
				return
			}
			if err != nil {
				t.Fatalf("Closure: %v", err)
			}
			var got []string
			for _, s := range plan.Steps {
				got = append(got, s.ID.String()+" "+s.Role.String())
			}
			if tc.steps != nil && fmt.Sprint(got) != fmt.Sprint(tc.steps) {
				t.Errorf("steps = %q, want %q", got, tc.steps)
			}
			if tc.install != nil {
				var inst []string
				for _, s := range plan.ToInstall() {
					inst = append(inst, s.ID.String())
				}
				if fmt.Sprint(inst) != fmt.Sprint(tc.install) {
					t.Errorf("ToInstall = %q, want %q", inst, tc.install)
				}
			}
			if len(plan.Warnings) != len(tc.warnings) {
				t.Fatalf("warnings = %q, want %d like %q", plan.Warnings, len(tc.warnings), tc.warnings)
			}
			for i, w := range tc.warnings {
				if !strings.Contains(plan.Warnings[i], w) {
					t.Errorf("warning %q does not contain %q", plan.Warnings[i], w)
				}
			}
		})
	}
}

// checkDepError asserts the contract every resolver failure keeps: a
// *plugin.Error of the dependency layer wrapping the typed error, with a hint.
func checkDepError(t *testing.T, err error, kind, msg, hint string) {
	t.Helper()
	var pe *plugin.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *plugin.Error", err, err)
	}
	if pe.Layer != plugin.LayerDependency || pe.Type != plugin.TypeDependencyUnsatisfied {
		t.Errorf("layer/type = %s/%s, want dependency/%s", pe.Layer, pe.Type, plugin.TypeDependencyUnsatisfied)
	}
	if !strings.Contains(plugin.HintOf(err), hint) {
		t.Errorf("hint %q does not contain %q", plugin.HintOf(err), hint)
	}
	var typed error
	switch kind {
	case "cycle":
		var e *CycleError
		if !errors.As(err, &e) {
			t.Fatalf("error %v is not a *CycleError", err)
		}
		typed = e
	case "missing":
		var e *MissingError
		if !errors.As(err, &e) {
			t.Fatalf("error %v is not a *MissingError", err)
		}
		typed = e
	case "cross":
		var e *CrossMarketplaceError
		if !errors.As(err, &e) {
			t.Fatalf("error %v is not a *CrossMarketplaceError", err)
		}
		typed = e
	default:
		t.Fatalf("unknown error kind %q", kind)
	}
	if typed.Error() != msg {
		t.Errorf("message:\n got %s\nwant %s", typed.Error(), msg)
	}
	if strings.HasPrefix(err.Error(), "dependency: ") || plugin.LayerOf(err) != plugin.LayerDependency {
		t.Errorf("full message %q names the layer, or the error is not of the dependency layer", err.Error())
	}
}

func TestClosureErrorFields(t *testing.T) {
	cat := newCatalog().market("corp", "community").
		add(t, "deploy@corp", "infra").add(t, "infra@corp", "cloud-creds", "creds@community")
	_, err := New(cat, nil, nil).Closure(plugin.MustParseID("deploy@corp"))
	var me *MissingError
	if !errors.As(err, &me) {
		t.Fatalf("want *MissingError, got %v", err)
	}
	if me.Dep.String() != "cloud-creds@corp" || me.RequiredBy.String() != "infra@corp" ||
		fmt.Sprint(idStrings(me.Path)) != "[deploy@corp infra@corp]" || !me.MarketplaceKnown {
		t.Errorf("MissingError = %+v", me)
	}
	// The whole message still names the plugin asked for.
	if !strings.Contains(err.Error(), "deploy@corp") {
		t.Errorf("message %q does not name the root", err)
	}

	// The refused edge is the second dependency of infra; the first (missing)
	// is reported first, in declaration order. Remove it to reach the cross edge.
	cat.add(t, "infra@corp", "creds@community")
	_, err = New(cat, nil, nil).Closure(plugin.MustParseID("deploy@corp"))
	var ce *CrossMarketplaceError
	if !errors.As(err, &ce) {
		t.Fatalf("want *CrossMarketplaceError, got %v", err)
	}
	if ce.From.String() != "infra@corp" || ce.To.String() != "creds@community" || ce.Reason != CrossUnknownMarketplace {
		t.Errorf("CrossMarketplaceError = %+v", ce)
	}

	cat.add(t, "infra@corp", "deploy")
	_, err = New(cat, nil, nil).Closure(plugin.MustParseID("deploy@corp"))
	var cy *CycleError
	if !errors.As(err, &cy) || fmt.Sprint(idStrings(cy.Chain)) != "[deploy@corp infra@corp deploy@corp]" {
		t.Fatalf("want cycle deploy → infra → deploy, got %v", err)
	}
}

func TestClosurePolicyErrorIsReachable(t *testing.T) {
	cat := newCatalog().market("corp", "community").market("community").
		add(t, "deploy@corp", "creds@community").add(t, "creds@community")
	_, err := New(cat, nil, &refuse{market: "community"}).Closure(plugin.MustParseID("deploy@corp"))
	// The outermost *plugin.Error is the resolver's (exit code 5) ...
	if plugin.LayerOf(err) != plugin.LayerDependency {
		t.Errorf("LayerOf = %q, want dependency", plugin.LayerOf(err))
	}
	// ... and the policy's own decision stays reachable for callers.
	var ce *CrossMarketplaceError
	if !errors.As(err, &ce) || ce.Reason != CrossPolicyRefused {
		t.Fatalf("want policy-refused CrossMarketplaceError, got %v", err)
	}
	var pe *plugin.Error
	if !errors.As(ce, &pe) || pe.Layer != plugin.LayerPolicy {
		t.Errorf("policy error not wrapped: %v", ce.Err)
	}
}

func TestClosureRootNotListed(t *testing.T) {
	cat := newCatalog().market("corp")
	for _, tc := range []struct {
		root, msg, hint string
	}{
		{"nope@corp", `nope@corp: marketplace "corp" does not list "nope"`, "wharf search nope"},
		{"x@elsewhere", `x@elsewhere: marketplace "elsewhere" is not known`, "run: wharf marketplace add <source of elsewhere>"},
	} {
		_, err := New(cat, nil, nil).Closure(plugin.MustParseID(tc.root))
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Type != plugin.TypeNotFound || pe.Layer != plugin.LayerIntent {
			t.Fatalf("%s: want intent/not-found *plugin.Error, got %v", tc.root, err)
		}
		var me *MissingError
		if !errors.As(err, &me) || !me.RequiredBy.IsZero() {
			t.Fatalf("%s: want *MissingError for the root, got %v", tc.root, err)
		}
		if me.Error() != tc.msg || !strings.Contains(pe.Hint, tc.hint) {
			t.Errorf("%s: message %q hint %q", tc.root, me.Error(), pe.Hint)
		}
	}
}

// A chain longer than any sane recursion depth must not overflow anything.
func TestClosureDeepChain(t *testing.T) {
	const n = 200000
	cat := newCatalog().market("m")
	for i := 0; i < n; i++ {
		var deps []plugin.Dependency
		if i+1 < n {
			deps = []plugin.Dependency{{Name: fmt.Sprintf("p%d", i+1)}}
		}
		cat.nodes[plugin.ID{Name: fmt.Sprintf("p%d", i), Source: "m"}] = Node{Dependencies: deps}
	}
	plan, err := New(cat, nil, nil).Closure(plugin.ID{Name: "p0", Source: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Steps) != n || plan.Steps[0].ID.Name != fmt.Sprintf("p%d", n-1) || plan.Steps[n-1].ID.Name != "p0" {
		t.Fatalf("plan has %d steps, first %v last %v", len(plan.Steps), plan.Steps[0].ID, plan.Steps[n-1].ID)
	}
}
