package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/core/apiclient"
	"github.com/wharfhq/wharf/internal/server/api"
)

// requestMarketplace is a git repository (file://) holding marketplace
// "corp" with the plugins tool, other and hard.
func requestMarketplace(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	root := filepath.Join(t.TempDir(), "corp")
	var entries []string
	for _, name := range []string{"tool", "other", "hard"} {
		entries = append(entries, fmt.Sprintf(`{"name": %q, "source": "./plugins/%s", "version": "1.0.0"}`, name, name))
		writeFile(t, filepath.Join(root, "plugins", name, ".claude-plugin", "plugin.json"), fmt.Sprintf(`{"name": %q, "version": "1.0.0"}`, name))
		writeFile(t, filepath.Join(root, "plugins", name, "commands", name+".md"), "# "+name+"\n")
	}
	writeFile(t, filepath.Join(root, ".claude-plugin", "marketplace.json"),
		`{"name": "corp", "owner": {"name": "t"}, "plugins": [`+strings.Join(entries, ",")+`]}`)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "corp"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return "file://" + root
}

// The server's layers: "security" (highest, not waivable) refuses
// hard@corp; "org" allows waivers and refuses every plugin but listed@corp.
func requestPolicy(srv *policyAPI) {
	srv.srv.PutLayer("security", 0, map[string]any{"rank": 1, "settings": json.RawMessage(`{}`),
		"modules": map[string]string{"security.rego": `package wharf.admin.security
deny contains "hard@corp is refused by security" if {
	input.action in {"install", "enable", "load"}
	input.plugin == "hard@corp"
}
`}})
	srv.srv.PutLayer("org", 0, map[string]any{"rank": 10, "settings": json.RawMessage(`{"allowWaivers": true}`),
		"modules": map[string]string{"org.rego": `package wharf.admin.org
deny contains msg if {
	input.action in {"install", "enable", "load"}
	input.plugin != "listed@corp"
	msg := sprintf("%s is not approved for this organization", [input.plugin])
}
`}})
}

