package api

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/internal/testutil/claudetest"
)

type claudeRunner struct {
	t    *testing.T
	bin  string
	home string
	cwd  string
}

func (c *claudeRunner) run(args ...string) (string, error) {
	c.t.Helper()
	// A bound per command, so that a hung CLI fails naming the command
	// rather than at the test binary's deadline.
	ctx, cancel := context.WithTimeout(c.t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir = c.cwd
	cmd.Env = []string{"HOME=" + c.home, "PATH=" + os.Getenv("PATH"), "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1", "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "NO_COLOR=1", "TERM=dumb"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *claudeRunner) must(args ...string) string {
	c.t.Helper()
	out, err := c.run(args...)
	if err != nil {
		c.t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// installed reads Claude Code's installed_plugins.json: id → install path.
func (c *claudeRunner) installed() map[string]string {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.home, ".claude/plugins/installed_plugins.json"))
	if err != nil {
		c.t.Fatalf("installed_plugins.json: %v", err)
	}
	var doc struct {
		Plugins map[string][]struct {
			InstallPath string `json:"installPath"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		c.t.Fatalf("installed_plugins.json: %v\n%s", err, b)
	}
	out := map[string]string{}
	for id, v := range doc.Plugins {
		if len(v) > 0 {
			out[id] = v[0].InstallPath
		}
	}
	return out
}

// TestClaudeUsesChannel drives the real claude CLI against a channel served
// on loopback: add it with a token, install a plugin with a dependency
// (both from the channel, digests equal to the pins), see a denied plugin
// and its dependent leave at the next marketplace update, and (as root in
// CI) see the channel's managed settings refuse another marketplace.
func TestClaudeUsesChannel(t *testing.T) {
	bin := claudetest.Find(t).Bin
	// The managed-settings part writes Claude Code's system settings, which
	// every claude run reads: hold the lock other claude tests share.
	claudetest.Lock(t, os.Geteuid() == 0 && os.Getenv("CI") == "true")
	needGit(t)
	e, f := newCatalogEnv(t)
	dev := e.tokens[RoleDeveloper]
	c := &claudeRunner{t: t, bin: bin, home: t.TempDir(), cwd: t.TempDir()}

	// The channel as a clone passes claude's own validation.
	clone := filepath.Join(t.TempDir(), "approved")
	mustGit(t, "", "clone", "-q", e.channelURL("approved", dev), clone)
	c.must("plugin", "validate", clone)
	c.must("plugin", "validate", filepath.Join(clone, "plugins/deploy"))
	// ... without a warning about wharf's own keys: the pins live in a
	// file claude does not read.
	if out := c.must("plugin", "validate", clone, "--json"); strings.Contains(out, "integrity") || strings.Contains(out, `'wharf'`) || strings.Contains(out, "Unknown field") {
		t.Fatalf("claude plugin validate warns about wharf's keys in the channel:\n%s", out)
	}

	c.must("plugin", "marketplace", "add", e.channelURL("approved", dev))
	c.must("plugin", "install", "deploy@approved")
	var view ChannelView
	e.do("GET", "/v1/channels/approved", dev, nil).json(t, &view)
	pins := map[string]string{}
	for _, en := range view.Entries {
		pins[en.Name] = en.Digest
	}
	inst := c.installed()
	for _, name := range []string{"deploy", "lint"} {
		dir, ok := inst[name+"@approved"]
		if !ok {
			t.Fatalf("%s@approved not installed (the dependency comes from the channel too): %v", name, inst)
		}
		// .orphaned_at is Claude Code's own marker in a cache dir (written
		// by its background cleanup), not plugin content.
		if err := os.Remove(filepath.Join(dir, ".orphaned_at")); err == nil {
			t.Logf("claude marked %s orphaned; its marker is not part of the tree", dir)
		}
		tree, err := trust.Digest(dir)
		if err != nil {
			t.Fatal(err)
		}
		if tree.Digest != pins[name] {
			want, _ := trust.Digest(filepath.Join(clone, "plugins", name))
			t.Fatalf("installed %s (%s) has digest %s, the channel pins %s; differences: %v", name, dir, tree.Digest, pins[name], trust.DiffDetail(want, tree))
		}
	}
	if pins["deploy"] != f.deployW1 {
		t.Fatalf("deploy's pin %s is not its origin digest %s", pins["deploy"], f.deployW1)
	}

	// Deny lint: at the next marketplace update lint and deploy (which
	// depends on it) leave the channel Claude Code sees.
	if res := e.putLayer("org", "*new", map[string]any{"settings": map[string]any{"enabledPlugins": map[string]bool{"lint@corp": false}}}); res.status != 201 {
		t.Fatalf("put layer: %d %s", res.status, res.body)
	}
	c.must("plugin", "marketplace", "update", "approved")
	mj, err := os.ReadFile(filepath.Join(c.home, ".claude/plugins/marketplaces/approved/.claude-plugin/marketplace.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Plugins []struct {
			Name string `json:"name"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(mj, &doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range doc.Plugins {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "risky" {
		t.Fatalf("after the denial claude's copy of the channel lists %v, want only risky", names)
	}
	if out, err := c.run("plugin", "install", "lint@approved", "--scope", "project"); err == nil {
		t.Fatalf("claude installed the denied lint: %s", out)
	}

	// With the channel's managed settings in effect, another marketplace
	// cannot be added. Claude Code reads them only from
	// /etc/claude-code/managed-settings.json (and managed-settings.d/) on
	// Linux, with no override, so this part runs only as root under CI.
	if os.Geteuid() != 0 || os.Getenv("CI") != "true" {
		t.Log("skipping the managed-settings part: it writes /etc/claude-code/managed-settings.d, done only as root with CI=true")
		return
	}
	res := e.do("GET", "/v1/channels/approved/claude-managed-settings", dev, nil)
	if res.status != 200 {
		t.Fatalf("managed settings: %d %s", res.status, res.body)
	}
	dropIn := "/etc/claude-code/managed-settings.d/zz-wharf-channel-test.json"
	for _, d := range []string{"/etc/claude-code", filepath.Dir(dropIn)} {
		if _, err := os.Stat(d); os.IsNotExist(err) {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(d) // only if this test made it (and it is empty again)
		}
	}
	if err := os.WriteFile(dropIn, res.body, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(dropIn)
	other := newFixture(t)
	out, err := c.run("plugin", "marketplace", "add", other.root)
	if err == nil {
		t.Fatalf("claude added another marketplace under the channel's managed settings: %s", out)
	}
	if !strings.Contains(strings.ToLower(out), "polic") && !strings.Contains(strings.ToLower(out), "managed") && !strings.Contains(strings.ToLower(out), "allow") {
		t.Fatalf("refusal does not name the policy: %s", out)
	}
	// The channel itself is still allowed, added by the URL the managed
	// settings name: Claude Code compares the URL as written, so a token in
	// it would not match. The token comes from git's credential helper.
	c2 := &claudeRunner{t: t, bin: bin, home: t.TempDir(), cwd: t.TempDir()}
	if out, err := c2.run("plugin", "marketplace", "add", e.channelURL("approved", dev)); err == nil {
		t.Fatalf("claude added the channel by a URL with a token in it, which the managed settings do not name: %s", out)
	}
	writeGitCredentials(t, c2.home, e.channelURL("approved", dev))
	c2.must("plugin", "marketplace", "add", e.channelURL("approved", ""))
	c2.must("plugin", "install", "risky@approved")
}

// writeGitCredentials gives git in home the credentials of tokenURL (a
// channel URL with its token) through git's store helper, so that the
// channel is added by its URL without one.
func writeGitCredentials(t *testing.T, home, tokenURL string) {
	t.Helper()
	u, err := url.Parse(tokenURL)
	if err != nil {
		t.Fatal(err)
	}
	cred := u.Scheme + "://" + u.User.String() + "@" + u.Host + "\n"
	if err := os.WriteFile(filepath.Join(home, ".git-credentials"), []byte(cred), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[credential]\n\thelper = store\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}
