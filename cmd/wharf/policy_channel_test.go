package main

import (
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/api"
	"github.com/wharfhq/wharf/internal/server/catalog"
)

func TestPolicyExportChannel(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	data := t.TempDir()
	st, err := store.OpenBolt(filepath.Join(data, "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mgr := marketplace.NewManager(st, marketplace.Options{Dir: filepath.Join(data, "marketplaces")})
	srv, err := api.New(api.Deps{Store: st, Policy: api.PolicyEngine, RateLimit: -1, Catalog: catalog.New(mgr), ChannelDir: filepath.Join(data, "channels")})
	if err != nil {
		t.Fatal(err)
	}
	admin, _, err := api.EnsureAdminToken(st, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	mkt := localMarketplace(t, t.TempDir(), "corp")
	if _, err := catalog.New(mgr).AddMarketplace(t.Context(), "corp", json.RawMessage(`{"source":"directory","path":"`+mkt+`"}`)); err != nil {
		t.Fatal(err)
	}

	c := newPolicyClient(t, admin)
	code, out, stderr := c.run("--policy-url", hs.URL, "policy", "export", "--format", "claude", "--channel", "approved")
	if code != 0 {
		t.Fatalf("export: exit %d\n%s%s", code, out, stderr)
	}
	var doc struct {
		Strict []struct{ Source, URL string } `json:"strictKnownMarketplaces"`
		Extra  map[string]struct {
			Source struct{ Source, URL string } `json:"source"`
		} `json:"extraKnownMarketplaces"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := hs.URL + "/git/approved.git"
	if len(doc.Strict) != 1 || doc.Strict[0].URL != want || doc.Extra["approved"].Source.URL != want {
		t.Fatalf("exported %s", out)
	}

	code, _, stderr = c.run("--policy-url", hs.URL, "policy", "export", "--channel", "nosuch")
	// The server's 404 for a name the user typed: a usage error (exit 2).
	if code != 2 || !strings.Contains(stderr, "nosuch") {
		t.Fatalf("unknown channel: exit %d %s", code, stderr)
	}
	bad := newPolicyClient(t, "wrong-token")
	code, _, stderr = bad.run("--policy-url", hs.URL, "policy", "export", "--channel", "approved")
	// The server refused the credentials: exit 6, as from every command.
	if code != 6 || !strings.Contains(stderr, "401") || !strings.Contains(stderr, "--token") {
		t.Fatalf("bad token: exit %d %s", code, stderr)
	}
	code, _, stderr = c.run("policy", "export", "--channel", "approved")
	if code != 2 || !strings.Contains(stderr, "--policy-url") {
		t.Fatalf("no server: exit %d %s", code, stderr)
	}
}
