package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/client/collect"
	"github.com/wharfhq/wharf/internal/core/inventory"
)

// reportRecorder is a server taking inventory reports as the agreed wire
// format says (PUT /v1/inventory/machines/{id}, 200 {"changed": bool}).
type reportRecorder struct {
	hs      *httptest.Server
	mu      sync.Mutex
	reports []inventory.Report
	auth    []string
	status  int
	hold    chan struct{} // when set, requests block until it closes
	arrived chan string   // each request's machine id, as it arrives
	next    http.Handler  // other paths
}

func newReportRecorder(t *testing.T, next http.Handler) *reportRecorder {
	r := &reportRecorder{status: 200, arrived: make(chan string, 16), next: next}
	r.hs = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		r.mu.Lock()
		if r.hold != nil {
			select {
			case <-r.hold:
			default:
				close(r.hold)
			}
		}
		r.mu.Unlock()
		r.hs.Close()
	})
	return r
}

func (r *reportRecorder) serve(w http.ResponseWriter, req *http.Request) {
	id, ok := strings.CutPrefix(req.URL.Path, "/v1/inventory/machines/")
	if !ok {
		if r.next != nil {
			r.next.ServeHTTP(w, req)
			return
		}
		http.NotFound(w, req)
		return
	}
	body, _ := io.ReadAll(req.Body)
	r.arrived <- id
	r.mu.Lock()
	hold := r.hold
	r.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-req.Context().Done():
			return
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Method != http.MethodPut {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if r.status != 200 {
		w.WriteHeader(r.status)
		io.WriteString(w, `{"error": {"type": "forbidden", "message": "machine `+id+` reports with another token"}}`)
		return
	}
	var rep inventory.Report
	if err := json.Unmarshal(body, &rep); err != nil || rep.Machine.ID != id {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	changed := len(r.reports) == 0 || collect.Hash(r.reports[len(r.reports)-1]) != collect.Hash(rep)
	r.reports = append(r.reports, rep)
	r.auth = append(r.auth, req.Header.Get("Authorization"))
	json.NewEncoder(w).Encode(map[string]bool{"changed": changed})
}

func (r *reportRecorder) last(t *testing.T) inventory.Report {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reports) == 0 {
		t.Fatal("no report received")
	}
	return r.reports[len(r.reports)-1]
}

func (r *reportRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reports)
}

func pluginIn(rep inventory.Report, id string) (inventory.Plugin, bool) {
	for _, p := range rep.Plugins {
		if p.ID == id {
			return p, true
		}
	}
	return inventory.Plugin{}, false
}

// listed is one row of wharf list --json.
type listed struct {
	ID     string `json:"id"`
	Digest string `json:"digest"`
	Status string `json:"status"`
}

