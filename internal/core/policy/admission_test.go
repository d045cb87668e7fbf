package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

const (
	d1 = "w1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	d2 = "w1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB="
)

func TestAdmissionsCheck(t *testing.T) {
	id := plugin.ID{Name: "sync", Source: "corp"}
	base := func() *Admissions {
		return &Admissions{Versions: []AdmittedVersion{
			{Plugin: "sync@corp", Version: "1.0.0", Digest: d1, State: StateApproved},
			{Plugin: "sync@corp", Version: "2.4.0", Digest: d2, State: StateHeld,
				Adds: []string{"adds hook PreToolUse(Bash) running scripts/sync.sh", "adds MCP server `sync` (npx -y sync-mcp@latest)"}},
		}}
	}
	cases := []struct {
		name    string
		a       *Admissions
		id      plugin.ID
		version string
		digest  string
		want    string // substring of the error; "" admits
	}{
		{"no admissions", nil, id, "2.4.0", d2, ""},
		{"approved version and digest", base(), id, "1.0.0", d1, ""},
		{"held version names what it adds", base(), id, "2.4.0", d2,
			"sync@corp: 2.4.0 is held for review: adds hook PreToolUse(Bash) running scripts/sync.sh; adds MCP server `sync` (npx -y sync-mcp@latest)"},
		{"approved version with other content", base(), id, "1.0.0", d2, "1.0.0 is not approved"},
		{"version never seen", base(), id, "3.0.0", d1, "3.0.0 is not approved"},
		{"auto admits a plugin the server has not decided", base(), plugin.ID{Name: "other", Source: "corp"}, "1.0.0", d1, ""},
		{"review holds a plugin the server has not decided", func() *Admissions {
			a := base()
			a.MarketplaceModes = map[string]string{"corp": ModeReview}
			return a
		}(), plugin.ID{Name: "other", Source: "corp"}, "1.0.0", d1, "admission mode review"},
		{"open mode admits a held version", func() *Admissions {
			a := base()
			a.PluginModes = map[string]string{"sync@corp": ModeOpen}
			return a
		}(), id, "2.4.0", d2, ""},
		{"a plugin's mode wins over its marketplace's", func() *Admissions {
			a := base()
			a.MarketplaceModes = map[string]string{"corp": ModeOpen}
			a.PluginModes = map[string]string{"sync@corp": ModeReview}
			return a
		}(), id, "2.4.0", d2, "held for review"},
		{"denied names the note", func() *Admissions {
			a := base()
			a.Versions[1].State, a.Versions[1].Note = StateDenied, "phones home"
			return a
		}(), id, "2.4.0", d2, "2.4.0 was denied by an administrator: phones home"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.a.Check(c.id, c.version, c.digest)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var pe *plugin.Error
			if !errors.As(err, &pe) || pe.Type != TypeHeld || pe.Layer != plugin.LayerPolicy || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a %s error containing %q", err, TypeHeld, c.want)
			}
		})
	}
}

// Every server must admit a version: one server's approval does not
// override another's hold.
func TestCheckAllTightens(t *testing.T) {
	id := plugin.ID{Name: "sync", Source: "corp"}
	open := &Admissions{PluginModes: map[string]string{"sync@corp": ModeOpen}}
	held := &Admissions{Versions: []AdmittedVersion{{Plugin: "sync@corp", Version: "2.0.0", Digest: d2, State: StateHeld}}}
	if err := CheckAll([]*Admissions{open, held}, id, "2.0.0", d2); err == nil {
		t.Fatal("an open server admitted what another holds")
	}
	if err := CheckAll([]*Admissions{open}, id, "2.0.0", d2); err != nil {
		t.Fatal(err)
	}
}

func TestParseAdmissionsNamesTheField(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"marketplaceModes":{"corp":"lax"}}`, "marketplaceModes[corp]"},
		{`{"pluginModes":{"nope":"auto"}}`, "pluginModes"},
		{`{"versions":[{"plugin":"a@b","version":"1","digest":"sha:x","state":"approved"}]}`, "versions[0].digest"},
		{`{"versions":[{"plugin":"a@b","version":"1","digest":"w1:x","state":"maybe"}]}`, "versions[0].state"},
		{`{"versions":[{"plugin":"a@b","version":"","digest":"w1:x","state":"held"}]}`, "versions[0].version"},
		{`{"extra":1}`, "unknown field"},
	} {
		if _, err := ParseAdmissions([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one naming %s", c.doc, err, c.want)
		}
	}
	a, err := ParseAdmissions([]byte(`{"marketplaceModes":{"corp":"review"},"versions":[{"plugin":"a@corp","version":"1.0.0","digest":"` + d1 + `","state":"approved"}]}`))
	if err != nil || a.Mode(plugin.ID{Name: "z", Source: "corp"}) != ModeReview || len(a.Versions) != 1 {
		t.Fatalf("ParseAdmissions = %+v, %v", a, err)
	}
}

func FuzzParseAdmissions(f *testing.F) {
	f.Add([]byte(`{"marketplaceModes":{"corp":"review"},"pluginModes":{"a@corp":"open"},"versions":[{"plugin":"a@corp","version":"1.0.0","digest":"` + d1 + `","state":"held","adds":["adds hook"]}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"versions":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := ParseAdmissions(raw)
		if err != nil {
			return
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("parsed admissions do not validate: %v", err)
		}
		for _, v := range a.Versions {
			id, _ := plugin.ParseID(v.Plugin)
			_ = a.Check(id, v.Version, v.Digest)
		}
	})
}
