package install

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

// setVersion rewrites app's plugin.json with version and refreshes the
// marketplace.
func (w *world) setVersion(name, version string) {
	w.t.Helper()
	write(w.t, filepath.Join(w.mkt, "plugins", name, ".claude-plugin", "plugin.json"),
		`{"name": "`+name+`", "version": "`+version+`", "dependencies": []}`)
}

func TestUpdateRefusesDowngrade(t *testing.T) {
	w := newWorld(t, map[string][]string{"app": nil, "other": nil}, "")
	id, other := plugin.MustParseID("app@corp"), plugin.MustParseID("other@corp")
	for _, i := range []plugin.ID{id, other} {
		if _, err := w.in.Install(bg, Request{ID: i}); err != nil {
			t.Fatal(err)
		}
	}
	w.setVersion("app", "2.0.0")
	up, err := w.in.Update(bg, []plugin.ID{id}, UpdateOptions{})
	if err != nil || len(up) != 1 || up[0].To != "2.0.0" || up[0].Downgrade {
		t.Fatalf("update to 2.0.0: %+v, %v", up, err)
	}
	// The marketplace points back at the old tree; another plugin moves up
	// in the same run.
	w.setVersion("app", "1.0.0")
	w.setVersion("other", "1.1.0")
	up, err = w.in.Update(bg, []plugin.ID{id, other}, UpdateOptions{})
	if len(up) != 2 || up[0].Changed || !strings.Contains(up[0].Note, "kept: update refused") || !up[1].Changed || up[1].To != "1.1.0" {
		t.Fatalf("a refused downgrade must keep app and still update other: %+v", up)
	}
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Type != TypeDowngrade || pe.Layer != plugin.LayerTrust ||
		!strings.Contains(err.Error(), "1.0.0 is lower than the installed 2.0.0") || !strings.Contains(pe.Hint, "--allow-downgrade") {
		t.Fatalf("downgrade: %v", err)
	}
	if r := w.registry()["app@corp"]; r.Version != "2.0.0" {
		t.Fatalf("a refused downgrade changed the registry: %s", r.Version)
	}
	up, err = w.in.Update(bg, []plugin.ID{id}, UpdateOptions{AllowDowngrade: true})
	if err != nil || up[0].To != "1.0.0" || !up[0].Downgrade || !up[0].Changed {
		t.Fatalf("allowed downgrade: %+v, %v", up, err)
	}
	if r := w.registry()["app@corp"]; r.Version != "1.0.0" {
		t.Fatalf("allowed downgrade not recorded: %s", r.Version)
	}
	// A version that cannot be ordered is refused the same way.
	w.setVersion("app", "nightly")
	_, err = w.in.Update(bg, []plugin.ID{id}, UpdateOptions{})
	if !errors.As(err, &pe) || pe.Type != TypeDowngrade || !strings.Contains(err.Error(), "cannot tell whether nightly is newer than the installed 1.0.0") {
		t.Fatalf("unordered version: %v", err)
	}
	// Upwards needs nothing.
	w.setVersion("app", "1.0.1")
	if up, err := w.in.Update(bg, []plugin.ID{id}, UpdateOptions{}); err != nil || up[0].To != "1.0.1" {
		t.Fatalf("update to 1.0.1: %+v, %v", up, err)
	}
	// Between two versions that are not semantic (commit-derived versions of
	// versionless plugins) there is no order: the update goes through.
	w.setVersion("app", "c0bb8d2a85a6")
	if _, err := w.in.Update(bg, []plugin.ID{id}, UpdateOptions{AllowDowngrade: true}); err != nil {
		t.Fatalf("allowed move to a commit version: %v", err)
	}
	w.setVersion("app", "d1cc9e3b96b7")
	if up, err := w.in.Update(bg, []plugin.ID{id}, UpdateOptions{}); err != nil || up[0].To != "d1cc9e3b96b7" || up[0].Downgrade {
		t.Fatalf("commit to commit: %+v, %v", up, err)
	}
}

// signingKey makes a key pair and trusts its public half in w's installer.
func (w *world) signingKey() []byte {
	w.t.Helper()
	priv, pub, err := trust.GenerateKey(trust.AlgEd25519)
	if err != nil {
		w.t.Fatal(err)
	}
	kr, err := trust.NewKeyring(pub)
	if err != nil {
		w.t.Fatal(err)
	}
	w.in.o.Keys = kr
	return priv
}

