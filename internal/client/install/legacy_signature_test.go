package install

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/testutil/testworld"
	"github.com/wharfhq/wharf/plugin"
)

// legacyWorld is a marketplace "corp" whose plugin "copy" publishes the very
// files of "app", both carrying an old-form signature (over the bare digest)
// made for app, by a key trusted here. managed is the system managed layer,
// extra (when not "") the layer WHARF_MANAGED_DIR adds; both may name the
// key as %[1]s (its id) and %[2]s (its sha256 fingerprint). user (when not
// "") is the user's settings.json.
func legacyWorld(t *testing.T, managed, extra, user string) *Installer {
	t.Helper()
	priv, pub, err := trust.GenerateKey(trust.AlgEd25519)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := trust.NewKeyring(pub)
	if err != nil {
		t.Fatal(err)
	}
	keyID := kr.IDs()[0]
	fp, err := trust.KeyFingerprint(kr[keyID])
	if err != nil {
		t.Fatal(err)
	}
	tw := testworld.New(t)
	mkt := t.TempDir()
	tree := map[string]string{
		".claude-plugin/plugin.json": testworld.Manifest("app", "1.0.0"),
		"commands/run.md":            "Run app.\n",
	}
	testworld.Marketplace(t, mkt, "corp", map[string]map[string]string{"app": tree, "copy": tree})
	appDir := filepath.Join(mkt, "plugins", "app")
	d, err := trust.Digest(appDir)
	if err != nil {
		t.Fatal(err)
	}
	old, err := trust.Sign(priv, d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{appDir, filepath.Join(mkt, "plugins", "copy")} {
		if err := trust.AddSignature(dir, old); err != nil {
			t.Fatal(err)
		}
	}
	if c, _ := trust.Digest(filepath.Join(mkt, "plugins", "copy")); c.Digest != d.Digest {
		t.Fatalf("the copy's digest differs: %s vs %s", c.Digest, d.Digest)
	}
	fill := func(s string) string {
		return strings.NewReplacer("%[1]s", keyID, "%[2]s", fp).Replace(s)
	}
	write(t, filepath.Join(tw.Managed, "managed-settings.json"), fill(managed))
	if user != "" {
		write(t, layout.New(tw.Home).Settings(), fill(user))
	}
	var extraDir string
	if extra != "" {
		extraDir = filepath.Join(t.TempDir(), "user-managed")
		write(t, filepath.Join(extraDir, "managed-settings.json"), fill(extra))
	}
	mgr := marketplace.NewManager(tw.Store, marketplace.Options{Dir: layout.New(tw.Home).Marketplaces(), Getenv: func(string) string { return "" }})
	pol, err := policy.Open(policy.Sources{ManagedDir: tw.Managed, ExtraManagedDir: extraDir})
	if err != nil {
		t.Fatal(err)
	}
	in, err := New(Options{Marketplaces: mgr, Cache: tw.Cache, Policy: pol, Keys: kr,
		Settings: settings.Paths{Home: tw.Home, ManagedDir: tw.Managed}})
	if err != nil {
		t.Fatal(err)
	}
	addMarketplaceDir(t, mgr, mkt)
	return in
}

// An old-form signature binds only the content: under requireSignatures it
// would let app's signature, relabelled, pass for copy. It satisfies a
// layer's requireSignatures only when that layer names the key in
// legacySignatureKeys.
func TestLegacySignatureSatisfiesPolicyOnlyWhenOptedIn(t *testing.T) {
	const require = `"requireSignatures": {"corp": ["%[1]s"]}`
	for _, tc := range []struct {
		name, managed, extra, user string
		installs                   bool
	}{
		{name: "no opt-in", managed: `{` + require + `}`},
		{name: "opted in by key id", managed: `{` + require + `, "legacySignatureKeys": ["%[1]s"]}`, installs: true},
		{name: "opted in by fingerprint", managed: `{` + require + `, "legacySignatureKeys": ["%[2]s"]}`, installs: true},
		{name: "another key opted in", managed: `{` + require + `, "legacySignatureKeys": ["0123456789abcdef"]}`},
		{name: "invalid opt-in fails closed", managed: `{` + require + `, "legacySignatureKeys": "%[1]s"}`},
		// A lower layer's opt-in does not loosen a higher layer's requirement.
		{name: "opted in by a lower layer only", managed: `{` + require + `}`, extra: `{"legacySignatureKeys": ["%[1]s"]}`},
		{name: "opted in by a lower layer requiring it too", managed: `{` + require + `}`, extra: `{` + require + `, "legacySignatureKeys": ["%[1]s"]}`},
		// User settings are no policy layer: they opt nothing in.
		{name: "opted in by the user's settings", managed: `{` + require + `}`, user: `{"legacySignatureKeys": ["%[1]s"]}`},
		{name: "opted in by the higher layer, required by both", managed: `{` + require + `, "legacySignatureKeys": ["%[1]s"]}`, extra: `{` + require + `}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := legacyWorld(t, tc.managed, tc.extra, tc.user)
			for _, name := range []string{"copy", "app"} {
				id := plugin.ID{Name: name, Source: "corp"}
				res, err := in.Install(bg, Request{ID: id})
				if tc.installs {
					if err != nil || len(res.Installed) != 1 || len(res.Installed[0].Signatures) != 1 {
						t.Fatalf("%s: %+v, %v", id, res, err)
					}
					if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "old form") {
						t.Fatalf("%s: warnings %q", id, res.Warnings)
					}
					continue
				}
				var pe *plugin.Error
				if !errors.As(err, &pe) || pe.Layer != plugin.LayerPolicy || !strings.Contains(err.Error(), "requireSignatures") {
					t.Fatalf("%s installed with only an old-form signature: %+v, %v", id, res, err)
				}
				recs, err := in.o.Cache.List()
				if err != nil {
					t.Fatal(err)
				}
				if len(recs) != 0 {
					t.Fatalf("%s: registered %+v", id, recs)
				}
			}
		})
	}
}
