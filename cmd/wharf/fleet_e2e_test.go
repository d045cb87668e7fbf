package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/server/api"
	"github.com/wharfhq/wharf/internal/server/fleet"
	"github.com/wharfhq/wharf/internal/testutil/claudetest"
)

// fleetMarketplace is a directory marketplace "corp" with three plugins.
func fleetMarketplace(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "corp")
	var entries []string
	for _, name := range []string{"alpha", "beta", "gamma"} {
		entries = append(entries, fmt.Sprintf(`{"name": %q, "source": "./plugins/%s", "version": "1.0.0"}`, name, name))
		writeFile(t, filepath.Join(root, "plugins", name, ".claude-plugin", "plugin.json"), fmt.Sprintf(`{"name": %q, "version": "1.0.0"}`, name))
		writeFile(t, filepath.Join(root, "plugins", name, "commands", name+".md"), "# "+name+"\n")
	}
	writeFile(t, filepath.Join(root, ".claude-plugin", "marketplace.json"),
		`{"name": "corp", "owner": {"name": "t"}, "plugins": [`+strings.Join(entries, ",")+`]}`)
	return root
}

// holders asks the server who has plugin corp/name: machine id to the
// states it reports.
func holders(srv *policyAPI, name string) map[string][]string {
	var page api.PluginMachines
	srv.call("GET", "/v1/inventory/plugins/corp/"+name, "", nil, http.StatusOK, &page)
	out := map[string][]string{}
	for _, m := range page.Machines {
		for _, in := range m.Installs {
			out[m.Machine] = append(out[m.Machine], in.State)
		}
	}
	return out
}

