package settings

import (
	"slices"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

func mustParse(t *testing.T, doc string) *Settings {
	t.Helper()
	s, err := Parse("layer.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMergeLayersTightens checks each cross-layer rule: a lower layer can
// only restrict, and where a rule is Merge's own (forced states, the
// blocklist union) the result is Merge's.
func TestMergeLayersTightens(t *testing.T) {
	org := mustParse(t, `{"enabledPlugins":{"a@corp":true,"b@corp":"on"},
		"strictKnownMarketplaces":["acme/*",{"source":"github","repo":"corp/p"}],
		"blockedMarketplaces":["shady/*"],
		"strictPluginOnlyCustomization":["hooks"],
		"allowCrossMarketplaceDependenciesOn":["x","y"],
		"requireSignatures":{"corp":["k1","k2"]}}`)
	team := mustParse(t, `{"enabledPlugins":{"a@corp":false,"b@corp":true,"c@corp":false},
		"strictKnownMarketplaces":[{"source":"github","repo":"acme/tools"},{"source":"github","repo":"evil/x"}],
		"blockedMarketplaces":[{"source":"github","repo":"bad/one"},"shady/*"],
		"strictPluginOnlyCustomization":["agents"],
		"allowCrossMarketplaceDependenciesOn":["y","z"],
		"allowManagedHooksOnly":true,
		"requireSignatures":{"corp":["k2","k3"]}}`)
	m := MergeLayers([]*Settings{org, team})

	// Forced states: the highest layer naming a plugin wins, a non-boolean included.
	a, b, c := plugin.ID{Name: "a", Source: "corp"}, plugin.ID{Name: "b", Source: "corp"}, plugin.ID{Name: "c", Source: "corp"}
	if v, ok := m.EnabledPlugins[a]; !ok || !v {
		t.Errorf("a@corp = %v %v, want the org's true", v, ok)
	}
	if _, ok := m.EnabledPlugins[b]; ok || !slices.Contains(m.EnabledInvalid, b) {
		t.Errorf("b@corp: the org's invalid value must win (enabled %v, invalid %v)", m.EnabledPlugins, m.EnabledInvalid)
	}
	if v, ok := m.EnabledPlugins[c]; !ok || v {
		t.Errorf("c@corp = %v %v, want the team's false", v, ok)
	}
	// Blocklists unite, highest layer first, each entry once.
	var blocked []string
	for _, e := range m.BlockedMarketplaces.Entries {
		blocked = append(blocked, e.Key())
	}
	if len(blocked) != 2 || blocked[0] != org.BlockedMarketplaces.Entries[0].Key() {
		t.Errorf("blocked %v", blocked)
	}
	// Allowlists intersect: acme/tools is within the org's acme/*, evil/x
	// and the org's own entries are not within the team's list.
	if s := m.StrictKnownMarketplaces; len(s.Entries) != 1 || s.Entries[0].Repo != "acme/tools" || m.StrictLayers != 2 {
		t.Errorf("strict %+v (layers %d)", s, m.StrictLayers)
	}
	if l := m.StrictPluginOnlyCustomization; l.All || !slices.Equal(l.List, []Surface{SurfaceAgents, SurfaceHooks}) {
		t.Errorf("surfaces %+v", l)
	}
	if n := m.AllowCrossMarketplaceDependenciesOn.Names; !slices.Equal(n, []string{"y"}) {
		t.Errorf("cross %v", n)
	}
	if !m.AllowManagedHooksOnly.On() || m.DisableSideloadFlags.On() {
		t.Errorf("flags %+v %+v", m.AllowManagedHooksOnly, m.DisableSideloadFlags)
	}
	if k := m.RequireSignatures.Keys["corp"]; !slices.Equal(k, []string{"k2"}) || !slices.Equal(m.SignatureOverlaps, []string{"corp"}) {
		t.Errorf("signatures %v, overlaps %v", k, m.SignatureOverlaps)
	}

	// An invalid allowlist anywhere allows nothing.
	bad := mustParse(t, `{"strictKnownMarketplaces":"acme/*"}`)
	if s := MergeLayers([]*Settings{org, bad}).StrictKnownMarketplaces; !s.Invalid || len(s.Entries) != 0 {
		t.Errorf("invalid allowlist merged to %+v", s)
	}
}

func TestSourceListCovers(t *testing.T) {
	l := mustParse(t, `{"strictKnownMarketplaces":["acme/*",{"source":"hostPattern","hostPattern":"\\.corp\\.example$"},{"source":"pathPattern","pathPattern":"^/srv/"}]}`).StrictKnownMarketplaces
	for _, c := range []struct {
		entry string
		want  bool
	}{
		{`{"source":"github","repo":"acme/tools"}`, true},
		{`{"source":"github","repo":"other/tools"}`, false},
		{`{"source":"git","url":"https://git.corp.example/x.git"}`, true},
		{`{"source":"git","url":"https://git.corp.example.evil/x.git"}`, false},
		{`{"source":"directory","path":"/srv/plugins"}`, true},
		{`{"source":"directory","path":"/home/me"}`, false},
		{`"acme/*"`, true},
		{`"other/*"`, false},
		{`{"source":"hostPattern","hostPattern":"corp"}`, false},
	} {
		e, err := ParsePolicySource([]byte(c.entry))
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Covers(e); got != c.want {
			t.Errorf("Covers(%s) = %v, want %v", c.entry, got, c.want)
		}
	}
}
