package collect

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func errType(err error) string {
	var pe *plugin.Error
	if errors.As(err, &pe) {
		return pe.Type
	}
	return ""
}

func TestMachineIDIsCreatedOnceAndKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "home", "machine-id")
	// Processes starting at once on a fresh home agree on one id.
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := MachineID(path)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || !ValidMachineID(id) {
			t.Fatalf("ids = %v, want one valid id", ids)
		}
	}
	again, err := MachineID(path)
	if err != nil || again != ids[0] {
		t.Fatalf("second read = %q, %v; want %q", again, err, ids[0])
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
		}
	}
	other, err := MachineID(filepath.Join(t.TempDir(), "machine-id"))
	if err != nil || other == ids[0] {
		t.Fatalf("another home got %q, %v; want a different id", other, err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tmp"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestMachineIDRefusesAFileThatIsNotOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "machine-id")
	writeFile(t, path, "hello\n")
	_, err := MachineID(path)
	if errType(err) != TypeMachineID || !strings.Contains(err.Error(), path) || plugin.HintOf(err) == "" {
		t.Fatalf("err = %v (type %q); want %s naming the file, with a hint", err, errType(err), TypeMachineID)
	}
	if b, _ := os.ReadFile(path); string(b) != "hello\n" {
		t.Fatalf("the file was rewritten: %q", b)
	}
}

func TestFromStatusMapsLoaderStatesAndRevocations(t *testing.T) {
	id := func(s string) plugin.ID { p, _ := plugin.ParseID(s); return p }
	rows := []load.Row{
		{ID: id("a@m"), Version: "1.0.0", Scope: "user", Enabled: true, Status: load.StatusActive, Digest: "w1:aaa"},
		{ID: id("b@m"), Version: "2.0.0", Scope: "user", Enabled: true, Auto: true, Status: load.StatusDemoted, Chain: "a@m needs b@m; b@m is failed"},
		{ID: id("c@m"), Version: "3.0.0", Scope: "project", Enabled: true, Forced: "on", Status: load.StatusFailed, Errors: []string{"digest mismatch"}},
		{ID: id("d@m"), Version: "4.0.0", Scope: "user", Status: load.StatusDisabled},
		{ID: id("e@m"), Version: "5.0.0", Scope: "user", Enabled: true, Status: load.StatusActive, Digest: "w1:bad"},
	}
	revs := policy.Revocations{
		{ID: "r1", Plugin: "a@m", Version: "1.0.0", Reason: "malicious"},
		{ID: "r2", Digest: "w1:bad", Reason: "broken build"},
		{ID: "r3", Plugin: "d@m", Version: "9.9.9", Reason: "other version"},
	}
	got := FromStatus(rows, revs)
	want := []struct{ state, install, reason string }{
		{inventory.StateRevoked, inventory.InstallUser, "revoked by revocation r1 (a@m 1.0.0): malicious"},
		{inventory.StateDemoted, inventory.InstallDependency, "a@m needs b@m; b@m is failed"},
		{inventory.StateFailed, inventory.InstallManaged, "digest mismatch"},
		{inventory.StateDisabled, inventory.InstallUser, ""},
		{inventory.StateRevoked, inventory.InstallUser, "revoked by revocation r2 (digest w1:bad): broken build"},
	}
	for i, w := range want {
		g := got[i]
		if g.State != w.state || g.Install != w.install || g.Reason != w.reason {
			t.Errorf("%s: state %q install %q reason %q; want %q %q %q", g.ID, g.State, g.Install, g.Reason, w.state, w.install, w.reason)
		}
	}
	if got[0].Digest != "w1:aaa" || got[2].Scope != "project" || got[3].Enabled {
		t.Fatalf("fields not carried: %+v", got)
	}
}

func TestHashIgnoresCreationTimeOnly(t *testing.T) {
	m := inventory.Machine{ID: "m-0123456789abcdef0123456789abcdef"}
	p := []inventory.Plugin{{ID: "a@m", Version: "1", State: inventory.StateActive}}
	a := New(m, inventory.KindWharf, p, time.Unix(1, 0))
	b := New(m, inventory.KindWharf, append([]inventory.Plugin(nil), p...), time.Unix(2, 0))
	if Hash(a) != Hash(b) {
		t.Fatal("reports differing only in Created hash differently")
	}
	b.Plugins[0].State = inventory.StateRevoked
	if Hash(a) == Hash(b) {
		t.Fatal("a changed state does not change the hash")
	}
}

// claudeHome lays out a Claude Code home as the claude CLI writes it.
func claudeHome(t *testing.T) (Claude, map[string]string) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, ".claude")
	project := filepath.Join(root, "proj")
	trees := map[string]string{}
	tree := func(mkt, name, version string) string {
		p := filepath.Join(dir, "plugins", "cache", mkt, name, version)
		writeFile(t, filepath.Join(p, ".claude-plugin", "plugin.json"), fmt.Sprintf(`{"name": %q, "version": %q}`, name, version))
		writeFile(t, filepath.Join(p, "commands", "x.md"), "# "+name)
		d, err := trust.Digest(p)
		if err != nil {
			t.Fatal(err)
		}
		trees[name] = d.Digest
		return p
	}
	entry := func(scope, path, version, extra string) string {
		return fmt.Sprintf(`{"scope": %q, "installPath": %q, "version": %q, "installedAt": "2026-01-02T03:04:05.000Z", "lastUpdated": "2026-01-02T03:04:05.000Z"%s}`, scope, path, version, extra)
	}
	outside := filepath.Join(root, "elsewhere")
	writeFile(t, filepath.Join(outside, "f"), "x")
	installed := fmt.Sprintf(`{"version": 2, "plugins": {
		"alpha@mk": [%s],
		"beta@mk": [%s],
		"gamma@mk": [%s],
		"delta@mk": [%s],
		"gone@mk": [%s],
		"out@mk": [%s],
		"forced@mk": [%s]
	}}`,
		entry("user", tree("mk", "alpha", "1.0.0"), "1.0.0", ""),
		entry("user", tree("mk", "beta", "2.0.0"), "2.0.0", `, "auto": true`),
		entry("project", tree("mk", "gamma", "3.0.0"), "3.0.0", fmt.Sprintf(`, "projectPath": %q`, project)),
		entry("local", tree("mk", "delta", "4.0.0"), "4.0.0", fmt.Sprintf(`, "projectPath": %q`, project)),
		entry("user", filepath.Join(dir, "plugins", "cache", "mk", "gone", "1.0.0"), "1.0.0", ""),
		entry("user", outside, "1.0.0", ""),
		entry("user", tree("mk", "forced", "1.0.0"), "1.0.0", ""),
	)
	writeFile(t, filepath.Join(dir, "plugins", "installed_plugins.json"), installed)
	writeFile(t, filepath.Join(dir, "settings.json"), `{"enabledPlugins": {"alpha@mk": true, "beta@mk": true, "gamma@mk": true, "delta@mk": true, "gone@mk": true, "out@mk": true, "forced@mk": false, "bad id": true}}`)
	writeFile(t, filepath.Join(project, ".claude", "settings.json"), `{"enabledPlugins": {"gamma@mk": false}}`)
	writeFile(t, filepath.Join(project, ".claude", "settings.local.json"), `{"enabledPlugins": {"delta@mk": true}}`)
	managed := filepath.Join(root, "managed-settings.json")
	writeFile(t, managed, `{"enabledPlugins": {"forced@mk": true}}`)
	return Claude{Dir: dir, ManagedFile: managed}, trees
}

