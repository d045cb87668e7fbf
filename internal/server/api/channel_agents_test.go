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
		if as.Format != format || as.File != agentFormats[format] {
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
