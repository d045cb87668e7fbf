package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// withSystemDir points the client's system managed directory at dir (the
// binary is built with the wharf_testhooks tag; a release build has no
// such switch).
func (c *policyClient) withSystemDir(dir string) {
	c.env = append(c.env, "WHARF_TEST_SYSTEM_MANAGED_DIR="+dir)
}

// WHARF_MANAGED_DIR adds a layer after the system managed directory; it
// cannot replace it. Before, pointing it at an empty directory dropped
// every managed rule.
func TestManagedDirEnvCannotDropSystemPolicy(t *testing.T) {
	srv := newPolicyAPI(t) // unused server: the client needs a token only
	c := newPolicyClient(t, srv.agent)
	system := t.TempDir()
	c.withSystemDir(system)
	writeFile(t, filepath.Join(system, "managed-settings.json"), `{"blockedMarketplaces":[{"source":"pathPattern","pathPattern":".*/corp$"}]}`)
	corp := localMarketplace(t, t.TempDir(), "corp")

	empty := t.TempDir()
	c.env = append(c.env, "WHARF_MANAGED_DIR="+empty)
	code, out, stderr := c.run("marketplace", "add", corp)
	if code != 3 || !strings.Contains(stderr, "blockedMarketplaces") {
		t.Fatalf("WHARF_MANAGED_DIR=empty dropped the system policy: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = c.run("policy", "--managed-dir", empty, "check", "--source", `{"source":"directory","path":"`+corp+`"}`, "tool@corp")
	if code != 3 || !strings.Contains(out, "managed ("+system+")") {
		t.Fatalf("--managed-dir dropped the system policy: exit %d\n%s%s", code, out, stderr)
	}

	// The added directory tightens: its rules apply on top.
	other := localMarketplace(t, t.TempDir(), "other")
	extra := t.TempDir()
	writeFile(t, filepath.Join(extra, "managed-settings.json"), `{"blockedMarketplaces":[{"source":"pathPattern","pathPattern":".*/other$"}]}`)
	c.env = append(c.env, "WHARF_MANAGED_DIR="+extra)
	code, out, stderr = c.run("marketplace", "add", other)
	if code != 3 || !strings.Contains(stderr, "managed_extra") {
		t.Fatalf("the added managed directory must tighten: exit %d\n%s%s", code, out, stderr)
	}
}

// Once the managed settings name the policy server, its bundle is enforced
// whatever the environment says: no WHARF_POLICY_URL, another one, or
// --policy-url to another server all keep it. A pinned key that the
// server's does not match is refused (exit 4).
func TestManagedPolicyURLIsAlwaysEnforced(t *testing.T) {
	srv := newPolicyAPI(t)
	srv.setLayer("org", 0, `{"blockedMarketplaces":[{"source":"pathPattern","pathPattern":".*/corp$"}]}`)
	// Another server for the environment and flags to name: the same
	// server under another host name, so the one token works there.
	otherURL := strings.Replace(srv.hs.URL, "127.0.0.1", "localhost", 1)
	c := newPolicyClient(t, srv.agent)
	system := t.TempDir()
	c.withSystemDir(system)
	writeFile(t, filepath.Join(system, "managed-settings.json"),
		`{"policyUrl": "`+srv.hs.URL+`", "policyKey": "`+srv.key.KeyID+`", "maxAge": "7d"}`)
	corp := localMarketplace(t, t.TempDir(), "corp")

	for name, extra := range map[string][]string{
		"no env":                 nil,
		"env names another":      {"--token", srv.agent},
		"flag names another too": {"--policy-url", otherURL},
	} {
		args := append(append([]string{}, extra...), "marketplace", "add", corp)
		env := c.env
		if name == "env names another" {
			c.env = append(c.env, "WHARF_POLICY_URL="+otherURL)
		}
		code, out, stderr := c.run(args...)
		c.env = env
		if code != 3 || !strings.Contains(stderr, "org") || !strings.Contains(stderr, "blockedMarketplaces") {
			t.Fatalf("%s: the managed server's policy was not enforced: exit %d\n%s%s", name, code, out, stderr)
		}
		if strings.Contains(stderr, "of "+srv.hs.URL+" on first use") {
			t.Fatalf("%s: a key pinned by the managed settings is not trusted on first use: %s", name, stderr)
		}
	}

	// A pin that the server's key does not match: trust refused.
	writeFile(t, filepath.Join(system, "managed-settings.json"),
		`{"policyUrl": "`+srv.hs.URL+`", "policyKey": "wharf-00000000000000ff"}`)
	c2 := newPolicyClient(t, srv.agent)
	c2.withSystemDir(system)
	code, out, stderr := c2.run("marketplace", "add", corp)
	if code != 4 || !strings.Contains(stderr, "wharf-00000000000000ff") {
		t.Fatalf("wrong pinned key: exit %d\n%s%s", code, out, stderr)
	}

	// An unreadable policyUrl fails closed instead of dropping the server.
	writeFile(t, filepath.Join(system, "managed-settings.json"), `{"policyUrl": 42}`)
	code, out, stderr = c2.run("marketplace", "add", corp)
	if code != 3 || !strings.Contains(stderr, "policyUrl") {
		t.Fatalf("invalid policyUrl: exit %d\n%s%s", code, out, stderr)
	}
}

// A proxy in front of the policy server that can serve an old bundle
// again: the client refuses it with exit 4 and keeps its cache, so the
// denial the newer bundle made stays in force.
func TestManagedServerRollbackRefused(t *testing.T) {
	srv := newPolicyAPI(t)
	srv.setLayer("org", 0, `{}`)
	var old []byte
	var replay atomic.Bool
	target, _ := url.Parse(srv.hs.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/policy/bundle" && replay.Load() {
			w.Header().Set("ETag", `"old"`)
			w.Write(old)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	old = getBundle(t, srv)

	srv.setLayer("org", 1, `{"blockedMarketplaces":[{"source":"pathPattern","pathPattern":".*/corp$"}]}`)
	c := newPolicyClient(t, srv.agent)
	system := t.TempDir()
	c.withSystemDir(system)
	writeFile(t, filepath.Join(system, "managed-settings.json"), `{"policyUrl": "`+proxy.URL+`", "policyKey": "`+srv.key.KeyID+`"}`)
	corp := localMarketplace(t, t.TempDir(), "corp")
	if code, out, stderr := c.run("marketplace", "add", corp); code != 3 {
		t.Fatalf("blocked by the current bundle: exit %d\n%s%s", code, out, stderr)
	}
	cache := filepath.Join(c.home, "policy", strings.ReplaceAll(strings.TrimPrefix(proxy.URL, "http://"), ":", "_"), "bundle.tar.gz")
	before, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}

	replay.Store(true)
	code, out, stderr := c.run("marketplace", "add", corp)
	if code != 4 || !strings.Contains(stderr, "rollback") {
		t.Fatalf("replayed old bundle: exit %d, want 4 (rollback)\n%s%s", code, out, stderr)
	}
	if after, _ := os.ReadFile(cache); !bytes.Equal(before, after) {
		t.Fatal("the refused bundle replaced the cache")
	}
	if code, out, _ := c.run("marketplace", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("nothing may be added: exit %d %s", code, out)
	}
}

func getBundle(t *testing.T, p *policyAPI) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", p.hs.URL+"/v1/policy/bundle", nil)
	req.Header.Set("Authorization", "Bearer "+p.admin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET bundle: %d %v", res.StatusCode, err)
	}
	return b
}
