package api

import (
	"encoding/json"
	"testing"
)

// A marketplace add over the API is matched in the form the manager reads:
// the string forms of a source ("owner/repo", git@host:path) are blocked
// like the object form.
func TestDecideMarketplaceStringSourceBlocked(t *testing.T) {
	d, err := PolicyEngine(t.Context(), []PolicyLayer{{Name: "org", Settings: json.RawMessage(`{"blockedMarketplaces":[{"source":"github","repo":"acme/tools"}]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	md := d.(MarketplaceDecider)
	for _, src := range []string{`"acme/tools"`, `"git@github.com:acme/tools.git"`, `"https://github.com/Acme/Tools#main"`, `{"source":"git","url":"https://github.com:443/acme/tools/"}`} {
		dec, err := md.DecideMarketplace(t.Context(), "tools", json.RawMessage(src), false)
		if err != nil {
			t.Fatal(err)
		}
		if dec.Allowed || len(dec.Reasons) == 0 || dec.Reasons[0].Rule != "blockedMarketplaces" {
			t.Errorf("source %s: %+v, want blocked", src, dec)
		}
	}
	dec, err := md.DecideMarketplace(t.Context(), "other", json.RawMessage(`"acme/other"`), false)
	if err != nil || !dec.Allowed {
		t.Errorf("acme/other: %+v %v, want allowed", dec, err)
	}
}
