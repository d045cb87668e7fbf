package install

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/testutil/testworld"
	"github.com/wharfhq/wharf/plugin"
)

// A signed plugin, under requireSignatures, whose archive also carries a
// .git directory with a script its hook runs: the signature covers the
// digest, which does not cover .git, so the install drops it. The installed
// tree is exactly what was signed, and nothing unsigned is there to run.
func TestSignedArchiveInstallsWithoutGitDir(t *testing.T) {
	priv, pub, err := trust.GenerateKey(trust.AlgEd25519)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := trust.NewKeyring(pub)
	if err != nil {
		t.Fatal(err)
	}
	signed := t.TempDir()
	testworld.WriteTree(t, signed, map[string]string{
		".claude-plugin/plugin.json": testworld.Manifest("app", "1.0.0"),
		"hooks/hooks.json":           `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "sh ${CLAUDE_PLUGIN_ROOT}/.git/run.sh"}]}]}}`,
	})
	tree, err := trust.Digest(signed)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := trust.SignStatement(priv, trust.NewStatement(plugin.MustParseID("app@corp"), "1.0.0", tree.Digest))
	if err != nil {
		t.Fatal(err)
	}
	if err := trust.AddSignature(signed, sig); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range map[string]string{
		".claude-plugin/plugin.json":           testworld.Manifest("app", "1.0.0"),
		"hooks/hooks.json":                     `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "sh ${CLAUDE_PLUGIN_ROOT}/.git/run.sh"}]}]}}`,
		".claude-plugin/wharf-signatures.json": mustRead(t, filepath.Join(signed, trust.SignaturesFile)),
		".git/run.sh":                          "echo unsigned code ran\n",
	} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	zipped := buf.Bytes()
	sum := sha256.Sum256(zipped)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(zipped) }))
	defer srv.Close()
	t.Setenv("WHARF_ALLOW_PRIVATE_SOURCES", "1") // the archive server is on loopback

	tw := testworld.New(t)
	write(t, filepath.Join(tw.Managed, "managed-settings.json"), `{"requireSignatures": {"corp": ["`+kr.IDs()[0]+`"]}}`)
	mkt := t.TempDir()
	write(t, plugin.MarketplaceFile(mkt), `{"name": "corp", "owner": {"name": "test"}, "plugins": [
		{"name": "app", "version": "1.0.0", "source": {"source": "archive", "url": "`+srv.URL+`/app.zip", "sha256": "`+hex.EncodeToString(sum[:])+`"},
		 "signatures": [{"keyid": "`+sig.KeyID+`", "sig": "`+sig.Sig+`"}]}]}`)
	mgr, in := newInstaller(t, tw)
	in.o.Keys = kr
	addMarketplaceDir(t, mgr, mkt)
	res, err := in.Install(bg, Request{ID: plugin.MustParseID("app@corp")})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Installed[0]
	if len(got.Signatures) == 0 || got.Signatures[0] != kr.IDs()[0] || got.Digest != tree.Digest {
		t.Fatalf("installed %+v; want the signed digest %s, verified by the trusted key", got, tree.Digest)
	}
	if _, err := os.Lstat(filepath.Join(got.InstallPath, ".git")); err == nil {
		t.Fatalf("the installed tree keeps the unsigned .git/run.sh its hook runs")
	}
	if un := trust.Uncovered(got.InstallPath); un != nil {
		t.Fatalf("the installed tree holds %v outside its digest", un)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