func TestClaudeReadReportsEachInstallWithItsDigest(t *testing.T) {
	c, trees := claudeHome(t)
	got, warns, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]inventory.Plugin{}
	for _, p := range got {
		by[p.ID] = p
	}
	check := func(id, scope, inst string, enabled bool, state string) {
		t.Helper()
		p, ok := by[id]
		if !ok {
			t.Fatalf("%s not reported: %+v", id, got)
		}
		if p.Scope != scope || p.Install != inst || p.Enabled != enabled || p.State != state {
			t.Errorf("%s = %+v; want scope %s install %s enabled %v state %s", id, p, scope, inst, enabled, state)
		}
	}
	check("alpha@mk", "user", inventory.InstallUser, true, inventory.StateActive)
	check("beta@mk", "user", inventory.InstallDependency, true, inventory.StateActive)
	check("gamma@mk", "project", inventory.InstallUser, false, inventory.StateDisabled) // the project turns it off
	check("delta@mk", "local", inventory.InstallUser, true, inventory.StateActive)
	check("gone@mk", "user", inventory.InstallUser, true, inventory.StateFailed)
	check("out@mk", "user", inventory.InstallUser, true, inventory.StateFailed)
	check("forced@mk", "user", inventory.InstallManaged, true, inventory.StateActive)
	for _, n := range []string{"alpha", "beta", "gamma", "delta", "forced"} {
		if by[n+"@mk"].Digest != trees[n] {
			t.Errorf("%s digest %q, want %q", n, by[n+"@mk"].Digest, trees[n])
		}
	}
	if by["out@mk"].Digest != "" || !strings.Contains(by["out@mk"].Reason, "outside") {
		t.Errorf("an installPath outside the plugin directory was hashed: %+v", by["out@mk"])
	}
	if !strings.Contains(strings.Join(warns, "\n"), `enabledPlugins["bad id"]`) {
		t.Errorf("warnings %q do not name the bad enabledPlugins key", warns)
	}
}

func TestClaudeReadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := (Claude{Dir: filepath.Join(dir, "none")}).Read(); errType(err) != TypeClaudeState {
		t.Fatalf("missing home: err = %v, want %s", err, TypeClaudeState)
	}
	// A home without installed_plugins.json has no plugins.
	got, _, err := (Claude{Dir: dir}).Read()
	if err != nil || len(got) != 0 {
		t.Fatalf("empty home = %v, %v", got, err)
	}
	for _, tc := range []struct{ doc, field string }{
		{`[]`, "expected shape"},
		{`{"version": 3, "plugins": {}}`, "version"},
		{`{"version": 2, "plugins": {"a@m": {"scope": "user"}}}`, `plugins["a@m"]`},
	} {
		writeFile(t, filepath.Join(dir, "plugins", "installed_plugins.json"), tc.doc)
		_, _, err := (Claude{Dir: dir}).Read()
		if errType(err) != TypeClaudeState || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "installed_plugins.json") {
			t.Errorf("%s: err = %v; want %s naming the file and %s", tc.doc, err, TypeClaudeState, tc.field)
		}
	}
	// An entry wrong on its own is left out with a warning.
	writeFile(t, filepath.Join(dir, "plugins", "installed_plugins.json"), `{"version": 2, "plugins": {"a@m": [{"scope": "user", "version": "../x"}], "Bad": []}}`)
	got, warns, err := (Claude{Dir: dir}).Read()
	if err != nil || len(got) != 0 || len(warns) != 2 {
		t.Fatalf("got %v, warnings %q, %v; want nothing and two warnings", got, warns, err)
	}
}

func FuzzParseClaudeInstalled(f *testing.F) {
	f.Add([]byte(`{"version": 2, "plugins": {"a@m": [{"scope": "user", "installPath": "/x", "version": "1.0.0"}]}}`))
	f.Add([]byte(`{"version": 1, "plugins": {"a@m": {"scope": "project", "projectPath": "/p", "installPath": "/x", "version": "1.0.0", "auto": true}}}`))
	f.Add([]byte(`{"version": 2, "plugins": {"a@m": [], "b": null}}`))
	f.Add([]byte(`{"version": 2}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, _, err := ParseClaudeInstalled("installed_plugins.json", b)
		if err != nil {
			if errType(err) != TypeClaudeState {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, g := range got {
			if g.ID.Validate() != nil || !scopeRE(g.Scope) {
				t.Fatalf("accepted an invalid entry %+v", g)
			}
			if _, err := plugin.SanitizeVersion(g.Version); err != nil {
				t.Fatalf("accepted version %q: %v", g.Version, err)
			}
		}
	})
}

func FuzzParseClaudeEnabled(f *testing.F) {
	f.Add([]byte(`{"enabledPlugins": {"a@m": true, "b@m": false}}`))
	f.Add([]byte(`{"enabledPlugins": {"a@m": "yes", "nope": true}}`))
	f.Add([]byte(``))
	f.Add([]byte(`{"enabledPlugins": []}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, _, err := ParseClaudeEnabled("settings.json", b)
		if err != nil {
			if errType(err) != TypeClaudeState {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for id := range got {
			if id.Validate() != nil {
				t.Fatalf("accepted id %q", id)
			}
		}
	})
}

func TestSendPutsTheReportAndReadsChanged(t *testing.T) {
	var got inventory.Report
	var path, auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, auth = r.Method+" "+r.URL.Path, r.Header.Get("Authorization")
		json.NewDecoder(r.Body).Decode(&got)
		fmt.Fprint(w, `{"changed": true}`)
	}))
	defer srv.Close()
	r := New(inventory.Machine{ID: "m-0123456789abcdef0123456789abcdef"}, inventory.KindWharf, []inventory.Plugin{{ID: "a@m", Scope: "user", Install: inventory.InstallUser, State: inventory.StateActive}}, time.Now())
	changed, err := Send(t.Context(), nil, srv.URL+"/", "tok", r)
	if err != nil || !changed {
		t.Fatalf("Send = %v, %v", changed, err)
	}
	if path != "PUT /v1/inventory/machines/m-0123456789abcdef0123456789abcdef" || auth != "Bearer tok" || got.Plugins[0].ID != "a@m" {
		t.Fatalf("server saw %s %q %+v", path, auth, got)
	}
}