func TestInstallRefusesRelabelledSignature(t *testing.T) {
	w := newWorld(t, map[string][]string{"app": nil, "copy": nil}, "")
	priv := w.signingKey()
	appDir := filepath.Join(w.mkt, "plugins", "app")
	copyDir := filepath.Join(w.mkt, "plugins", "copy")
	// copy publishes app's very files: the same content digest.
	write(t, filepath.Join(copyDir, ".claude-plugin", "plugin.json"), `{"name": "app", "version": "1.0.0", "dependencies": []}`)
	write(t, filepath.Join(copyDir, "commands", "run.md"), "Run app.\n")
	tree, err := trust.Digest(appDir)
	if err != nil {
		t.Fatal(err)
	}
	if ct, _ := trust.Digest(copyDir); ct.Digest != tree.Digest {
		t.Fatalf("the copy's digest differs: %s vs %s", ct.Digest, tree.Digest)
	}
	sig, err := trust.SignStatement(priv, trust.NewStatement(plugin.MustParseID("app@corp"), "1.0.0", tree.Digest))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{appDir, copyDir} {
		if err := trust.AddSignature(d, sig); err != nil {
			t.Fatal(err)
		}
	}
	res, err := w.in.Install(bg, Request{ID: plugin.MustParseID("app@corp")})
	if err != nil || len(res.Installed) != 1 || len(res.Installed[0].Signatures) != 1 || len(res.Warnings) != 0 {
		t.Fatalf("genuine: %+v, %v", res, err)
	}
	_, err = w.in.Install(bg, Request{ID: plugin.MustParseID("copy@corp")})
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Layer != plugin.LayerTrust || pe.Type != plugin.TypeTrustRejected ||
		!strings.Contains(err.Error(), "copy@corp 1.0.0") || !strings.Contains(err.Error(), "another plugin name, marketplace or version") {
		t.Fatalf("relabelled: %v", err)
	}
	if _, ok := w.registry()["copy@corp"]; ok {
		t.Fatal("the relabelled plugin was registered")
	}
}

func TestInstallAcceptsLegacySignatureWithWarning(t *testing.T) {
	w := newWorld(t, map[string][]string{"app": nil}, "")
	priv := w.signingKey()
	appDir := filepath.Join(w.mkt, "plugins", "app")
	tree, err := trust.Digest(appDir)
	if err != nil {
		t.Fatal(err)
	}
	old, err := trust.Sign(priv, tree.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := trust.AddSignature(appDir, old); err != nil {
		t.Fatal(err)
	}
	res, err := w.in.Install(bg, Request{ID: plugin.MustParseID("app@corp")})
	if err != nil || len(res.Installed[0].Signatures) != 1 {
		t.Fatalf("legacy signature: %+v, %v", res, err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "old form") || !strings.Contains(res.Warnings[0], "app@corp") {
		t.Fatalf("warnings: %q", res.Warnings)
	}
}

// Install follows Update's rule: replacing an installed plugin with a lower
// version (or one that cannot be ordered against it) is refused unless
// AllowDowngrade, and the registry keeps the installed version.
func TestInstallRefusesDowngrade(t *testing.T) {
	w := newWorld(t, map[string][]string{"app": nil}, "")
	id := plugin.MustParseID("app@corp")
	w.setVersion("app", "2.0.0")
	if _, err := w.in.Install(bg, Request{ID: id}); err != nil {
		t.Fatal(err)
	}
	w.setVersion("app", "1.0.0")
	res, err := w.in.Install(bg, Request{ID: id})
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Type != TypeDowngrade || pe.Layer != plugin.LayerTrust ||
		!strings.Contains(err.Error(), "install refused: 1.0.0 is lower than the installed 2.0.0") ||
		!strings.Contains(pe.Hint, "wharf install app@corp --allow-downgrade") {
		t.Fatalf("install of a lower version: %+v, %v; want a downgrade refusal", res, err)
	}
	if r := w.registry()["app@corp"]; r.Version != "2.0.0" {
		t.Fatalf("a refused downgrade changed the registry: %s", r.Version)
	}
	w.setVersion("app", "nightly")
	if _, err := w.in.Install(bg, Request{ID: id}); !errors.As(err, &pe) || pe.Type != TypeDowngrade ||
		!strings.Contains(err.Error(), "cannot tell whether nightly is newer than the installed 2.0.0") {
		t.Fatalf("install of an unordered version: %v", err)
	}
	w.setVersion("app", "1.0.0")
	res, err = w.in.Install(bg, Request{ID: id, AllowDowngrade: true})
	if err != nil || len(res.Installed) != 1 || res.Installed[0].Version != "1.0.0" || !res.Installed[0].Downgrade || res.Installed[0].From != "2.0.0" {
		t.Fatalf("allowed downgrade: %+v, %v", res, err)
	}
	if r := w.registry()["app@corp"]; r.Version != "1.0.0" {
		t.Fatalf("allowed downgrade not recorded: %s", r.Version)
	}
	// Upwards needs nothing.
	w.setVersion("app", "1.1.0")
	if res, err := w.in.Install(bg, Request{ID: id}); err != nil || res.Installed[0].Downgrade || res.Installed[0].From != "1.0.0" {
		t.Fatalf("install of a higher version: %+v, %v", res, err)
	}
}