// A developer asks for denied plugins; an admin approves one until a date
// and denies another through the API. The client's next install pulls the
// bundle and succeeds, wharf list shows both answers, the denied plugin
// stays refused with the admin's note, an approval cannot loosen the layer
// the admin did not mark waivable, and after the date the plugin is
// refused again.
func TestRequestApproveInstallDenyExpireEndToEnd(t *testing.T) {
	srv := newPolicyAPI(t)
	requestPolicy(srv)
	var tok struct {
		Token string `json:"token"`
		ID    string `json:"id"`
	}
	srv.call("POST", "/v1/tokens", "", map[string]string{"role": "developer"}, http.StatusCreated, &tok)
	c := newPolicyClient(t, tok.Token)
	c.env = append(c.env, "WHARF_POLICY_URL="+srv.hs.URL)
	if code, out, stderr := c.run("marketplace", "add", requestMarketplace(t)); code != 0 {
		t.Fatalf("marketplace add: exit %d\n%s%s", code, out, stderr)
	}

	// Denied, with how to ask.
	code, out, stderr := c.run("install", "tool@corp")
	if code != 3 || !strings.Contains(stderr, "not approved for this organization") || !strings.Contains(stderr, "wharf request tool@corp --reason") {
		t.Fatalf("install before any request: exit %d\n%s%s", code, out, stderr)
	}
	// Clear errors before anything is sent.
	if code, _, stderr := c.run("request", "tool@corp"); code != 2 || !strings.Contains(stderr, "--reason is required") {
		t.Fatalf("request without a reason: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := c.run("request", "tool", "--reason", "x"); code != 2 || !strings.Contains(stderr, "name@marketplace") {
		t.Fatalf("request of a bare name: exit %d\n%s", code, stderr)
	}

	ids := map[string]string{}
	for _, p := range []string{"tool@corp", "other@corp", "hard@corp"} {
		code, out, stderr := c.run("--json", "request", p, "--reason", "needed for the release")
		var q apiclient.PluginRequest
		if code != 0 || json.Unmarshal([]byte(out), &q) != nil || q.Status != "pending" || q.Plugin != p {
			t.Fatalf("request %s: exit %d\n%s%s", p, code, out, stderr)
		}
		ids[p] = q.ID
	}
	if code, _, stderr := c.run("request", "tool@corp", "--reason", "again"); code == 0 || !strings.Contains(stderr, "already asked") {
		t.Fatalf("asking twice: exit %d\n%s", code, stderr)
	}
	if code, out, _ := c.run("request", "list"); code != 0 || strings.Count(out, ": pending") != 3 {
		t.Fatalf("request list before any answer: exit %d\n%s", code, out)
	}

	// The admin answers through the API.
	until := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	var ans api.RequestAnswerResult
	srv.call("POST", "/v1/requests/"+ids["tool@corp"]+"/approve", "", map[string]string{"until": until.Format(time.RFC3339), "note": "for the migration"}, http.StatusOK, &ans)
	srv.call("POST", "/v1/requests/"+ids["other@corp"]+"/deny", "", map[string]string{"note": "use tool@corp"}, http.StatusOK, &ans)
	srv.call("POST", "/v1/requests/"+ids["hard@corp"]+"/approve", "", map[string]string{}, http.StatusOK, &ans)

	// The next install pulls the bundle with the waiver and succeeds.
	code, out, stderr = c.run("install", "tool@corp")
	if code != 0 || !strings.Contains(out, "installed tool@corp 1.0.0") || !strings.Contains(out, "approved until "+until.Format(time.RFC3339)+" by ") || !strings.Contains(out, "for the migration") {
		t.Fatalf("install after the approval: exit %d\n%s%s", code, out, stderr)
	}
	// The denied one is refused with the note.
	code, out, stderr = c.run("install", "other@corp")
	if code != 3 || !strings.Contains(stderr, "other@corp: requested ") || !strings.Contains(stderr, "denied by ") || !strings.Contains(stderr, "use tool@corp") {
		t.Fatalf("install of the denied plugin: exit %d\n%s%s", code, out, stderr)
	}
	// An approval does not loosen the layer the admin did not mark waivable.
	code, out, stderr = c.run("install", "hard@corp")
	if code != 3 || !strings.Contains(stderr, "hard@corp is refused by security") || strings.Contains(stderr, "not approved for this organization") {
		_, check, checkErr := c.run("policy", "check", "hard@corp", "--json")
		_, pull, _ := c.run("policy", "pull", "--json")
		t.Fatalf("install of a plugin the security layer refuses: exit %d\n%s%s\npolicy check: %s%s\npolicy pull: %s", code, out, stderr, check, checkErr, pull)
	}
	code, out, stderr = c.run("list")
	if code != 0 || !regexpMatch(`tool@corp\s+1\.0\.0\s+user\s+active`, out) ||
		!regexpMatch(`other@corp\s+requested \d{4}-\d\d-\d\d: denied by tok_\w+: use tool@corp`, out) ||
		!regexpMatch(`tool@corp\s+requested \d{4}-\d\d-\d\d: approved until \S+ by tok_\w+: for the migration`, out) {
		t.Fatalf("list after the answers: exit %d\n%s%s", code, out, stderr)
	}

	// After the date, the next load refuses it again.
	c.env = append(c.env, "WHARF_TEST_NOW="+until.Add(time.Minute).Format(time.RFC3339))
	code, out, stderr = c.run("list")
	if code != 0 || regexpMatch(`tool@corp\s+1\.0\.0\s+user\s+active`, out) || !strings.Contains(out, "not approved for this organization") {
		t.Fatalf("list after the date: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := c.run("install", "tool@corp"); code != 3 || !strings.Contains(stderr, "expired") {
		t.Fatalf("install after the date: exit %d\n%s%s", code, out, stderr)
	}
}

// Without a policy server or a token, wharf request says what is missing
// (exit 2) and sends nothing.
func TestRequestNeedsAServerAndAToken(t *testing.T) {
	c := newPolicyClient(t, "")
	if code, _, stderr := c.run("request", "tool@corp", "--reason", "x"); code != 2 || !strings.Contains(stderr, "no policy server to ask") {
		t.Fatalf("without a server: exit %d\n%s", code, stderr)
	}
	c.env = append(c.env, "WHARF_POLICY_URL=http://127.0.0.1:1")
	if code, _, stderr := c.run("request", "list"); code != 2 || !strings.Contains(stderr, "no token") {
		t.Fatalf("without a token: exit %d\n%s", code, stderr)
	}
}