func TestSendErrors(t *testing.T) {
	r := New(inventory.Machine{ID: "m-0123456789abcdef0123456789abcdef"}, inventory.KindWharf, nil, time.Now())
	status := 403
	body := `{"error": {"message": "machine is bound to another token"}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	_, err := Send(t.Context(), nil, srv.URL, "tok", r)
	if errType(err) != TypeReportRefused || !strings.Contains(err.Error(), "bound to another token") || plugin.LayerOf(err) != plugin.LayerIntent {
		t.Fatalf("403: %v", err)
	}
	if strings.Contains(plugin.HintOf(err), "quota") {
		t.Fatalf("403 machine-owned hints at the quota: %s", plugin.HintOf(err))
	}
	// Past the token's quota: the hint says so, and not to make a new machine.
	body = `{"error": {"code": "quota-exceeded", "message": "token tok_1 may report 1 machine(s) and has reported 1"}}`
	_, err = Send(t.Context(), nil, srv.URL, "tok", r)
	if h := plugin.HintOf(err); !strings.Contains(h, "quota is used up") || strings.Contains(h, "machine-id") || !strings.Contains(err.Error(), "may report 1 machine") {
		t.Fatalf("403 quota-exceeded: %v (hint %q)", err, h)
	}
	status, body = 200, `{}`
	if _, err := Send(t.Context(), nil, srv.URL, "tok", r); errType(err) != TypeReportRefused {
		t.Fatalf("200 without changed: %v", err)
	}
	// A report the server would refuse is not sent.
	bad := r
	bad.Plugins = []inventory.Plugin{{ID: "a@m", Digest: "sha1:nope", Scope: "user", Install: inventory.InstallUser, State: inventory.StateActive}}
	status = 200
	if _, err := Send(t.Context(), nil, srv.URL, "tok", bad); errType(err) != TypeReportRefused || !strings.Contains(err.Error(), "plugins[0].digest") {
		t.Fatalf("invalid report: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = Send(t.Context(), nil, "http://"+addr, "tok", r)
	if errType(err) != TypeServerUnreachable || !IsUnreachable(err) {
		t.Fatalf("closed port: %v", err)
	}
}

func TestStateKeepsAFailedReportUntilItIsSent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inventory-report.json")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := ReadState(path)
	if !s.Due(now, time.Hour) || s.Due(now, 0) {
		t.Fatal("a fresh home must be due, and never with reports off")
	}
	s.Checked = now
	s.Failed("sha256:1", now, errors.New("connection refused"))
	if err := s.Write(path); err != nil {
		t.Fatal(err)
	}
	s = ReadState(path)
	if s.Pending != "sha256:1" || s.Unchanged("http://s", "sha256:1", now) || s.Due(now.Add(time.Minute), time.Hour) || !s.Due(now.Add(time.Hour), time.Hour) {
		t.Fatalf("after a failure: %+v", s)
	}
	s.Sent("http://s", "sha256:1", now)
	if !s.Unchanged("http://s", "sha256:1", now.Add(time.Hour)) || s.Unchanged("http://other", "sha256:1", now) || s.Pending != "" {
		t.Fatalf("after sending: %+v", s)
	}
	// A day later the same inventory goes again, so that the server still
	// sees the machine and never counts it stale.
	if s.Unchanged("http://s", "sha256:1", now.Add(Heartbeat)) || s.Unchanged("http://s", "sha256:1", now.Add(-time.Hour)) {
		t.Fatalf("an unchanged report sent a day ago (or in the future) must be sent again: %+v", s)
	}
	unlock, ok, err := TryLock(filepath.Join(filepath.Dir(path), "inventory-report.lock"))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok2, _ := TryLock(filepath.Join(filepath.Dir(path), "inventory-report.lock")); ok2 {
		t.Fatal("a second report took the lock")
	}
	unlock()
}

// TestClaudeDigestLeavesOutTheLease: Claude Code keeps a lease directory
// .in_use (one file per session using the version) and an .orphaned_at mark
// at the top of each cached version; the reported digest is the plugin's
// own, the same as before the lease, so the fleet matches it with the
// version's published digest. A file of that name deeper in the plugin is
// the plugin's and counts.
func TestClaudeDigestLeavesOutTheLease(t *testing.T) {
	c, trees := claudeHome(t)
	alpha := filepath.Join(c.Dir, "plugins", "cache", "mk", "alpha", "1.0.0")
	writeFile(t, filepath.Join(alpha, ".in_use", "4242.json"), `{"pid":4242,"procStart":"x"}`)
	writeFile(t, filepath.Join(alpha, ".orphaned_at"), "1767323045000")
	beta := filepath.Join(c.Dir, "plugins", "cache", "mk", "beta", "2.0.0")
	writeFile(t, filepath.Join(beta, "docs", ".in_use", "note"), "the plugin's own file")
	got, _, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range got {
		switch p.ID {
		case "alpha@mk":
			if p.Digest != trees["alpha"] || p.State != inventory.StateActive {
				t.Errorf("alpha with a lease: digest %q state %s; want %q active", p.Digest, p.State, trees["alpha"])
			}
		case "beta@mk":
			if p.Digest == trees["beta"] || p.Digest == "" {
				t.Errorf("beta: a nested .in_use of the plugin was left out of its digest (%q)", p.Digest)
			}
		}
	}
}

// A plugin enabled but not installed (the load pass's row) is reported
// failed, with the loader's message, at the scope that enables it (a
// session's --settings counts as local), in a report the server accepts.
func TestFromStatusReportsEnabledButNotInstalled(t *testing.T) {
	var rows []load.Row
	for _, c := range []struct{ id, scope, forced string }{{"ghost@m", "project", ""}, {"flagged@m", "flag", ""}, {"pushed@m", "managed", "on"}} {
		id := plugin.MustParseID(c.id)
		r := load.NewRow(id)
		r.Enabled, r.Scope, r.Forced, r.Status = true, c.scope, c.forced, load.StatusFailed
		r.AddError(load.NotInstalledError(id))
		rows = append(rows, r)
	}
	got := FromStatus(rows, nil)
	want := []struct{ scope, install string }{{"project", inventory.InstallUser}, {"local", inventory.InstallUser}, {"managed", inventory.InstallManaged}}
	for i, w := range want {
		g := got[i]
		if g.State != inventory.StateFailed || g.Scope != w.scope || g.Install != w.install || g.Version != "" ||
			!strings.Contains(g.Reason, g.ID+" is enabled but not installed") {
			t.Errorf("%s: %+v, want failed at scope %s, install %s, not installed", g.ID, g, w.scope, w.install)
		}
	}
	rep := New(inventory.Machine{ID: "m-0123456789abcdef0123456789abcdef"}, inventory.KindWharf, got, time.Now())
	if err := inventory.Validate(&rep); err != nil {
		t.Fatalf("the report of a home with plugins enabled but not installed is refused: %v", err)
	}
}

func TestMCPRecordReadsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "mcp-tools.json")
	if got, err := ReadMCP(path); err != nil || got != nil {
		t.Fatalf("nothing recorded: %v %v", got, err)
	}
	h := "mcp1:" + strings.Repeat("0", 64)
	in := []inventory.MCPServer{{Plugin: "b@corp", Server: "s", ToolsHash: h}, {Plugin: "a@corp", Server: "t", ToolsHash: h}}
	if err := WriteMCP(path, in); err != nil {
		t.Fatal(err)
	}
	got, err := ReadMCP(path)
	if err != nil || len(got) != 2 || got[0].Plugin != "a@corp" {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if err := os.WriteFile(path, []byte(`{"servers": [{"plugin": "x", "server": "s", "toolsHash": "`+h+`"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadMCP(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "mcpServers[0].plugin") {
		t.Fatalf("a bad record: %v", err)
	}
}
