package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/trust"
)

// wharf verify asks policy as install does: an old-form signature made for
// app, relabelled onto copy (the same files), does not satisfy
// requireSignatures for copy unless the managed layer opts its key in.
func TestVerifyLegacySignatureUnderRequireSignatures(t *testing.T) {
	root := t.TempDir()
	home, managed, mkt := filepath.Join(root, "home"), filepath.Join(root, "managed"), filepath.Join(root, "corp")
	t.Setenv("WHARF_HOME", home)
	t.Setenv("HOME", filepath.Join(root, "userhome"))
	t.Setenv("WHARF_MANAGED_DIR", managed)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	files := map[string]string{
		".claude-plugin/marketplace.json": `{"name": "corp", "owner": {"name": "IT"}, "plugins": [
			{"name": "app", "source": "./plugins/app", "version": "1.0.0"},
			{"name": "copy", "source": "./plugins/copy", "version": "1.0.0"}]}`,
	}
	for _, p := range []string{"app", "copy"} {
		files["plugins/"+p+"/.claude-plugin/plugin.json"] = `{"name": "app", "version": "1.0.0"}`
		files["plugins/"+p+"/commands/run.md"] = "Run.\n"
	}
	for name, body := range files {
		writeFile(t, filepath.Join(mkt, name), body)
	}
	priv, pub, err := trust.GenerateKey(trust.AlgEd25519)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(home, "keys", "corp.pub"), string(pub))
	kr, err := trust.NewKeyring(pub)
	if err != nil {
		t.Fatal(err)
	}
	keyID := kr.IDs()[0]
	tree, err := trust.Digest(filepath.Join(mkt, "plugins", "app"))
	if err != nil {
		t.Fatal(err)
	}
	old, err := trust.Sign(priv, tree.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := trust.AddSignature(filepath.Join(mkt, "plugins", "copy"), old); err != nil {
		t.Fatal(err)
	}
	wharf := func(args ...string) (int, string) {
		var out bytes.Buffer
		code := runInTest(args, &out, &out)
		return code, out.String()
	}
	require := fmt.Sprintf(`"requireSignatures": {"corp": [%q]}`, keyID)
	writeFile(t, filepath.Join(managed, "managed-settings.json"), "{"+require+"}")
	if code, out := wharf("marketplace", "add", mkt); code != 0 {
		t.Fatalf("marketplace add: %d %s", code, out)
	}
	code, out := wharf("verify", "copy@corp")
	if code != 4 || !strings.Contains(out, "valid, trusted, old form") || !strings.Contains(out, "requireSignatures") {
		t.Fatalf("old-form signature under requireSignatures: exit %d\n%s", code, out)
	}
	writeFile(t, filepath.Join(managed, "managed-settings.json"), fmt.Sprintf(`{%s, "legacySignatureKeys": [%q]}`, require, keyID))
	code, out = wharf("verify", "copy@corp")
	if code != 0 || !strings.Contains(out, "old form") || !strings.Contains(out, "OK") {
		t.Fatalf("opted in: exit %d\n%s", code, out)
	}
}
