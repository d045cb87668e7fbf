package api

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/wharfhq/wharf/internal/core/inventory"
)

// TestInventoryClientKinds checks that the client kinds docs/openapi.yaml
// lists for a report (InventoryReport.client.kind) are the ones the server
// accepts: each listed kind is stored and shown back as the holder's
// clientKind (whose listed values the spec check holds the answer to),
// and a kind the spec does not list is refused.
func TestInventoryClientKinds(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join("..", "..", "..", "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, v := range doc.Components.Schemas["InventoryReport"].Value.Properties["client"].Value.Properties["kind"].Value.Enum {
		kinds = append(kinds, v.(string))
	}
	for _, k := range []string{inventory.KindWharf, inventory.KindWharfAgent, inventory.KindClaudeCode, inventory.KindCopilot, inventory.KindCodex, inventory.KindGemini, inventory.KindOpenCode} {
		if !slices.Contains(kinds, k) {
			t.Errorf("InventoryReport.client.kind does not list %q", k)
		}
	}
	e, f := newCatalogEnv(t)
	for i, k := range kinds {
		r := invReport(i+1, invPlugin("deploy@corp", "1.2.0", f.deployW1))
		r.Client.Kind = k
		mustStatus(t, e.report(e.createToken(RoleAgent), r), 200)
	}
	var who struct {
		Machines []PluginHolder `json:"machines"`
	}
	e.do("GET", "/v1/inventory/plugins/corp/deploy", e.tokens[RoleAdmin], nil).json(t, &who)
	var got []string
	for _, h := range who.Machines {
		got = append(got, h.ClientKind)
	}
	slices.Sort(got)
	want := slices.Clone(kinds)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("holders' client kinds %v, want %v", got, want)
	}
	r := invReport(len(kinds) + 1)
	r.Client.Kind = "vim"
	if res := e.report(e.createToken(RoleAgent), r); res.status != 400 {
		t.Fatalf("a kind the spec does not list: %d %s", res.status, res.body)
	}
}
