package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/cli/shell"
	"github.com/wharfhq/wharf/internal/testutil/testworld"
)

// runCode runs wharf and returns its exit code, stdout and stderr.
func (w *wharfRun) runCode(args ...string) (int, string, string) {
	w.t.Helper()
	c := w.cmd(args...)
	var stdout, stderr strings.Builder
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// The CLI is one contract: an unknown plugin is exit 2 in every command
// that takes one; a reserved marketplace name or a key file that is not a
// key is a usage error (2), not "trust" (4); no message names an internal
// layer; a parent command alone prints its help; the aliases claude plugin
// has resolve to the same commands.
func TestCLIContract(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	w := newWharfRun(t)
	w.env = append(w.env, "HOME="+filepath.Join(w.home, "userhome"), "WHARF_INVENTORY_INTERVAL=off")
	root := testworld.Marketplace(t, t.TempDir(), "m", map[string]map[string]string{
		"a": {".claude-plugin/plugin.json": testworld.Manifest("a", "1.0.0"), "commands/go.md": "go\n"},
	})
	w.ok("marketplace", "add", root)
	w.ok("install", "a@m")
	junk := filepath.Join(t.TempDir(), "junk.pem")
	if err := os.WriteFile(junk, []byte("not a key\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pluginDir := filepath.Join(root, "plugins", "a")
	if _, err := os.Stat(pluginDir); err != nil {
		t.Fatalf("the fixture's plugin is not at %s: %v", pluginDir, err)
	}
	layerWords := []string{"intent: ", "materialization: ", "trust: ", "policy: ", "dependency: ", "active: "}

	for _, tt := range []struct {
		name    string
		args    []string
		code    int
		mention string
	}{
		// An unknown plugin, in a known marketplace and in an unknown one.
		{"show", []string{"show", "nope@m"}, 2, "nope@m"},
		{"install", []string{"install", "nope@m"}, 2, "nope@m"},
		{"uninstall", []string{"uninstall", "nope@m"}, 2, "nope@m"},
		{"remove alias", []string{"remove", "nope@m"}, 2, "nope@m"},
		{"enable", []string{"enable", "nope@m"}, 2, "nope@m"},
		{"disable", []string{"disable", "nope@m"}, 2, "nope@m"},
		{"update", []string{"update", "nope@m"}, 2, "nope@m"},
		{"update --dry-run", []string{"update", "nope@m", "--dry-run"}, 2, "nope@m"},
		{"verify", []string{"verify", "nope@m"}, 2, "nope@m"},
		{"config", []string{"config", "nope@m"}, 2, "nope@m"},
		{"show, unknown marketplace", []string{"show", "nope@zz"}, 2, "zz"},
		{"uninstall, unknown marketplace", []string{"uninstall", "nope@zz"}, 2, "nope@zz"},
		{"verify, no argument", []string{"verify"}, 2, "wharf verify"},
		// Names and key files: usage, not trust.
		{"reserved name", []string{"marketplace", "add", root, "--name", "claude-plugins-official"}, 2, "reserved"},
		{"verify --key not a key", []string{"verify", pluginDir, "--key", junk}, 2, junk},
		{"verify --key missing", []string{"verify", pluginDir, "--key", junk + ".missing"}, 2, "junk.pem.missing"},
		{"sign --key not a key", []string{"sign", pluginDir, "--key", junk, "--marketplace", "m"}, 2, junk},
		{"--policy-key not a key", []string{"--policy-key", junk, "--policy-url", "http://127.0.0.1:9", "policy", "pull"}, 2, junk},
	} {
		code, out, stderr := w.runCode(tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.mention) {
			t.Errorf("%s: wharf %v: exit %d, want %d mentioning %q\n%s%s", tt.name, tt.args, code, tt.code, tt.mention, out, stderr)
		}
		for _, l := range layerWords {
			if strings.Contains(stderr, l) {
				t.Errorf("%s: the message names the layer %q:\n%s", tt.name, l, stderr)
			}
		}
		code, _, stderr = w.runCode(append([]string{"--json"}, tt.args...)...)
		var je shell.JSONError
		if err := json.Unmarshal([]byte(stderr), &je); err != nil || code != tt.code || je.Error.Layer == "" {
			t.Errorf("%s --json: exit %d %v\n%s", tt.name, code, err, stderr)
		}
		for _, l := range layerWords {
			if strings.HasPrefix(je.Error.Message, l) || strings.Contains(je.Error.Message, ": "+l) {
				t.Errorf("%s --json: the message names the layer %q: %s", tt.name, l, je.Error.Message)
			}
		}
	}

	// A parent command alone prints its help and exits 0.
	for _, parent := range [][]string{{"agent"}, {"marketplace"}, {"inventory"}, {"agent", "mcp"}, {"policy"}, {"token"}} {
		code, out, stderr := w.runCode(parent...)
		if code != 0 || !strings.Contains(out, "Usage:") || !strings.Contains(out, "Available Commands:") {
			t.Errorf("wharf %v: exit %d\n%s%s", parent, code, out, stderr)
		}
	}

	// The aliases claude plugin has: i, remove (and rm), autoremove; ls.
	for alias, command := range map[string]string{"i": "install", "remove": "uninstall", "rm": "uninstall", "ls": "list", "autoremove": "prune"} {
		_, want, _ := w.runCode(command, "--help")
		code, got, stderr := w.runCode(alias, "--help")
		if code != 0 || got != want {
			t.Errorf("wharf %s --help: exit %d, not the help of %s\n%s%s", alias, code, command, got, stderr)
		}
	}
	if out := w.ok("ls"); !strings.Contains(out, "a@m") {
		t.Errorf("wharf ls:\n%s", out)
	}
	w.ok("rm", "a@m")
	w.ok("i", "a@m")
}
