package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wharfhq/wharf/internal/server/api"
	"github.com/wharfhq/wharf/internal/testutil/testapi"
)

// policyAPI is a real wharf API server on 127.0.0.1 over a real bbolt
// store in the test's temp dir, counting bundle requests.
type policyAPI struct {
	t       *testing.T
	srv     *testapi.Server
	hs      *httptest.Server
	admin   string
	agent   string
	bundles atomic.Int64
	key     api.BundleKey
}

func newPolicyAPI(t *testing.T) *policyAPI {
	t.Helper()
	return newPolicyAPIWith(t, nil)
}

// newPolicyAPIWith is newPolicyAPI with the server's Deps changed by
// configure (testapi.NewWith).
func newPolicyAPIWith(t *testing.T, configure func(*api.Deps)) *policyAPI {
	t.Helper()
	p := &policyAPI{t: t}
	p.srv = testapi.NewWith(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/policy/bundle" {
				p.bundles.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	}, configure)
	p.hs, p.admin = p.srv.HS, p.srv.Admin
	var tok struct {
		Token string `json:"token"`
	}
	p.call("POST", "/v1/tokens", "", map[string]string{"role": "agent"}, http.StatusCreated, &tok)
	p.agent = tok.Token
	p.call("GET", "/v1/policy/bundle/key", "", nil, http.StatusOK, &p.key)
	return p
}

// call sends body to path as the admin, with precondition ("Header: value")
// when not empty, and decodes the answer of status want into out.
func (p *policyAPI) call(method, path, precondition string, body any, want int, out any) {
	p.t.Helper()
	h := http.Header{}
	if k, v, ok := strings.Cut(precondition, ": "); ok {
		h.Set(k, v)
	}
	p.srv.Do(method, path, h, body, want, out)
}

// setLayer writes layer name with settings at rank 10; version is the
// layer's current version (0: create it).
func (p *policyAPI) setLayer(name string, version int, settings string) {
	p.t.Helper()
	p.srv.PutLayer(name, version, map[string]any{"rank": 10, "settings": json.RawMessage(settings)})
}

// policyClient runs the wharf binary against one home.
type policyClient struct {
	t    *testing.T
	home string
	env  []string
}

func newPolicyClient(t *testing.T, token string) *policyClient {
	home := t.TempDir()
	return &policyClient{t: t, home: home, env: append(os.Environ(),
		"WHARF_HOME="+home, "HOME="+filepath.Join(home, "userhome"),
		"WHARF_MANAGED_DIR="+filepath.Join(home, "no-managed"),
		"WHARF_TOKEN="+token, "WHARF_POLICY_URL=", "WHARF_POLICY_KEY=", "WHARF_INVENTORY_INTERVAL=off")}
}

func (c *policyClient) run(args ...string) (int, string, string) {
	c.t.Helper()
	cmd := exec.Command(wharfBinary(c.t), args...)
	cmd.Env = c.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func (c *policyClient) pull(url string) pullResult {
	c.t.Helper()
	code, out, stderr := c.run("--policy-url", url, "policy", "pull", "--json")
	if code != 0 {
		c.t.Fatalf("policy pull: exit %d\n%s%s", code, out, stderr)
	}
	var r pullResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		c.t.Fatalf("policy pull --json: %v\n%s", err, out)
	}
	return r
}

func localMarketplace(t *testing.T, dir, name string) string {
	t.Helper()
	writeFile(t, filepath.Join(dir, name, ".claude-plugin", "marketplace.json"),
		`{"name": "`+name+`", "owner": {"name": "x"}, "plugins": [{"name": "tool", "source": "./plugins/tool"}]}`)
	writeFile(t, filepath.Join(dir, name, "plugins", "tool", ".claude-plugin", "plugin.json"), `{"name": "tool", "version": "1.0.0"}`)
	writeFile(t, filepath.Join(dir, name, "plugins", "tool", "commands", "t.md"), "t\n")
	return filepath.Join(dir, name)
}

