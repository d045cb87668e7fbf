package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// putDataLayer writes, as the admin, the layer that turns lint-kit@demo
// off for the members of data-team.
func putDataLayer(t *testing.T, s *servedWharf) {
	t.Helper()
	body := `{"rank": 1, "target": {"groups": ["data-team"]}, "settings": {"enabledPlugins": {"lint-kit@demo": false}}}`
	req, _ := http.NewRequest("PUT", s.info.URL+"/v1/policy/layers/data", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.info.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("If-None-Match", "*")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("put the targeted layer: %d", res.StatusCode)
	}
}

// checkLintKit runs, as a developer whose home is home and whose token is
// token ("" for the login's), wharf policy pull (with args before it),
// which must name server, then wharf policy check of lint-kit@demo, and
// returns the check's exit code and output (stdout and stderr together).
func checkLintKit(t *testing.T, server, home, token string, args ...string) (int, string) {
	t.Helper()
	env := append(os.Environ(), "WHARF_HOME="+home, "HOME="+filepath.Join(home, "userhome"),
		"WHARF_MANAGED_DIR="+filepath.Join(home, "no-managed"), "WHARF_TOKEN="+token, "WHARF_POLICY_URL=", "WHARF_POLICY_KEY=",
		"WHARF_INVENTORY_INTERVAL=off", "WHARF_SERVER=")
	run := func(more ...string) (int, string) {
		cmd := exec.Command(clientBinary(t), append(append([]string{}, args...), more...)...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, out.String()
	}
	if code, out := run("policy", "pull"); code != 0 || !strings.Contains(out, server) {
		t.Fatalf("policy pull: exit %d %s", code, out)
	}
	return run("policy", "check", "--source", `{"source":"directory","path":"/srv/demo"}`, "lint-kit@demo")
}

// A layer targeted to data-team, end to end with the real commands: the
// admin makes group tokens with wharf token create --group, writes the
// layer through the API, and each developer's wharf pulls its bundle and
// checks the plugin with it: refused (exit 3) for data-team, allowed for
// another group.
func TestTargetedLayerThroughTheClient(t *testing.T) {
	s := launch(t, t.TempDir(), []string{"--demo", ""}, nil)
	admin := s.info.AdminToken
	token := func(group string) string {
		t.Helper()
		code, out, errOut := runWharf(t, t.TempDir(), "token", "create", "--role", "developer", "--group", group, "--server", s.info.URL, "--token", admin, "--json")
		var created struct {
			Token  string   `json:"token"`
			Groups []string `json:"groups"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &created) != nil || len(created.Groups) != 1 || created.Groups[0] != group {
			t.Fatalf("token create --group %s: exit %d %s %s", group, code, out, errOut)
		}
		return created.Token
	}
	data, web := token("data-team"), token("web")
	putDataLayer(t, s)
	if code, out := checkLintKit(t, s.info.URL, t.TempDir(), data, "--policy-url", s.info.URL); code != 3 || !strings.Contains(out, "data") || !strings.Contains(out, "DENIED") {
		t.Fatalf("data-team's wharf policy check lint-kit@demo: exit %d, want 3 (denied by layer data)\n%s", code, out)
	}
	if code, out := checkLintKit(t, s.info.URL, t.TempDir(), web, "--policy-url", s.info.URL); code != 0 || strings.Contains(out, "data (server") {
		t.Fatalf("web's wharf policy check lint-kit@demo: exit %d, want 0 without layer data\n%s", code, out)
	}
	s.stop(t)
}

// The same layer with the groups coming from the identity provider: bo
// (data-team at the provider) runs wharf login, then wharf policy pull and
// wharf policy check with no server flag and no token (the login recorded
// both); the plugin is refused for bo (exit 3, naming the layer) and
// allowed for ada (platform-admins), who went through the same steps.
func TestTargetedLayerThroughLogin(t *testing.T) {
	idp, s := startSSO(t, t.TempDir())
	defer s.stop(t)
	putDataLayer(t, s)
	check := func(user string) (int, string) {
		t.Helper()
		home := t.TempDir()
		if out, errOut := wharfLogin(t, idp, home, s.info.URL, user); !strings.Contains(out, "signed in to "+s.info.URL) {
			t.Fatalf("wharf login as %s:\n%s%s", user, out, errOut)
		}
		return checkLintKit(t, s.info.URL, home, "")
	}
	if code, out := check("bo"); code != 3 || !strings.Contains(out, "data") || !strings.Contains(out, "DENIED") {
		t.Fatalf("bo (data-team)'s wharf policy check lint-kit@demo: exit %d, want 3 (denied by layer data)\n%s", code, out)
	}
	if code, out := check("ada"); code != 0 || strings.Contains(out, "DENIED") {
		t.Fatalf("ada (platform-admins)'s wharf policy check lint-kit@demo: exit %d, want 0\n%s", code, out)
	}
}