func TestInventoryReportSendsThisHome(t *testing.T) {
	rec := newReportRecorder(t, nil)
	c := newPolicyClient(t, "tok-1")
	corp := localMarketplace(t, t.TempDir(), "corp")
	for _, args := range [][]string{{"marketplace", "add", corp}, {"install", "tool@corp"}} {
		if code, out, stderr := c.run(args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, stderr)
		}
	}
	code, out, stderr := c.run("inventory", "report", "--server", rec.hs.URL, "--json")
	if code != 0 {
		t.Fatalf("report: exit %d\n%s%s", code, out, stderr)
	}
	var res reportResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || !res.Changed || res.Server != rec.hs.URL {
		t.Fatalf("report --json = %+v, %v\n%s", res, err, out)
	}
	rep := rec.last(t)
	idFile, err := os.ReadFile(filepath.Join(c.home, "machine-id"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Machine.ID != strings.TrimSpace(string(idFile)) || !collect.ValidMachineID(rep.Machine.ID) || rep.Machine.Hostname == "" {
		t.Fatalf("machine %+v, id file %q", rep.Machine, idFile)
	}
	if rep.Client.Kind != inventory.KindWharf || rec.auth[0] != "Bearer tok-1" {
		t.Fatalf("client %+v, auth %q", rep.Client, rec.auth)
	}
	var rows []listed
	code, out, _ = c.run("list", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 {
		t.Fatalf("list: %d %s", code, out)
	}
	p, ok := pluginIn(rep, "tool@corp")
	if !ok || p.Version != "1.0.0" || p.Digest != rows[0].Digest || !strings.HasPrefix(p.Digest, "w1:") || p.Scope != "user" ||
		p.Install != inventory.InstallUser || !p.Enabled || p.State != inventory.StateActive {
		t.Fatalf("tool@corp reported as %+v (list digest %s)", p, rows[0].Digest)
	}

	// Disabled: reported as such, under the same machine id; the server
	// hears of a change.
	if code, _, stderr := c.run("disable", "tool@corp"); code != 0 {
		t.Fatal(stderr)
	}
	if code, out, stderr := c.run("inventory", "report", "--server", rec.hs.URL); code != 0 || !strings.Contains(out, "updated") {
		t.Fatalf("second report: exit %d\n%s%s", code, out, stderr)
	}
	again := rec.last(t)
	if again.Machine.ID != rep.Machine.ID {
		t.Fatalf("machine id changed: %s -> %s", rep.Machine.ID, again.Machine.ID)
	}
	if p, _ := pluginIn(again, "tool@corp"); p.Enabled || p.State != inventory.StateDisabled {
		t.Fatalf("disabled plugin reported as %+v", p)
	}
	// The same again: the server says unchanged.
	if code, out, _ := c.run("inventory", "report", "--server", rec.hs.URL); code != 0 || !strings.Contains(out, "unchanged") {
		t.Fatalf("unchanged report: exit %d %s", code, out)
	}
	st := collect.ReadState(filepath.Join(c.home, "inventory-report.json"))
	if st.SentHash != collect.Hash(again) || st.Server != rec.hs.URL || st.Pending != "" {
		t.Fatalf("state after sending: %+v", st)
	}
}

func TestInventoryReportErrors(t *testing.T) {
	rec := newReportRecorder(t, nil)
	c := newPolicyClient(t, "tok-1")
	check := func(name string, wantCode int, wantErr string, env []string, args ...string) {
		t.Helper()
		saved := c.env
		c.env = append(append([]string(nil), c.env...), env...)
		code, out, stderr := c.run(append([]string{"inventory", "report"}, args...)...)
		c.env = saved
		if code != wantCode || !strings.Contains(stderr, wantErr) {
			t.Errorf("%s: exit %d, want %d with %q\n%s%s", name, code, wantCode, wantErr, out, stderr)
		}
	}
	check("no server", 2, "--server", nil)
	check("no token", 2, "WHARF_TOKEN", []string{"WHARF_TOKEN="}, "--server", rec.hs.URL)
	check("bad source", 2, "--from claude", nil, "--from", "cursor", "--server", rec.hs.URL)
	check("bad server URL", 2, "not an http(s) URL", nil, "--server", "ftp://x")
	rec.mu.Lock()
	rec.status = http.StatusForbidden
	rec.mu.Unlock()
	// A 403 is the server refusing the credentials: exit 6 from every command.
	check("another machine's record", 6, "403", nil, "--server", rec.hs.URL)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	check("unreachable", 1, `"type":"server-unreachable"`, []string{"WHARF_JSON=1"}, "--server", closed)
	st := collect.ReadState(filepath.Join(c.home, "inventory-report.json"))
	if st.Pending == "" || !strings.Contains(st.PendingError, "127.0.0.1") {
		t.Fatalf("a failed report is not kept for the next try: %+v", st)
	}
}

func TestInventoryReportFromClaude(t *testing.T) {
	rec := newReportRecorder(t, nil)
	c := newPolicyClient(t, "tok-1")
	dir := filepath.Join(t.TempDir(), ".claude")
	tree := filepath.Join(dir, "plugins", "cache", "m", "p", "2.0.0")
	writeFile(t, filepath.Join(tree, ".claude-plugin", "plugin.json"), `{"name": "p", "version": "2.0.0"}`)
	writeFile(t, filepath.Join(dir, "plugins", "installed_plugins.json"),
		`{"version": 2, "plugins": {"p@m": [{"scope": "user", "installPath": "`+tree+`", "version": "2.0.0", "installedAt": "2026-01-01T00:00:00Z", "lastUpdated": "2026-01-01T00:00:00Z"}]}}`)
	writeFile(t, filepath.Join(dir, "settings.json"), `{"enabledPlugins": {"p@m": true}}`)
	code, out, stderr := c.run("inventory", "report", "--from", "claude", "--claude-home", dir, "--claude-managed-settings", "", "--server", rec.hs.URL)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	rep := rec.last(t)
	p, ok := pluginIn(rep, "p@m")
	if rep.Client.Kind != inventory.KindClaudeCode || !ok || !p.Enabled || p.State != inventory.StateActive || !strings.HasPrefix(p.Digest, "w1:") {
		t.Fatalf("report %+v", rep)
	}
	id, err := os.ReadFile(filepath.Join(dir, collect.ClaudeMachineIDFile))
	if err != nil || strings.TrimSpace(string(id)) != rep.Machine.ID {
		t.Fatalf("claude machine id %q, %v; reported %s", id, err, rep.Machine.ID)
	}
	if _, err := os.Stat(filepath.Join(c.home, "machine-id")); err == nil {
		t.Fatal("a Claude Code report made a machine id for the wharf home")
	}
	code, _, stderr = c.run("inventory", "report", "--from", "claude", "--claude-home", filepath.Join(dir, "missing"), "--server", rec.hs.URL)
	if code != 1 || !strings.Contains(stderr, "not a Claude Code home") {
		t.Fatalf("missing claude home: exit %d %s", code, stderr)
	}
}

// A command whose background report meets a server that never answers
// returns all the same, and the report is sent by a later run.
func TestBackgroundReportNeverHoldsTheCommand(t *testing.T) {
	pol := newPolicyAPI(t)
	rec := newReportRecorder(t, pol.hs.Config.Handler)
	rec.hold = make(chan struct{})
	c := newPolicyClient(t, pol.agent)
	// A report may take up to 10 minutes: a command that waited for one
	// would still be waiting when the test releases the server.
	c.env = append(c.env, "WHARF_POLICY_URL="+rec.hs.URL, "WHARF_INVENTORY_INTERVAL=1ns", "WHARF_INVENTORY_TIMEOUT=10m")
	corp := localMarketplace(t, t.TempDir(), "corp")
	if code, _, stderr := c.run("marketplace", "add", corp); code != 0 {
		t.Fatal(stderr)
	}
	// The install returns while its background report is held by the
	// server: it did not wait for it.
	if code, _, stderr := c.run("install", "tool@corp"); code != 0 {
		t.Fatal(stderr)
	}
	var machine string
	select {
	case machine = <-rec.arrived:
	case <-time.After(60 * time.Second):
		t.Fatal("no background report arrived")
	}
	if rec.count() != 0 {
		t.Fatal("the held report was answered")
	}
	// The server fails the held report (503): it is kept as pending.
	rec.mu.Lock()
	rec.status = http.StatusServiceUnavailable
	close(rec.hold)
	rec.hold = nil
	rec.mu.Unlock()
	state := filepath.Join(c.home, "inventory-report.json")
	waitFor(t, "a pending report", func() bool { return collect.ReadState(state).Pending != "" })
	if st := collect.ReadState(state); st.SentHash != "" {
		t.Fatalf("state %+v", st)
	}
	// The server answers again; the next command's report sends it.
	rec.mu.Lock()
	rec.status = http.StatusOK
	rec.mu.Unlock()
	if code, _, stderr := c.run("list"); code != 0 {
		t.Fatal(stderr)
	}
	waitFor(t, "the pending report sent", func() bool {
		st := collect.ReadState(state)
		return st.Pending == "" && st.SentHash != ""
	})
	rep := rec.last(t)
	if rep.Machine.ID != machine {
		t.Fatalf("machine %s, first attempt %s", rep.Machine.ID, machine)
	}
	if p, ok := pluginIn(rep, "tool@corp"); !ok || p.State != inventory.StateActive {
		t.Fatalf("report %+v", rep)
	}
	// Unchanged since: a later run sends nothing.
	n := rec.count()
	if code, _, stderr := c.run("list"); code != 0 {
		t.Fatal(stderr)
	}
	checked := collect.ReadState(state).Checked
	waitFor(t, "the next background check", func() bool { return collect.ReadState(state).Checked.After(checked) })
	waitIdle(t, c.home)
	if rec.count() != n {
		t.Fatalf("an unchanged inventory was sent again (%d reports, was %d)", rec.count(), n)
	}
	// With reports off, nothing runs at all.
	c.env = append(c.env, "WHARF_INVENTORY_INTERVAL=off")
	before := collect.ReadState(state).Checked
	if code, _, stderr := c.run("list"); code != 0 {
		t.Fatal(stderr)
	}
	waitIdle(t, c.home)
	if !collect.ReadState(state).Checked.Equal(before) {
		t.Fatalf("a report ran with inventory.interval off: %+v, before %v, reports %d", collect.ReadState(state), before, rec.count())
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitIdle waits until no report holds the home's report lock.
func waitIdle(t *testing.T, home string) {
	t.Helper()
	waitFor(t, "the running report to end", func() bool {
		unlock, ok, _ := collect.TryLock(filepath.Join(home, "inventory-report.lock"))
		if ok {
			unlock()
		}
		return ok
	})
}

// An agent session's load starts a background report of kind wharf-agent
// that names its session plugin dirs as sideloaded.
func TestAgentSessionReportsInBackground(t *testing.T) {
	pol := newPolicyAPI(t)
	rec := newReportRecorder(t, pol.hs.Config.Handler)
	c := newPolicyClient(t, pol.agent)
	c.env = append(c.env, "WHARF_POLICY_URL="+rec.hs.URL, "WHARF_INVENTORY_INTERVAL=1h")
	corp := localMarketplace(t, t.TempDir(), "corp")
	for _, args := range [][]string{{"marketplace", "add", corp}, {"install", "tool@corp"}} {
		if code, _, stderr := c.run(args...); code != 0 {
			t.Fatal(stderr)
		}
	}
	// The install reported already (a fresh home is due); the session's
	// report is due again once the interval is over.
	waitFor(t, "the install's report", func() bool { return rec.count() == 1 })
	waitIdle(t, c.home)
	state := filepath.Join(c.home, "inventory-report.json")
	st := collect.ReadState(state)
	st.Checked = st.Checked.Add(-2 * time.Hour)
	if err := st.Write(state); err != nil {
		t.Fatal(err)
	}
	side := filepath.Join(t.TempDir(), "side")
	writeFile(t, filepath.Join(side, ".claude-plugin", "plugin.json"), `{"name": "side", "version": "0.1.0"}`)
	if code, _, stderr := c.run("agent", "serve", "--stdio", "--no-mcp", "--plugin-dir", side); code != 0 {
		t.Fatalf("agent serve: exit %d %s", code, stderr)
	}
	waitFor(t, "the session's report", func() bool { return rec.count() == 2 })
	rep := rec.last(t)
	if rep.Client.Kind != inventory.KindWharfAgent {
		t.Fatalf("kind %q, want %s", rep.Client.Kind, inventory.KindWharfAgent)
	}
	p, ok := pluginIn(rep, "side@"+"inline")
	if !ok || p.Install != inventory.InstallSideloaded || p.Version != "0.1.0" || !strings.HasPrefix(p.Digest, "w1:") {
		t.Fatalf("sideloaded plugin reported as %+v (%v)", p, rep.Plugins)
	}
	if _, ok := pluginIn(rep, "tool@corp"); !ok {
		t.Fatalf("installed plugin missing: %v", rep.Plugins)
	}
}