func machineOf(t *testing.T, home string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, "machine-id"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func keys(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sorted(s ...string) []string { sort.Strings(s); return s }

// Three machines report their installs; "who has beta" is exactly the two
// that have it; a revocation of beta reaches them through the signed
// bundle: after their next refresh and report none reports it active,
// install refuses it (3), verify rejects it (4), the Claude Code export
// forces it off. A Claude Code home installed with the claude CLI reports
// as claude-code.
func TestFleetInventoryAndRevocationEndToEnd(t *testing.T) {
	srv := newPolicyAPI(t)
	corp := fleetMarketplace(t)
	installs := [][]string{{"alpha", "beta"}, {"beta"}, {"gamma"}}
	var clients []*policyClient
	for i, names := range installs {
		var tok struct {
			Token string `json:"token"`
		}
		// The last client also reports a Claude Code home below, which the
		// inventory counts as a machine of its own: its token is for two.
		req := map[string]any{"role": "agent"}
		if i == len(installs)-1 {
			req["maxMachines"] = 2
		}
		srv.call("POST", "/v1/tokens", "", req, http.StatusCreated, &tok)
		c := newPolicyClient(t, tok.Token)
		c.env = append(c.env, "WHARF_POLICY_URL="+srv.hs.URL)
		if code, out, stderr := c.run("marketplace", "add", corp); code != 0 {
			t.Fatalf("client %d: marketplace add: exit %d\n%s%s", i, code, out, stderr)
		}
		for _, n := range names {
			if code, out, stderr := c.run("install", n+"@corp"); code != 0 {
				t.Fatalf("client %d: install %s: exit %d\n%s%s", i, n, code, out, stderr)
			}
		}
		if code, out, stderr := c.run("inventory", "report"); code != 0 || !strings.Contains(out, "updated") {
			t.Fatalf("client %d: report: exit %d\n%s%s", i, code, out, stderr)
		}
		clients = append(clients, c)
	}
	m := []string{machineOf(t, clients[0].home), machineOf(t, clients[1].home), machineOf(t, clients[2].home)}

	// Who has beta: exactly the first two machines, active.
	got := holders(srv, "beta")
	if want := sorted(m[0], m[1]); strings.Join(keys(got), ",") != strings.Join(want, ",") {
		t.Fatalf("who has beta = %v, want %v", keys(got), want)
	}
	for id, states := range got {
		if strings.Join(states, ",") != inventory.StateActive {
			t.Fatalf("%s reports beta as %v before any revocation", id, states)
		}
	}
	if got := holders(srv, "gamma"); strings.Join(keys(got), ",") != m[2] {
		t.Fatalf("who has gamma = %v, want %s", keys(got), m[2])
	}

	// The admin revokes beta 1.0.0.
	var rv api.RevocationWriteResult
	srv.call("POST", "/v1/revocations", "", map[string]string{"plugin": "beta@corp", "version": "1.0.0", "reason": "leaks tokens"}, http.StatusCreated, &rv)
	var conv api.RevocationStatus
	srv.call("GET", "/v1/revocations/"+rv.Revocation.ID, "", nil, http.StatusOK, &conv)
	if conv.Active != 2 {
		t.Fatalf("before the clients refresh, %d machines report beta active, want 2", conv.Active)
	}

	// Each client's next command pulls the new bundle; its report says
	// revoked, with the reason.
	for i, c := range clients {
		if code, out, stderr := c.run("inventory", "report", "--json"); code != 0 {
			t.Fatalf("client %d: report after the revocation: exit %d\n%s%s", i, code, out, stderr)
		}
	}
	for id, states := range holders(srv, "beta") {
		if strings.Join(states, ",") != inventory.StateRevoked {
			t.Fatalf("%s reports beta as %v after its refresh, want revoked", id, states)
		}
	}
	srv.call("GET", "/v1/revocations/"+rv.Revocation.ID, "", nil, http.StatusOK, &conv)
	if conv.Active != 0 {
		t.Fatalf("after every client's report, %d machines still report beta active", conv.Active)
	}
	var mi fleet.MachineInfo
	srv.call("GET", "/v1/inventory/machines/"+m[1], "", nil, http.StatusOK, &mi)
	if p, _ := pluginIn(mi.Report, "beta@corp"); !strings.Contains(p.Reason, "leaks tokens") || !strings.Contains(p.Reason, rv.Revocation.ID) {
		t.Fatalf("beta's reason on %s: %q", m[1], p.Reason)
	}

	// wharf list on a machine that has it says why it is not loaded, in
	// the words the inventory report, install and verify use too.
	oneText := "beta@corp 1.0.0 is revoked by revocation " + rv.Revocation.ID + " (beta@corp 1.0.0): leaks tokens"
	oneHint := "ask an administrator to lift revocation " + rv.Revocation.ID + " on the policy server"
	if p, _ := pluginIn(mi.Report, "beta@corp"); !strings.HasSuffix(oneText, p.Reason) {
		t.Fatalf("beta's reason on %s: %q, want the end of %q", m[1], p.Reason, oneText)
	}
	if code, out, stderr := clients[1].run("list"); code != 0 || !strings.Contains(out, oneText) {
		t.Fatalf("list after the revocation: exit %d, want %q\n%s%s", code, oneText, out, stderr)
	}

	// The third machine cannot install it: exit 3, with reason and id.
	code, out, stderr := clients[2].run("install", "beta@corp")
	if code != 3 || !strings.Contains(stderr, oneText) || !strings.Contains(stderr, oneHint) {
		t.Fatalf("install of a revoked version: exit %d, want %q and %q\n%s%s", code, oneText, oneHint, out, stderr)
	}
	// Verify rejects the installed copy: exit 4.
	code, out, stderr = clients[0].run("verify", "beta@corp")
	if code != 4 || !strings.Contains(stderr, "leaks tokens") || !strings.Contains(stderr, rv.Revocation.ID) {
		t.Fatalf("verify of a revoked version: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := clients[0].run("verify", "alpha@corp"); code != 0 {
		t.Fatalf("verify of alpha: exit %d\n%s%s", code, out, stderr)
	}
	// The Claude Code export forces it off.
	code, out, stderr = clients[0].run("policy", "export", "--format", "claude")
	var exported struct {
		EnabledPlugins map[string]bool `json:"enabledPlugins"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &exported) != nil || exported.EnabledPlugins["beta@corp"] || !hasFalse(exported.EnabledPlugins, "beta@corp") {
		t.Fatalf("export: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "forced off") {
		t.Fatalf("export does not say why beta is off: %s", stderr)
	}

	// The admin lifts the revocation: the policy is back to what it was
	// before, under a later revision, which clients take (not a rollback);
	// beta loads again and reports active.
	srv.call("DELETE", "/v1/revocations/"+rv.Revocation.ID, "", nil, http.StatusOK, nil)
	if code, out, stderr := clients[1].run("list"); code != 0 || strings.Contains(out, "revoked") {
		t.Fatalf("list after the revocation was lifted: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := clients[1].run("inventory", "report", "--json"); code != 0 {
		t.Fatalf("report after the lift: exit %d\n%s%s", code, out, stderr)
	}
	if states := holders(srv, "beta")[m[1]]; strings.Join(states, ",") != inventory.StateActive {
		t.Fatalf("%s reports beta as %v after the lift, want active", m[1], states)
	}

	// A machine cannot write another's record: the first client's id with
	// the second client's token is refused.
	other := *clients[1]
	other.home = t.TempDir()
	other.env = append(append([]string(nil), clients[1].env...), "WHARF_HOME="+other.home)
	writeFile(t, filepath.Join(other.home, "machine-id"), m[0]+"\n")
	if code, _, stderr := other.run("inventory", "report"); code != 6 || !strings.Contains(stderr, "403") {
		t.Fatalf("a report for another token's machine: exit %d %s", code, stderr)
	}

	// A real Claude Code home, installed with the claude CLI.
	claude := claudeCLI(t)
	if claude == "" {
		return
	}
	// A channel test may be writing Claude Code's system managed settings.
	claudetest.Lock(t, false)
	chome := t.TempDir()
	var cenv []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CLAUDE_CONFIG_DIR=") {
			cenv = append(cenv, kv)
		}
	}
	cenv = append(cenv, "HOME="+chome, "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	for _, args := range [][]string{{"plugin", "marketplace", "add", corp}, {"plugin", "install", "gamma@corp"}} {
		cmd := exec.Command(claude, args...)
		cmd.Env, cmd.Dir = cenv, chome
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("claude %v: %v\n%s", args, err, out)
		}
	}
	c := clients[2]
	code, out, stderr = c.run("inventory", "report", "--from", "claude", "--claude-home", filepath.Join(chome, ".claude"), "--claude-managed-settings", "", "--json")
	if code != 0 {
		t.Fatalf("report --from claude: exit %d\n%s%s", code, out, stderr)
	}
	var res reportResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	srv.call("GET", "/v1/inventory/machines/"+res.Report.Machine.ID, "", nil, http.StatusOK, &mi)
	p, ok := pluginIn(mi.Report, "gamma@corp")
	if mi.Report.Client.Kind != inventory.KindClaudeCode || !ok || p.State != inventory.StateActive || p.Version != "1.0.0" || !strings.HasPrefix(p.Digest, "w1:") {
		t.Fatalf("the Claude Code machine on the server: %+v", mi.Report)
	}
	// The same tree as wharf's install of gamma: the same digest.
	var third fleet.MachineInfo
	srv.call("GET", "/v1/inventory/machines/"+m[2], "", nil, http.StatusOK, &third)
	if q, _ := pluginIn(third.Report, "gamma@corp"); q.Digest != p.Digest {
		t.Fatalf("gamma's digest: claude %s, wharf %s", p.Digest, q.Digest)
	}
	if got := holders(srv, "gamma"); strings.Join(keys(got), ",") != strings.Join(sorted(m[2], res.Report.Machine.ID), ",") {
		t.Fatalf("who has gamma = %v", keys(got))
	}
}

func hasFalse(m map[string]bool, k string) bool { v, ok := m[k]; return ok && !v }

// claudeCLI finds the real claude CLI: WHARF_CLAUDE, else claude on PATH.
// It skips the rest of the test when there is none, unless
// WHARF_REQUIRE_CLAUDE=1; then it fails. "" means skipped.
func claudeCLI(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("WHARF_CLAUDE"); p != "" {
		return p
	}
	if p, err := exec.LookPath("claude"); err == nil {
		return p
	}
	if os.Getenv("WHARF_REQUIRE_CLAUDE") == "1" {
		t.Fatal("the claude CLI is required (WHARF_REQUIRE_CLAUDE=1): set WHARF_CLAUDE or put claude on PATH")
	}
	t.Log("skipping the Claude Code part: no claude CLI (set WHARF_CLAUDE or put claude on PATH)")
	return ""
}