func TestServerPolicyBlocksThenAllowsThenHoldsOffline(t *testing.T) {
	srv := newPolicyAPI(t)
	mk := t.TempDir()
	corp := localMarketplace(t, mk, "corp")
	other := localMarketplace(t, mk, "other")
	c := newPolicyClient(t, srv.agent)
	url := srv.hs.URL

	// An admin blocks corp: the CLI refuses to add it, naming the layer.
	srv.setLayer("org", 0, `{"blockedMarketplaces":[{"source":"pathPattern","pathPattern":".*/corp$"}]}`)
	code, out, stderr := c.run("--policy-url", url, "marketplace", "add", corp)
	if code != 3 || !strings.Contains(stderr, "org") || !strings.Contains(stderr, "blockedMarketplaces") {
		t.Fatalf("blocked add: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "first use") || !strings.Contains(stderr, srv.key.KeyID) {
		t.Fatalf("the first pull must name the key it trusts (%s): %s", srv.key.KeyID, stderr)
	}
	if code, out, _ := c.run("marketplace", "list", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("nothing may be added: %s", out)
	}

	// Unchanged policy: a 304, the cached bundle untouched.
	cached := filepath.Join(c.home, "policy", strings.ReplaceAll(strings.TrimPrefix(url, "http://"), ":", "_"), "bundle.tar.gz")
	before, err := os.ReadFile(cached)
	if err != nil {
		t.Fatal(err)
	}
	n := srv.bundles.Load()
	r := c.pull(url)
	if r.Status != 304 || r.From != "cache" || r.KeySource != "stored" || srv.bundles.Load() != n+1 {
		t.Fatalf("unchanged policy: %+v (bundle requests %d -> %d)", r, n, srv.bundles.Load())
	}
	if after, _ := os.ReadFile(cached); !bytes.Equal(before, after) {
		t.Fatal("a 304 rewrote the cached bundle")
	}
	firstETag := r.ETag

	// The admin unblocks corp: the next command gets the new bundle and is allowed.
	srv.setLayer("org", 1, `{}`)
	code, out, stderr = c.run("--policy-url", url, "marketplace", "add", corp)
	if code != 0 {
		t.Fatalf("unblocked add: exit %d\n%s%s", code, out, stderr)
	}
	r = c.pull(url)
	if r.ETag == firstETag || r.Status != 304 || len(r.Layers) != 1 || r.Layers[0].Version != 2 {
		t.Fatalf("after the unblock: %+v (first ETag %s)", r, firstETag)
	}

	// Now other is blocked; the server goes away; the cache still enforces it.
	srv.setLayer("org", 2, `{"blockedMarketplaces":[{"source":"pathPattern","pathPattern":".*/other$"}]}`)
	if r = c.pull(url); r.Status != 200 || r.From != "network" {
		t.Fatalf("pull after the block: %+v", r)
	}
	srv.hs.Close()
	code, out, stderr = c.run("--policy-url", url, "marketplace", "add", other)
	if code != 3 || !strings.Contains(stderr, "org") || !strings.Contains(stderr, "unreachable") || !strings.Contains(stderr, "last confirmed") {
		t.Fatalf("offline: exit %d\n%s%s", code, out, stderr)
	}
	// Pulling offline fails (exit 1, the server is unreachable) and says
	// what stays in force: the cached bundle.
	code, out, stderr = c.run("--policy-url", url, "policy", "pull", "--json")
	r = pullResult{}
	if code != 1 || json.Unmarshal([]byte(out), &r) != nil || !strings.Contains(stderr, "unreachable") {
		t.Fatalf("offline pull: exit %d\n%s%s", code, out, stderr)
	}
	if r.From != "cache" || r.Status != 0 || len(r.Warnings) != 1 {
		t.Fatalf("offline pull: %+v", r)
	}
	// Offline, what the cached policy allows still works.
	if code, _, stderr := c.run("--policy-url", url, "install", "tool@corp"); code != 0 {
		t.Fatalf("install from an allowed marketplace offline: exit %d %s", code, stderr)
	}

	// A tampered cache is refused: fail closed with a trust error.
	b, _ := os.ReadFile(cached)
	b[len(b)/2] ^= 0x55
	if err := os.WriteFile(cached, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = c.run("--policy-url", url, "marketplace", "add", other)
	if code != 4 || !strings.Contains(stderr, "bundle.tar.gz") {
		t.Fatalf("tampered cache: exit %d\n%s%s", code, out, stderr)
	}
	for _, args := range [][]string{{"install", "tool@corp"}, {"list"}} {
		code, _, stderr = c.run(append([]string{"--policy-url", url}, args...)...)
		if code != 4 {
			t.Fatalf("tampered cache must stop %v too: exit %d %s", args, code, stderr)
		}
	}
}

func TestServerPolicyTrustAndFailClosed(t *testing.T) {
	srv := newPolicyAPI(t)
	another := newPolicyAPI(t)
	corp := localMarketplace(t, t.TempDir(), "corp")

	// A bundle signed by another key than the pinned one: refused, exit 4.
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	writeFile(t, keyFile, srv.key.PublicKey)
	c := newPolicyClient(t, another.agent)
	code, out, stderr := c.run("--policy-url", another.hs.URL, "--policy-key", keyFile, "marketplace", "add", corp)
	if code != 4 || !strings.Contains(stderr, "policy bundle refused") {
		t.Fatalf("bundle of another key: exit %d\n%s%s", code, out, stderr)
	}
	if matches, _ := filepath.Glob(filepath.Join(c.home, "policy", "*", "bundle.tar.gz")); len(matches) != 0 {
		t.Fatalf("a refused bundle was cached: %v", matches)
	}
	// The pinned key of the right server: allowed, and no first-use message.
	c = newPolicyClient(t, srv.agent)
	code, _, stderr = c.run("--policy-url", srv.hs.URL, "--policy-key", keyFile, "marketplace", "add", corp)
	if code != 0 || strings.Contains(stderr, "first use") {
		t.Fatalf("pinned key: exit %d %s", code, stderr)
	}

	// A bad token: the server refused the credentials (exit 6, as from
	// every command that talks to the server); nothing is added, and the
	// hint names --token.
	bad := newPolicyClient(t, "not-a-token")
	code, _, stderr = bad.run("--policy-url", srv.hs.URL, "marketplace", "add", corp)
	if code != 6 || !strings.Contains(stderr, "401") || !strings.Contains(stderr, "--token") {
		t.Fatalf("bad token: exit %d %s", code, stderr)
	}

	// No server and no cache: fail closed.
	url := another.hs.URL
	another.hs.Close()
	fresh := newPolicyClient(t, "t")
	code, _, stderr = fresh.run("--policy-url", url, "marketplace", "add", corp)
	if code != 3 || !strings.Contains(stderr, "failing closed") {
		t.Fatalf("no server, no cache: exit %d %s", code, stderr)
	}
	// Pulling from a server that does not answer is the one "unreachable"
	// error of every command that talks to the server (exit 1).
	code, _, stderr = fresh.run("--policy-url", url, "--json", "policy", "pull")
	if code != 1 || !strings.Contains(stderr, `"type": "server-unreachable"`) && !strings.Contains(stderr, `"type":"server-unreachable"`) {
		t.Fatalf("pull with no server, no cache: exit %d %s", code, stderr)
	}

	// Usage: no URL, plain http to a remote host.
	if code, _, stderr = fresh.run("policy", "pull"); code != 2 || !strings.Contains(stderr, "--policy-url") {
		t.Fatalf("pull without a URL: exit %d %s", code, stderr)
	}
	if code, _, stderr = fresh.run("--policy-url", "http://wharf.example.com", "policy", "pull"); code != 2 || !strings.Contains(stderr, "plain http") {
		t.Fatalf("plain http: exit %d %s", code, stderr)
	}
}

// A server layer and the --policy layers combine: each can only tighten,
// and `policy check` shows the server's layer among them.
func TestServerPolicyLayersBetweenManagedAndPolicyPaths(t *testing.T) {
	srv := newPolicyAPI(t)
	srv.setLayer("org", 0, `{"enabledPlugins":{"tool@corp":false}}`)
	c := newPolicyClient(t, srv.agent)
	managed := filepath.Join(c.home, "no-managed")
	writeFile(t, filepath.Join(managed, "managed-settings.json"), `{}`)
	team := filepath.Join(t.TempDir(), "org.json") // same name as the server layer
	writeFile(t, team, `{}`)
	code, out, stderr := c.run("--policy-url", srv.hs.URL, "--policy", team, "policy", "check", "--source", `{"source":"github","repo":"corp/m"}`, "tool@corp")
	if code != 3 {
		t.Fatalf("policy check: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(out, "layers, highest first: managed ("+managed+"), org (server "+srv.hs.URL+" layer org), org_2 ("+team+")") {
		t.Fatalf("layer order:\n%s", out)
	}
	if !strings.Contains(out, "install    DENIED (forced off)") || !strings.Contains(out, "org:         enabledPlugins: tool@corp is forbidden") || !strings.Contains(out, "org_2:       allows") {
		t.Fatalf("the server layer's reason is missing:\n%s", out)
	}
}
