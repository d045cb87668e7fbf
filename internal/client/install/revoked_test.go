package install

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

func TestInstallRefusesARevokedVersionOrDigest(t *testing.T) {
	w := newWorld(t, map[string][]string{"app": {"dep"}, "dep": nil, "other": nil}, "")
	pol := w.in.o.Policy.(*policy.Engine)
	tree, err := trust.Digest(filepath.Join(w.mkt, "plugins", "other"))
	if err != nil {
		t.Fatal(err)
	}
	pol.SetRevocations(policy.Revocations{
		{ID: "rev-1", Plugin: "dep@corp", Version: "1.0.0", Reason: "exfiltrates tokens"},
		{ID: "rev-2", Digest: tree.Digest, Reason: "broken build"},
	})
	for _, tc := range []struct{ id, rev, reason string }{
		{"app@corp", "rev-1", "exfiltrates tokens"}, // through its dependency
		{"other@corp", "rev-2", "broken build"},
	} {
		_, err := w.in.Install(bg, Request{ID: plugin.MustParseID(tc.id)})
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Type != policy.TypeRevoked || pe.Layer != plugin.LayerPolicy ||
			!strings.Contains(err.Error(), tc.rev) || !strings.Contains(err.Error(), tc.reason) {
			t.Fatalf("install %s: err = %v; want %s (policy) naming %s and its reason", tc.id, err, policy.TypeRevoked, tc.rev)
		}
	}
	if reg := w.registry(); len(reg) != 0 {
		t.Fatalf("a refused install registered %v", reg)
	}
	// Lifted: the same install goes through.
	pol.SetRevocations(nil)
	if _, err := w.in.Install(bg, Request{ID: plugin.MustParseID("app@corp")}); err != nil {
		t.Fatal(err)
	}
	if len(w.registry()) != 2 {
		t.Fatalf("registry %v", w.registry())
	}
}
