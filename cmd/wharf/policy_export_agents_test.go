package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/api"
	"github.com/wharfhq/wharf/internal/server/catalog"
)

// wharf policy export --format copilot|codex|gemini|opencode writes the
// layers of a managed directory as the agent's managed file and warns
// about what the format cannot carry.
func TestPolicyExportAgentFormats(t *testing.T) {
	managed := t.TempDir()
	writeFile(t, filepath.Join(managed, "managed-settings.json"), `{
		"strictKnownMarketplaces": [{"source": "git", "url": "https://wharf.example.com/git/approved.git"}],
		"blockedMarketplaces": [{"source": "github", "repo": "evil/plugins"}],
		"enabledPlugins": {"deploy@approved": true}}`)
	c := newPolicyClient(t, "")
	c.env = append(c.env, "WHARF_MANAGED_DIR="+managed)

	code, out, stderr := c.run("policy", "export", "--format", "copilot")
	if code != 0 || !strings.Contains(out, `"strictKnownMarketplaces"`) || !strings.Contains(out, `"deploy@approved": true`) || strings.Contains(out, "blockedMarketplaces") {
		t.Fatalf("copilot: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "blockedMarketplaces is not exported") {
		t.Fatalf("copilot export does not warn about the blocklist: %s", stderr)
	}

	file := filepath.Join(t.TempDir(), "requirements.toml")
	code, out, stderr = c.run("policy", "export", "--format", "codex", "-o", file)
	if code != 0 || !strings.Contains(out, "/etc/codex/requirements.toml") {
		t.Fatalf("codex: exit %d\n%s%s", code, out, stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Marketplaces struct {
			Restrict bool                         `toml:"restrict_to_allowed_sources"`
			Allowed  map[string]map[string]string `toml:"allowed_sources"`
		} `toml:"marketplaces"`
	}
	if err := toml.Unmarshal(b, &req); err != nil || !req.Marketplaces.Restrict || len(req.Marketplaces.Allowed) != 1 ||
		req.Marketplaces.Allowed["wharf-1"]["url"] != "https://wharf.example.com/git/approved.git" {
		t.Fatalf("requirements.toml %+v (%v):\n%s", req, err, b)
	}
	if !strings.Contains(stderr, "enabledPlugins is not exported") {
		t.Fatalf("codex export does not warn about enabledPlugins: %s", stderr)
	}

	code, out, stderr = c.run("policy", "export", "--format", "gemini")
	if code != 0 || !strings.Contains(out, `"allowedExtensions"`) || !strings.Contains(out, `approved\\.git`) {
		t.Fatalf("gemini: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "enabledPlugins forces deploy@approved on: not exported") {
		t.Fatalf("gemini export does not warn about enabledPlugins: %s", stderr)
	}
	code, out, stderr = c.run("policy", "export", "--format", "opencode", "--json")
	var oc struct {
		Format, File, Document string
		Warnings               []string
	}
	if err := json.Unmarshal([]byte(out), &oc); code != 0 || err != nil || oc.File != "/etc/opencode/opencode.json" || !strings.Contains(strings.Join(oc.Warnings, "\n"), "strictKnownMarketplaces is not exported") {
		t.Fatalf("opencode: exit %d (%v)\n%s%s", code, err, out, stderr)
	}
	code, _, stderr = c.run("policy", "export", "--format", "cursor")
	if code != 2 || !strings.Contains(stderr, "gemini or opencode") {
		t.Fatalf("unknown format: exit %d %s", code, stderr)
	}
}

// TestPolicyExportAgentChannel fetches a channel's managed settings in
// each agent's format from a real server: the document allows the
// channel's URL, and -o writes it.
func TestPolicyExportAgentChannel(t *testing.T) {
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
	want := hs.URL + "/git/approved.git"
	for format, check := range map[string]string{
		"copilot": `"url": "` + want + `"`,
		"codex":   "url = '" + want + "'",
		// Gemini CLI folds http:// into http:/ (docs/agents.md): the
		// pattern names the channel's host and path after it.
		"gemini":   `http:/` + strings.ReplaceAll(regexp.QuoteMeta(strings.TrimPrefix(want, "http://")), `\`, `\\`),
		"opencode": `"$schema"`,
	} {
		file := filepath.Join(t.TempDir(), "out")
		code, out, stderr := c.run("--policy-url", hs.URL, "policy", "export", "--format", format, "--channel", "approved", "-o", file)
		if code != 0 || !strings.Contains(out, "install it as") {
			t.Fatalf("%s: exit %d\n%s%s", format, code, out, stderr)
		}
		b, err := os.ReadFile(file)
		if err != nil || !strings.Contains(string(b), check) {
			t.Fatalf("%s: wrote (%v)\n%s\nwant %s", format, err, b, check)
		}
	}
	code, _, stderr := c.run("--policy-url", hs.URL, "policy", "export", "--format", "gemini", "--channel", "nosuch")
	if code != 2 || !strings.Contains(stderr, "nosuch") {
		t.Fatalf("unknown channel: exit %d %s", code, stderr)
	}
}

// TestClientAndChannelAgentExportsAgree: the server's per-channel export
// of each agent and `wharf policy export --format <agent>` run on a client
// whose policy is that channel's Claude Code settings, with the server's
// revocations pulled in its bundle, write the same document with the same
// warnings: one compiler, so a revoked plugin is off in both.
func TestClientAndChannelAgentExportsAgree(t *testing.T) {
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
	mk := t.TempDir()
	if _, err := catalog.New(mgr).AddMarketplace(t.Context(), "corp", json.RawMessage(`{"source":"directory","path":"`+localMarketplace(t, mk, "corp")+`"}`)); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("POST", hs.URL+"/v1/revocations", strings.NewReader(`{"plugin": "tool@corp", "version": "1.0.0", "reason": "leaks tokens"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("revoke: %s", res.Status)
	}

	c := newPolicyClient(t, admin)
	managed := t.TempDir()
	if code, out, stderr := c.run("--policy-url", hs.URL, "policy", "export", "--format", "claude", "--channel", "approved", "-o", filepath.Join(managed, "managed-settings.json")); code != 0 {
		t.Fatalf("claude channel settings: exit %d\n%s%s", code, out, stderr)
	}
	local := newPolicyClient(t, admin)
	local.env = append(local.env, "WHARF_MANAGED_DIR="+managed)
	export := func(c *policyClient, args ...string) policy.AgentExport {
		t.Helper()
		code, out, stderr := c.run(append([]string{"--policy-url", hs.URL, "--json", "policy", "export"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, stderr)
		}
		var x policy.AgentExport
		if err := json.Unmarshal([]byte(out), &x); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return x
	}
	for format := range policy.AgentManagedFiles {
		served := export(c, "--format", format, "--channel", "approved")
		compiled := export(local, "--format", format)
		if served.Document != compiled.Document {
			t.Errorf("%s documents differ:\nserver\n%s\nclient\n%s", format, served.Document, compiled.Document)
		}
		if strings.Join(served.Warnings, "\n") != strings.Join(compiled.Warnings, "\n") {
			t.Errorf("%s warnings differ:\nserver %q\nclient %q", format, served.Warnings, compiled.Warnings)
		}
		if format == "copilot" && (!strings.Contains(served.Document, `"tool@approved": false`) || !strings.Contains(served.Document, `"tool@corp": false`)) {
			t.Errorf("the revoked plugin is not off in the copilot export:\n%s", served.Document)
		}
	}
}
