package resolver

import (
	"fmt"
	"maps"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

func enabledSet(ss ...string) map[plugin.ID]bool {
	m := map[plugin.ID]bool{}
	for _, s := range ss {
		m[plugin.MustParseID(s)] = true
	}
	return m
}

func TestDemote(t *testing.T) {
	cases := []struct {
		name      string
		cat       func(t *testing.T) *memCatalog
		installed []string
		enabled   []string
		active    []string
		why       map[string]string // demoted plugin → reason
	}{
		{
			name: "everything enabled and present is active",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("m").add(t, "a@m", "b").add(t, "b@m", "c").add(t, "c@m")
			},
			installed: []string{"a@m", "b@m", "c@m"},
			enabled:   []string{"a@m", "b@m", "c@m"},
			active:    []string{"a@m", "b@m", "c@m"},
			why:       map[string]string{},
		},
		{
			name: "disabling c demotes b and then a",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("m").add(t, "a@m", "b").add(t, "b@m", "c").add(t, "c@m")
			},
			installed: []string{"a@m", "b@m", "c@m"},
			enabled:   []string{"a@m", "b@m"},
			active:    nil,
			why: map[string]string{
				"a@m": "a@m needs b@m; b@m needs c@m; c@m is disabled",
				"b@m": "b@m needs c@m; c@m is disabled",
			},
		},
		{
			name: "a dependency that is not installed is inactive",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("m").add(t, "a@m", "b").add(t, "b@m", "c").add(t, "c@m")
			},
			installed: []string{"a@m", "b@m"},
			enabled:   []string{"a@m", "b@m", "c@m"},
			active:    nil,
			why: map[string]string{
				"a@m": "a@m needs b@m; b@m needs c@m; c@m is not installed",
				"b@m": "b@m needs c@m; c@m is not installed",
			},
		},
		{
			name: "diamond with one broken branch demotes the top only through it",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("m").add(t, "a@m", "b", "c").add(t, "b@m", "d").add(t, "c@m", "e").add(t, "d@m").add(t, "e@m")
			},
			installed: []string{"a@m", "b@m", "c@m", "d@m", "e@m"},
			enabled:   []string{"a@m", "b@m", "c@m", "d@m"},
			active:    []string{"b@m", "d@m"},
			why: map[string]string{
				"a@m": "a@m needs c@m; c@m needs e@m; e@m is disabled",
				"c@m": "c@m needs e@m; e@m is disabled",
			},
		},
		{
			name: "cross-marketplace dependency counts like any other",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("corp", "community").market("community").
					add(t, "deploy@corp", "creds@community").add(t, "creds@community")
			},
			installed: []string{"deploy@corp", "creds@community"},
			enabled:   []string{"deploy@corp"},
			why:       map[string]string{"deploy@corp": "deploy@corp needs creds@community; creds@community is disabled"},
		},
		{
			name: "an enabled cycle stays active; a disabled member demotes the rest",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("m").add(t, "a@m", "b").add(t, "b@m", "a").
					add(t, "x@m", "y").add(t, "y@m", "z").add(t, "z@m", "x")
			},
			installed: []string{"a@m", "b@m", "x@m", "y@m", "z@m"},
			enabled:   []string{"a@m", "b@m", "x@m", "y@m"},
			active:    []string{"a@m", "b@m"},
			why: map[string]string{
				"y@m": "y@m needs z@m; z@m is disabled",
				"x@m": "x@m needs y@m; y@m needs z@m; z@m is disabled",
			},
		},
		{
			name: "an installed plugin the catalog does not know has no dependencies",
			cat: func(t *testing.T) *memCatalog {
				return newCatalog().market("m").add(t, "a@m", "old")
			},
			installed: []string{"a@m", "old@m"},
			enabled:   []string{"a@m", "old@m", "ghost@m"},
			active:    []string{"a@m", "old@m"},
			why:       map[string]string{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := New(tc.cat(t), manual(tc.installed...), nil)
			enabled := enabledSet(tc.enabled...)
			before := maps.Clone(enabled)
			a := r.Demote(enabled)
			if !maps.Equal(before, enabled) {
				t.Errorf("Demote changed the enabled set: %v → %v", before, enabled)
			}
			if got := fmt.Sprint(idStrings(a.Active())); got != fmt.Sprint(tc.active) {
				t.Errorf("active = %s, want %v", got, tc.active)
			}
			demoted := a.Demoted()
			if len(demoted) != len(tc.why) {
				t.Errorf("demoted = %v, want %d: %v", idStrings(demoted), len(tc.why), tc.why)
			}
			for _, id := range demoted {
				reason, ok := a.Why(id)
				if !ok {
					t.Errorf("Why(%s) = false for a demoted plugin", id)
				}
				if reason.String() != tc.why[id.String()] {
					t.Errorf("Why(%s) = %q, want %q", id, reason, tc.why[id.String()])
				}
				if a.Status(id) != StatusDemoted {
					t.Errorf("Status(%s) = %s, want demoted", id, a.Status(id))
				}
			}
			for _, s := range tc.active {
				if _, ok := a.Why(plugin.MustParseID(s)); ok {
					t.Errorf("Why(%s) = true for an active plugin", s)
				}
			}
		})
	}
}

