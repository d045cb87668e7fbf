package main

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wharfhq/wharf/internal/core/fetch"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/source"
	"github.com/wharfhq/wharf/internal/server/api"
	"github.com/wharfhq/wharf/internal/server/catalog"
	"github.com/wharfhq/wharf/internal/testutil/gitserve"
	"github.com/wharfhq/wharf/internal/testutil/testapi"
)

// approvalWorld is a git marketplace served on 127.0.0.1 and a real wharf
// server (bbolt) that tracks it and can vendor its plugins.
type approvalWorld struct {
	t    *testing.T
	work string
	url  string // the marketplace's clone URL
	srv  *testapi.Server
	// down makes the server answer 503, as when it cannot be reached.
	down atomic.Bool
}

func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// catalogServer is a real wharf server (bbolt) that tracks marketplaces
// (git ones on loopback too) and vendors their plugins into its channel
// directory; wrap, when not nil, wraps its handler.
func catalogServer(t *testing.T, wrap func(http.Handler) http.Handler) *testapi.Server {
	t.Helper()
	dir := t.TempDir()
	cfg := fetch.Config{AllowPrivate: true}
	return testapi.NewWith(t, wrap, func(d *api.Deps) {
		mgr := marketplace.NewManager(d.Store, marketplace.Options{Dir: filepath.Join(dir, "marketplaces"), Fetch: cfg})
		d.Catalog, d.ChannelDir, d.Fetcher = catalog.New(mgr), filepath.Join(dir, "channels"), source.NewFetcher(cfg)
	})
}

func newApprovalWorld(t *testing.T) *approvalWorld {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w := &approvalWorld{t: t, work: t.TempDir()}
	writeFile(t, filepath.Join(w.work, ".claude-plugin/marketplace.json"),
		`{"name": "corp", "owner": {"name": "Corp IT"}, "plugins": [{"name": "sync", "source": "./plugins/sync"}]}`)
	w.version("1.0.0")
	writeFile(t, filepath.Join(w.work, "plugins/sync/commands/sync.md"), "Sync the workspace.\n")
	gitRun(t, w.work, "init", "-q", "-b", "main")
	gitRun(t, w.work, "add", "-A")
	gitRun(t, w.work, "commit", "-q", "-m", "sync 1.0.0")
	root := t.TempDir()
	gitRun(t, "", "clone", "-q", "--bare", w.work, filepath.Join(root, "corp", "market.git"))
	gitRun(t, w.work, "remote", "add", "origin", filepath.Join(root, "corp", "market.git"))
	w.url = gitserve.Start(t, root, gitserve.Options{HTTP: true}).URL + "/corp/market.git"

	w.srv = catalogServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if w.down.Load() {
				http.Error(rw, "down", http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(rw, r)
		})
	})
	w.srv.Do("POST", "/v1/marketplaces", nil, map[string]any{"name": "corp", "source": map[string]string{"source": "git", "url": w.url}}, http.StatusCreated, nil)
	return w
}

func (w *approvalWorld) version(v string) {
	writeFile(w.t, filepath.Join(w.work, "plugins/sync/.claude-plugin/plugin.json"), `{"name": "sync", "version": "`+v+`"}`)
}

// publish commits the working copy, pushes it, and has the server fetch
// the marketplace and look at what it lists now; it returns the versions
// the server saw for the first time.
func (w *approvalWorld) publish(msg string) []api.ApprovalRecord {
	w.t.Helper()
	gitRun(w.t, w.work, "add", "-A")
	gitRun(w.t, w.work, "commit", "-q", "-m", msg)
	gitRun(w.t, w.work, "push", "-q", "origin", "main")
	return w.scan()
}

func (w *approvalWorld) scan() []api.ApprovalRecord {
	w.t.Helper()
	w.srv.Do("POST", "/v1/marketplaces/corp/update", nil, nil, http.StatusOK, nil)
	var res api.ScanResult
	w.srv.Do("POST", "/v1/approvals/scan", nil, map[string]string{"marketplace": "corp"}, http.StatusOK, &res)
	if len(res.Failed) > 0 {
		w.t.Fatalf("scan failed: %+v", res.Failed)
	}
	return res.Seen
}

func (c *policyClient) must(args ...string) string {
	c.t.Helper()
	code, out, stderr := c.run(args...)
	if code != 0 {
		c.t.Fatalf("wharf %v: exit %d\n%s%s", args, code, out, stderr)
	}
	return out
}

// installedVersion is the version `wharf list` shows active for id.
func (c *policyClient) installedVersion(id string, args ...string) string {
	c.t.Helper()
	var rows []listRow
	if err := json.Unmarshal([]byte(c.must(append(args, "list", "--json")...)), &rows); err != nil {
		c.t.Fatal(err)
	}
	for _, r := range rows {
		if r.ID == id {
			if r.Status != "active" {
				c.t.Fatalf("%s is %s: %v", id, r.Status, r.Errors)
			}
			return r.Version
		}
	}
	c.t.Fatalf("%s is not installed: %+v", id, rows)
	return ""
}

