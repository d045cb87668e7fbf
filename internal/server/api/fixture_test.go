package api

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/server/catalog"
	"github.com/wharfhq/wharf/plugin"
)

// fixture is a directory marketplace written in a temp dir: deploy depends
// on lint; deploy publishes its w1 digest and a signature by a trusted key;
// broken depends on a plugin nobody lists.
type fixture struct {
	root     string
	keyring  trust.Keyring
	privPEM  []byte
	deployW1 string
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{root: filepath.Join(t.TempDir(), "corp-marketplace")}
	p := func(rel, content string) { writeFile(t, filepath.Join(f.root, rel), content) }
	p("plugins/deploy/.claude-plugin/plugin.json", `{"name": "deploy", "version": "1.2.0", "description": "Deploy services", "dependencies": ["lint"]}`)
	p("plugins/deploy/commands/ship.md", "---\ndescription: ship it\n---\nShip the service.\n")
	p("plugins/deploy/skills/rollback/SKILL.md", "---\nname: rollback\ndescription: roll back\n---\nRoll back.\n")
	p("plugins/lint/.claude-plugin/plugin.json", `{"name": "lint", "version": "0.3.0", "description": "Lint code"}`)
	p("plugins/lint/commands/lint.md", "Lint the code.\n")
	p("plugins/risky/.claude-plugin/plugin.json", `{"name": "risky", "version": "9.9.9", "description": "Runs anything"}`)
	p("plugins/risky/commands/run.md", "Run anything.\n")
	p("plugins/broken/.claude-plugin/plugin.json", `{"name": "broken", "version": "0.0.1", "dependencies": ["ghost"]}`)

	tree, err := trust.Digest(filepath.Join(f.root, "plugins/deploy"))
	if err != nil {
		t.Fatal(err)
	}
	f.deployW1 = tree.Digest
	priv, pub, err := trust.GenerateKey(trust.AlgECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	f.privPEM = priv
	if f.keyring, err = trust.NewKeyring(pub); err != nil {
		t.Fatal(err)
	}
	sig, err := trust.SignStatement(priv, trust.NewStatement(plugin.ID{Name: "deploy", Source: "corp"}, "1.2.0", f.deployW1))
	if err != nil {
		t.Fatal(err)
	}
	mkt := map[string]any{
		"name":  "corp",
		"owner": map[string]string{"name": "Corp IT"},
		"plugins": []any{
			map[string]any{"name": "deploy", "source": "./plugins/deploy", "category": "ops", "tags": []string{"release"},
				"integrity": f.deployW1, "signatures": []any{map[string]string{"keyid": sig.KeyID, "sig": sig.Sig}}},
			map[string]any{"name": "lint", "source": "./plugins/lint", "category": "quality"},
			map[string]any{"name": "risky", "source": "./plugins/risky", "category": "ops"},
			map[string]any{"name": "broken", "source": "./plugins/broken", "category": "quality"},
		},
	}
	raw, err := json.MarshalIndent(mkt, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p(".claude-plugin/marketplace.json", string(raw))
	return f
}

// withCatalog wires the real marketplace manager, over the server's own
// store, and the real trust verifier with the fixture's key.
func withCatalog(f *fixture, dataDir string) envOption {
	return func(d *Deps) {
		mgr := marketplace.NewManager(d.Store, marketplace.Options{Dir: filepath.Join(dataDir, "marketplaces")})
		d.Catalog = catalog.New(mgr)
		d.Verifier = TrustVerifier{Keyring: f.keyring}
		d.ChannelDir = filepath.Join(dataDir, "channels")
	}
}

// newCatalogEnv is an env with the fixture marketplace added as "corp".
func newCatalogEnv(t testing.TB, opts ...envOption) (*env, *fixture) {
	t.Helper()
	f := newFixture(t)
	dataDir := t.TempDir()
	e := newEnv(t, append([]envOption{withCatalog(f, dataDir)}, opts...)...)
	res := e.do("POST", "/v1/marketplaces", e.tokens[RoleAdmin], map[string]any{
		"name": "corp", "source": map[string]string{"source": "directory", "path": f.root}})
	if res.status != 201 {
		t.Fatalf("add marketplace: %d %s", res.status, res.body)
	}
	_ = context.Background
	return e, f
}