func TestActivationStatus(t *testing.T) {
	cat := newCatalog().market("m").add(t, "a@m", "b").add(t, "b@m").add(t, "c@m")
	a := New(cat, manual("a@m", "b@m", "c@m"), nil).Demote(enabledSet("a@m", "c@m", "ghost@m"))
	for id, want := range map[string]Status{
		"a@m": StatusDemoted, "b@m": StatusDisabled, "c@m": StatusActive, "ghost@m": StatusNotInstalled,
	} {
		if got := a.Status(plugin.MustParseID(id)); got != want {
			t.Errorf("Status(%s) = %s, want %s", id, got, want)
		}
	}
	if _, ok := a.Why(plugin.MustParseID("b@m")); ok {
		t.Error("a disabled plugin is not demoted, Why must say false")
	}
}

func TestReverseDependents(t *testing.T) {
	// a → b → c, d → c, e → f@other (other not installed), x alone.
	cat := newCatalog().market("m", "other").market("other").
		add(t, "a@m", "b").add(t, "b@m", "c").add(t, "c@m").add(t, "d@m", "c").
		add(t, "e@m", "f@other").add(t, "x@m")
	r := New(cat, manual("a@m", "b@m", "c@m", "d@m", "e@m", "x@m"), nil)
	cases := []struct {
		id                 string
		direct, transitive []string
	}{
		{"c@m", []string{"b@m", "d@m"}, []string{"a@m", "b@m", "d@m"}},
		{"b@m", []string{"a@m"}, []string{"a@m"}},
		{"a@m", nil, nil},
		{"x@m", nil, nil},
		{"f@other", []string{"e@m"}, []string{"e@m"}}, // not installed, still depended on
		{"nobody@m", nil, nil},
	}
	for _, tc := range cases {
		got := r.ReverseDependents(plugin.MustParseID(tc.id))
		if fmt.Sprint(idStrings(got.Direct)) != fmt.Sprint(tc.direct) ||
			fmt.Sprint(idStrings(got.Transitive)) != fmt.Sprint(tc.transitive) {
			t.Errorf("ReverseDependents(%s) = %v / %v, want %v / %v", tc.id,
				idStrings(got.Direct), idStrings(got.Transitive), tc.direct, tc.transitive)
		}
	}
	// A cycle does not list the plugin as its own dependent.
	cyc := newCatalog().market("m").add(t, "a@m", "b").add(t, "b@m", "a")
	got := New(cyc, manual("a@m", "b@m"), nil).ReverseDependents(plugin.MustParseID("a@m"))
	if fmt.Sprint(idStrings(got.Transitive)) != "[b@m]" {
		t.Errorf("cycle: transitive = %v, want [b@m]", idStrings(got.Transitive))
	}
}