// End to end with wharf clients, a real server, real git and bbolt: v1 is
// approved; v2 adds an `npx -y` MCP server and is held: `wharf update`
// refuses it with the diff (--accept too: the server decides) and v1 stays
// active, also with the server down (the cached signed bundle); an admin
// approves v2 and update moves to it; a v3 that changes
// only Markdown is approved by wharf (auto mode) and update takes it. A
// client without a policy server is asked instead, and --accept records it.
func TestApprovalEndToEnd(t *testing.T) {
	w := newApprovalWorld(t)
	seen := w.scan()
	if len(seen) != 1 || seen[0].Version != "1.0.0" || seen[0].State != policy.StateApproved || !seen[0].Auto {
		t.Fatalf("first scan: %+v", seen)
	}
	var tok struct {
		Token string `json:"token"`
	}
	w.srv.Do("POST", "/v1/tokens", nil, map[string]string{"role": "agent"}, http.StatusCreated, &tok)
	c := newPolicyClient(t, tok.Token)
	c.env = append(c.env, "WHARF_POLICY_URL="+w.srv.HS.URL, "WHARF_ALLOW_PRIVATE_SOURCES=1")
	local := newPolicyClient(t, "") // no policy server
	local.env = append(local.env, "WHARF_ALLOW_PRIVATE_SOURCES=1")
	for _, cl := range []*policyClient{c, local} {
		cl.must("marketplace", "add", w.url)
		cl.must("install", "sync@corp")
		if v := cl.installedVersion("sync@corp"); v != "1.0.0" {
			t.Fatalf("installed %s", v)
		}
	}

	// v2 adds an MCP server fetched with npx -y: held.
	w.version("2.0.0")
	writeFile(t, filepath.Join(w.work, "plugins/sync/.mcp.json"), `{"mcpServers": {"sync": {"command": "npx", "args": ["-y", "sync-mcp@latest"]}}}`)
	seen = w.publish("sync 2.0.0")
	if len(seen) != 1 || seen[0].State != policy.StateHeld {
		t.Fatalf("v2 seen as %+v", seen)
	}
	const diff = "2.0.0 is held for review: adds MCP server `sync` (npx -y sync-mcp@latest)"
	for _, args := range [][]string{{"update", "sync@corp"}, {"update", "sync@corp", "--accept"}} {
		code, out, stderr := c.run(args...)
		if code != 3 || !strings.Contains(stderr, diff) {
			t.Fatalf("wharf %v: exit %d, want 3 naming %q\n%s%s", args, code, diff, out, stderr)
		}
		if v := c.installedVersion("sync@corp"); v != "1.0.0" {
			t.Fatalf("after the refused update sync is %s", v)
		}
	}

	// The server down: the cached signed bundle still holds v2 back.
	w.down.Store(true)
	code, out, stderr := c.run("update", "sync@corp")
	if code != 3 || !strings.Contains(stderr, diff) {
		t.Fatalf("offline update: exit %d, want 3 naming %q\n%s%s", code, diff, out, stderr)
	}
	w.down.Store(false)

	// Without a server the user decides.
	code, out, stderr = local.run("update", "sync@corp")
	if code != 3 || !strings.Contains(stderr, "2.0.0 adds capabilities over the installed 1.0.0: adds MCP server `sync` (npx -y sync-mcp@latest)") || !strings.Contains(stderr, "--accept") {
		t.Fatalf("local update: exit %d\n%s%s", code, out, stderr)
	}
	if v := local.installedVersion("sync@corp"); v != "1.0.0" {
		t.Fatalf("local: after the refused update sync is %s", v)
	}
	local.must("update", "sync@corp", "--accept")
	if v := local.installedVersion("sync@corp"); v != "2.0.0" {
		t.Fatalf("local: after --accept sync is %s", v)
	}

	// An admin approves v2: the update goes through.
	w.srv.Do("POST", "/v1/approvals/decisions", nil, map[string]string{"plugin": "sync@corp", "version": "2.0.0", "decision": "approve", "note": "pinned later"}, http.StatusOK, nil)
	c.must("update", "sync@corp")
	if v := c.installedVersion("sync@corp"); v != "2.0.0" {
		t.Fatalf("after the approval sync is %s", v)
	}

	// v3 changes only Markdown: approved without a person.
	w.version("2.1.0")
	writeFile(t, filepath.Join(w.work, "plugins/sync/commands/sync.md"), "Sync the workspace, then report.\n")
	seen = w.publish("sync 2.1.0")
	if len(seen) != 1 || seen[0].State != policy.StateApproved || !seen[0].Auto || seen[0].By != "wharf" {
		t.Fatalf("v3 seen as %+v", seen)
	}
	c.must("update", "sync@corp")
	if v := c.installedVersion("sync@corp"); v != "2.1.0" {
		t.Fatalf("after v3 sync is %s", v)
	}
	local.must("update", "sync@corp")
	if v := local.installedVersion("sync@corp"); v != "2.1.0" {
		t.Fatalf("local: after v3 sync is %s", v)
	}
}
