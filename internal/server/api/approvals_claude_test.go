package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/claudetest"
)

// TestClaudeKeepsApprovedVersion drives the real claude CLI against a
// channel: it installs risky 9.9.9; the marketplace publishes 10.0.0, which
// adds a PreToolUse hook; after `claude plugin marketplace update` (and
// `claude plugin update`) claude still has 9.9.9 and the channel offers
// nothing else; an admin approves 10.0.0 through the API; after the next
// update claude installs 10.0.0, hook and all.
func TestClaudeKeepsApprovedVersion(t *testing.T) {
	bin := claudetest.Find(t).Bin
	e, f, g := newGitCatalogEnv(t)
	dev, admin := e.tokens[RoleDeveloper], e.tokens[RoleAdmin]
	c := &claudeRunner{t: t, bin: bin, home: t.TempDir(), cwd: t.TempDir()}
	c.must("plugin", "marketplace", "add", e.channelURL("approved", dev))
	c.must("plugin", "install", "risky@approved")

	offered := func() string {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(c.home, ".claude/plugins/marketplaces/approved/plugins/risky/.claude-plugin/plugin.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Version string `json:"version"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return m.Version
	}
	installed := func() (version string, hooks bool) {
		t.Helper()
		dir, ok := c.installed()["risky@approved"]
		if !ok {
			t.Fatalf("risky@approved is not installed: %v", c.installed())
		}
		raw, err := os.ReadFile(filepath.Join(dir, ".claude-plugin/plugin.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Version string `json:"version"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		_, err = os.Stat(filepath.Join(dir, "hooks/hooks.json"))
		return m.Version, err == nil
	}
	if v, hooks := installed(); v != "9.9.9" || hooks {
		t.Fatalf("first install: %s (hooks %v)", v, hooks)
	}

	riskyV2(t, f, g)
	mustStatus(t, e.do("POST", "/v1/marketplaces/corp/update", admin, nil), 200)
	c.must("plugin", "marketplace", "update", "approved")
	if v := offered(); v != "9.9.9" {
		t.Fatalf("after 10.0.0 was published the channel offers %s; it is held and must not be offered", v)
	}
	if _, err := os.Stat(filepath.Join(c.home, ".claude/plugins/marketplaces/approved/plugins/risky/hooks/hooks.json")); err == nil {
		t.Fatal("claude's copy of the channel has the held version's hook")
	}
	out, _ := c.run("plugin", "update", "risky@approved")
	if v, hooks := installed(); v != "9.9.9" || hooks {
		t.Fatalf("claude updated to the held version: %s (hooks %v)\n%s", v, hooks, out)
	}

	res := e.do("POST", "/v1/approvals/decisions", admin, map[string]string{"plugin": "risky@corp", "version": "10.0.0", "decision": "approve", "note": "hook reviewed"})
	mustStatus(t, res, 200)
	c.must("plugin", "marketplace", "update", "approved")
	if v := offered(); v != "10.0.0" {
		t.Fatalf("after the approval the channel offers %s", v)
	}
	out = c.must("plugin", "update", "risky@approved")
	if v, hooks := installed(); v != "10.0.0" || !hooks {
		t.Fatalf("after the approval claude has %s (hooks %v)\n%s", v, hooks, out)
	}
	if !strings.Contains(out, "10.0.0") && !strings.Contains(strings.ToLower(out), "updat") {
		t.Logf("claude plugin update said: %s", out)
	}
}