func TestPrunable(t *testing.T) {
	// manual a → auto b → auto c; auto d alone; auto e ⇄ auto f (orphaned
	// cycle); manual g (disabled or not, it counts) → auto h; auto i → manual a.
	cat := newCatalog().market("m").
		add(t, "a@m", "b").add(t, "b@m", "c").add(t, "c@m").add(t, "d@m").
		add(t, "e@m", "f").add(t, "f@m", "e").add(t, "g@m", "h").add(t, "h@m").add(t, "i@m", "a")
	installed := []Installed{
		{ID: plugin.MustParseID("a@m")},
		{ID: plugin.MustParseID("b@m"), Auto: true},
		{ID: plugin.MustParseID("c@m"), Auto: true},
		{ID: plugin.MustParseID("d@m"), Auto: true},
		{ID: plugin.MustParseID("e@m"), Auto: true},
		{ID: plugin.MustParseID("f@m"), Auto: true},
		{ID: plugin.MustParseID("g@m")},
		{ID: plugin.MustParseID("h@m"), Auto: true},
		{ID: plugin.MustParseID("i@m"), Auto: true},
	}
	got := New(cat, installed, nil).Prunable()
	if fmt.Sprint(idStrings(got)) != "[d@m e@m f@m i@m]" {
		t.Errorf("Prunable = %v, want [d@m e@m f@m i@m]", idStrings(got))
	}
	// Installing a plugin again as manual takes it out of the prunable set,
	// with its dependencies.
	installed = append(installed, Installed{ID: plugin.MustParseID("e@m")})
	got = New(cat, installed, nil).Prunable()
	if fmt.Sprint(idStrings(got)) != "[d@m i@m]" {
		t.Errorf("after marking e manual: Prunable = %v, want [d@m i@m]", idStrings(got))
	}
}

// Demotion drains its worklist highest number first, in a few sweeps, then
// in FIFO order. A chain numbered against that order (each plugin depends
// on the one numbered just before it) needs one sweep per 64 plugins and
// reaches the FIFO fallback; one numbered along it needs one sweep. Both
// give the rescan's answer and a full chain of why.
func TestDemoteLongChainsInEitherNumbering(t *testing.T) {
	const n = 1000
	for _, ascending := range []bool{true, false} {
		t.Run(fmt.Sprintf("dependency numbered first: %v", ascending), func(t *testing.T) {
			cat := newCatalog().market("m")
			name := func(k int) string { return fmt.Sprintf("p%d@m", k) }
			installed := make([]Installed, n)
			enabled := map[plugin.ID]bool{}
			for k := 0; k < n; k++ {
				if k == 0 {
					cat.add(t, name(k))
				} else {
					cat.add(t, name(k), fmt.Sprintf("p%d", k-1))
				}
				pos := k
				if !ascending {
					pos = n - 1 - k
				}
				id := plugin.MustParseID(name(k))
				installed[pos] = Installed{ID: id, Enabled: k != 0}
				enabled[id] = k != 0
			}
			a := New(cat, installed, nil).DemoteInstalled()
			want := naiveDemote(cat, installed, enabled)
			for _, in := range installed {
				if got := a.Status(in.ID) == StatusActive; got != want[in.ID] {
					t.Fatalf("%s active = %v, rescan says %v", in.ID, got, want[in.ID])
				}
			}
			why, ok := a.Why(plugin.MustParseID(name(n - 1)))
			if !ok || len(why.Chain) != n || why.Chain[n-1].String() != name(0) || why.End != StatusDisabled {
				t.Fatalf("Why(%s) = %d links ending in %v (%v), want %d ending in the disabled %s", name(n-1), len(why.Chain), why.Chain[len(why.Chain)-1], why.End, n, name(0))
			}
		})
	}
}
