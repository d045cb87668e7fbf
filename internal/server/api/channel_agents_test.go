package api

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/wharfhq/wharf/internal/core/policy"
)

// TestChannelAgentSettings fetches a channel's managed settings in each
// agent's format: each allows the channel's token-less URL alone where
// the agent can say so, names the file the agent reads, and warns about
// what the agent's format cannot carry.
func TestChannelAgentSettings(t *testing.T) {
	e, _ := newCatalogEnv(t)
	dev := e.tokens[RoleDeveloper]
	url := e.channelURL("approved", "")
	get := func(format string) AgentSettings {
		t.Helper()
		r := e.do("GET", "/v1/channels/approved/"+format+"-managed-settings", dev, nil)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", format, r.status, r.body)
		}
		var as AgentSettings
		r.json(t, &as)
		if as.Format != format || as.File != policy.AgentManagedFiles[format] {
			t.Fatalf("%s: %+v", format, as)
		}
		return as
	}

	cp := get("copilot")
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(cp.Document), &doc); err != nil || !strings.Contains(string(doc["strictKnownMarketplaces"]), url) || doc["extraKnownMarketplaces"] == nil {
		t.Fatalf("copilot document (%v):\n%s", err, cp.Document)
	}

	cx := get("codex")
	var req struct {
		Marketplaces struct {
			Restrict bool                         `toml:"restrict_to_allowed_sources"`
			Allowed  map[string]map[string]string `toml:"allowed_sources"`
		} `toml:"marketplaces"`
	}
	if err := toml.Unmarshal([]byte(cx.Document), &req); err != nil || !req.Marketplaces.Restrict || len(req.Marketplaces.Allowed) != 1 || req.Marketplaces.Allowed["wharf-1"]["url"] != url {
		t.Fatalf("codex document %+v (%v):\n%s", req, err, cx.Document)
	}
	if !strings.Contains(strings.Join(cx.Warnings, "\n"), "extraKnownMarketplaces is not exported") {
		t.Fatalf("codex warnings: %q", cx.Warnings)
	}

	gm := get("gemini")
	var gs policy.GeminiSettings
	if err := json.Unmarshal([]byte(gm.Document), &gs); err != nil || gs.Security == nil || len(gs.Security.AllowedExtensions) != 1 {
		t.Fatalf("gemini document (%v):\n%s", err, gm.Document)
	}
	// No blocklist, so the pattern has no lookahead and Go can run it.
	// Gemini CLI matches it against the source resolved as a local path:
	// the working directory, then the URL with one slash after "http:".
	re := regexp.MustCompile(gs.Security.AllowedExtensions[0])
	resolved := func(u string) string { return "/home/dev/" + strings.Replace(u, "://", ":/", 1) }
	ext := strings.TrimSuffix(url, ".git") + "/gemini/deploy.git"
	if !re.MatchString(resolved(url)) || !re.MatchString(resolved(ext)) || re.MatchString(resolved(e.channelURL("approved", dev))) ||
		re.MatchString(resolved(url+"x")) || re.MatchString(resolved(strings.TrimSuffix(url, ".git")+"/other.git")) {
		t.Fatalf("gemini pattern %s against %s", re, url)
	}

	oc := get("opencode")
	if !strings.Contains(oc.Document, `"$schema"`) || !strings.Contains(strings.Join(oc.Warnings, "\n"), "strictKnownMarketplaces is not exported") {
		t.Fatalf("opencode: %+v", oc)
	}

	if r := e.do("GET", "/v1/channels/nosuch/gemini-managed-settings", dev, nil); r.status != http.StatusNotFound {
		t.Fatalf("unknown channel: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/channels/approved/gemini-managed-settings", "", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("no token: %d %s", r.status, r.body)
	}
}

// TestGeminiExtensionRoute: a channel's Gemini CLI extension repositories
// need the channel's token like the channel itself, serve only plugins
// the channel holds, and never another channel's.
func TestGeminiExtensionRoute(t *testing.T) {
	e, _ := newCatalogEnv(t)
	dev := e.tokens[RoleDeveloper]
	get := func(path, token string) int {
		t.Helper()
		req, err := http.NewRequest("GET", e.hs.URL+path+"/info/refs?service=git-upload-pack", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.SetBasicAuth("wharf", token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := get("/git/approved/gemini/deploy.git", dev); code != http.StatusOK {
		t.Fatalf("with a token: %d", code)
	}
	if code := get("/git/approved/gemini/deploy.git", ""); code != http.StatusUnauthorized {
		t.Fatalf("without a token: %d", code)
	}
	if code := get("/git/approved/gemini/deploy.git", "not-a-token"); code != http.StatusUnauthorized {
		t.Fatalf("with a wrong token: %d", code)
	}
	for _, p := range []string{"/git/approved/gemini/nosuch.git", "/git/nosuch/gemini/deploy.git", "/git/approved/gemini/..%2fapproved.git"} {
		if code := get(p, dev); code != http.StatusNotFound {
			t.Fatalf("%s: %d", p, code)
		}
	}
}

// TestChannelCopilotSettingsTurnRevokedOff: once an administrator revokes
// a plugin the channel holds, the channel's Copilot CLI settings turn it
// off in enabledPlugins, under the channel's name for it and the name the
// revocation gives, and say why; the formats that cannot turn a plugin
// off say so.
func TestChannelCopilotSettingsTurnRevokedOff(t *testing.T) {
	e, _ := newCatalogEnv(t)
	dev := e.tokens[RoleDeveloper]
	get := func(format string) (AgentSettings, map[string]bool) {
		t.Helper()
		r := e.do("GET", "/v1/channels/approved/"+format+"-managed-settings", dev, nil)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", format, r.status, r.body)
		}
		var as AgentSettings
		r.json(t, &as)
		var doc struct {
			EnabledPlugins map[string]bool `json:"enabledPlugins"`
		}
		if format == "copilot" {
			if err := json.Unmarshal([]byte(as.Document), &doc); err != nil {
				t.Fatal(err)
			}
		}
		return as, doc.EnabledPlugins
	}
	before, on := get("copilot")
	if _, ok := on["deploy@approved"]; ok || strings.Contains(strings.Join(before.Warnings, "\n"), "revoked") {
		t.Fatalf("before the revocation: %+v", before)
	}
	res := e.do("POST", "/v1/revocations", e.tokens[RoleAdmin], map[string]string{"plugin": "deploy@corp", "version": "1.2.0", "reason": "leaks tokens"})
	if res.status != http.StatusCreated {
		t.Fatalf("revoke: %d %s", res.status, res.body)
	}
	after, on := get("copilot")
	if v, ok := on["deploy@approved"]; !ok || v {
		t.Fatalf("deploy@approved not turned off: %v\n%s", on, after.Document)
	}
	if v, ok := on["deploy@corp"]; !ok || v {
		t.Fatalf("deploy@corp not turned off: %v\n%s", on, after.Document)
	}
	if w := strings.Join(after.Warnings, "\n"); !strings.Contains(w, "deploy@corp 1.2.0 is revoked by revocation r-") || !strings.Contains(w, "leaks tokens; Copilot CLI cannot disable one version") {
		t.Fatalf("copilot warnings %q", after.Warnings)
	}
	for _, format := range []string{"codex", "gemini", "opencode"} {
		as, _ := get(format)
		if !strings.Contains(strings.Join(as.Warnings, "\n"), "revocations are not exported: ") {
			t.Fatalf("%s warnings %q", format, as.Warnings)
		}
	}
}
