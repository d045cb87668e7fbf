package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// hookMarketplace writes a directory marketplace named name whose plugin
// deploy has a PreToolUse hook that blocks every Bash call (exit 2).
func hookMarketplace(t *testing.T, dir, name string) string {
	t.Helper()
	root := filepath.Join(dir, name)
	writeFile(t, filepath.Join(root, ".claude-plugin", "marketplace.json"),
		`{"name": "`+name+`", "owner": {"name": "x"}, "plugins": [{"name": "deploy", "source": "./plugins/deploy"}]}`)
	writeFile(t, filepath.Join(root, "plugins", "deploy", ".claude-plugin", "plugin.json"), `{"name": "deploy", "version": "1.0.0"}`)
	writeFile(t, filepath.Join(root, "plugins", "deploy", "hooks", "hooks.json"),
		`{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo deploy hook ran >&2; exit 2"}]}]}}`)
	return root
}

// managedJSON is a managed-settings.json document.
func managedJSON(t *testing.T, v map[string]any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// bashEvent runs `wharf agent hook PreToolUse` on a Bash call and returns
// its exit code and stderr.
func (c *policyClient) bashEvent(project string) (int, string) {
	c.t.Helper()
	cmd := exec.Command(wharfBinary(c.t), "agent", "hook", "PreToolUse", "--project", project)
	cmd.Env = c.env
	cmd.Stdin = strings.NewReader(`{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}`)
	var errb strings.Builder
	cmd.Stderr = &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), errb.String()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return 0, errb.String()
}

// A marketplace is its source, not its local name. Managed settings that
// declare corp (extraKnownMarketplaces) and force deploy@corp on, with
// only managed hooks allowed, give that status to the declared
// marketplace only: a user's own marketplace that calls itself corp is
// refused, and its hooks do not run as managed ones. Before, the name was
// enough: the squatter's deploy was forced on and its hook ran.
func TestManagedMarketplaceNameBindsToItsSource(t *testing.T) {
	c := newPolicyClient(t, "")
	project := t.TempDir()
	real := hookMarketplace(t, t.TempDir(), "corp")
	squat := hookMarketplace(t, t.TempDir(), "corp")
	system := t.TempDir()
	c.withSystemDir(system)

	// The user's marketplace named corp, with deploy installed, before
	// the administrator's policy arrives.
	for _, args := range [][]string{{"marketplace", "add", squat}, {"install", "deploy@corp"}, {"disable", "deploy@corp"}} {
		if code, out, stderr := c.run(args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, stderr)
		}
	}
	writeFile(t, filepath.Join(system, "managed-settings.json"), managedJSON(t, map[string]any{
		"extraKnownMarketplaces": map[string]any{"corp": map[string]any{"source": map[string]any{"source": "directory", "path": real}}},
		"enabledPlugins":         map[string]any{"deploy@corp": true},
		"allowManagedHooksOnly":  true,
	}))

	code, out, stderr := c.run("agent", "status", "--project", project)
	if code != 0 || !regexpMatch(`deploy@corp .*failed`, out) || !strings.Contains(out, "is not the marketplace managed settings declare as corp") {
		t.Fatalf("the squatting marketplace's plugin must fail, naming the declared source: exit %d\n%s%s", code, out, stderr)
	}
	if code, stderr := c.bashEvent(project); code != 0 || strings.Contains(stderr, "deploy hook ran") {
		t.Fatalf("the squatting plugin's hook ran as a managed one: exit %d\n%s", code, stderr)
	}
	code, out, stderr = c.run("install", "deploy@corp")
	if code != 3 || !strings.Contains(stderr, "extraKnownMarketplaces") {
		t.Fatalf("install from the squatting marketplace: exit %d, want 3 naming extraKnownMarketplaces\n%s%s", code, out, stderr)
	}

	// The declared marketplace under that name gets the managed status:
	// deploy is forced on and its hook runs under allowManagedHooksOnly.
	for _, args := range [][]string{{"marketplace", "remove", "corp"}, {"marketplace", "add", real}, {"install", "deploy@corp"}} {
		if code, out, stderr := c.run(args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, stderr)
		}
	}
	code, out, stderr = c.run("agent", "status", "--project", project)
	if code != 0 || !regexpMatch(`deploy@corp .*active`, out) {
		t.Fatalf("the declared marketplace's plugin must be active: exit %d\n%s%s", code, out, stderr)
	}
	if code, stderr := c.bashEvent(project); code != 2 || !strings.Contains(stderr, "deploy hook ran") {
		t.Fatalf("the declared marketplace's forced-on plugin's hook must run: exit %d\n%s", code, stderr)
	}
}

// Forcing a plugin off follows its marketplace's source: adding the
// declared source again under another name does not escape it. Before,
// deploy@corp2 installed and loaded.
func TestForcedOffFollowsTheSource(t *testing.T) {
	c := newPolicyClient(t, "")
	real := hookMarketplace(t, t.TempDir(), "corp")
	system := t.TempDir()
	c.withSystemDir(system)
	writeFile(t, filepath.Join(system, "managed-settings.json"), managedJSON(t, map[string]any{
		"extraKnownMarketplaces": map[string]any{"corp": map[string]any{"source": map[string]any{"source": "directory", "path": real}}},
		"enabledPlugins":         map[string]any{"deploy@corp": false},
	}))
	if code, out, stderr := c.run("marketplace", "add", real, "--name", "corp2"); code != 0 {
		t.Fatalf("marketplace add --name corp2: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr := c.run("install", "deploy@corp2")
	if code != 3 || !strings.Contains(stderr, "enabledPlugins sets deploy@corp to false") {
		t.Fatalf("deploy@corp2 is deploy@corp under another name: exit %d, want 3\n%s%s", code, out, stderr)
	}

	// So do the signatures corp's installs need.
	writeFile(t, filepath.Join(system, "managed-settings.json"), managedJSON(t, map[string]any{
		"extraKnownMarketplaces": map[string]any{"corp": map[string]any{"source": map[string]any{"source": "directory", "path": real}}},
		"requireSignatures":      map[string]any{"corp": []string{"release-2026"}},
	}))
	code, out, stderr = c.run("install", "deploy@corp2")
	if code != 3 || !strings.Contains(stderr, "requireSignatures for corp") {
		t.Fatalf("an unsigned deploy@corp2 is an unsigned deploy@corp: exit %d, want 3\n%s%s", code, out, stderr)
	}
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(`(?m)` + pattern).MatchString(s) }
