package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/client/collect"
	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/testutil/testapi"
	"github.com/wharfhq/wharf/internal/testutil/testworld"
)

// capture runs a verb that needs no home and returns its stdout, stderr
// and error.
func capture(jsonOut bool, run func(streams) error) (string, string, error) {
	var out, errb bytes.Buffer
	err := run(streams{Out: &out, Err: &errb, JSON: jsonOut})
	return out.String(), errb.String(), err
}

// The token verbs run as functions, with no cobra command, against a real
// wharf server: create prints the secret once on stdout, list prints each
// token as the server has it, revoke removes it; a missing or refused
// token and bad flags exit with the codes the command has.
func TestTokenVerbsRunWithoutCobra(t *testing.T) {
	srv := testapi.New(t, nil)
	ctx := context.Background()
	admin := TokenOptions{Server: srv.HS.URL, Token: srv.Admin}

	if out, _, err := capture(false, func(io streams) error {
		return runTokenList(ctx, &TokenOptions{IO: io, Server: srv.HS.URL})
	}); exitCode(err) != 2 || !strings.Contains(err.Error(), "no admin token") || out != "" {
		t.Fatalf("token list without a token: exit %d, %v, printed %q", exitCode(err), err, out)
	}
	if _, _, err := capture(false, func(io streams) error {
		o := &TokenCreateOptions{TokenOptions: admin}
		o.IO = io
		return runTokenCreate(ctx, o)
	}); exitCode(err) != 2 || !strings.Contains(err.Error(), "--role is required") {
		t.Fatalf("token create without --role: exit %d, %v", exitCode(err), err)
	}
	if _, _, err := capture(false, func(io streams) error {
		o := &TokenCreateOptions{TokenOptions: admin, Role: "developer", Expires: "soon"}
		o.IO = io
		return runTokenCreate(ctx, o)
	}); exitCode(err) != 2 || !strings.Contains(err.Error(), "soon") {
		t.Fatalf("token create --expires soon: exit %d, %v", exitCode(err), err)
	}
	if out, _, err := capture(false, func(io streams) error {
		return runTokenList(ctx, &TokenOptions{IO: io, Server: srv.HS.URL, Token: "not-a-token"})
	}); exitCode(err) != 6 || !strings.Contains(err.Error(), "refused the credentials") || out != "" {
		t.Fatalf("token list with a refused token: exit %d, %v, printed %q", exitCode(err), err, out)
	}

	out, errOut, err := capture(false, func(io streams) error {
		o := &TokenCreateOptions{TokenOptions: admin, Role: "developer", Note: "laptop"}
		o.IO = io
		return runTokenCreate(ctx, o)
	})
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimSuffix(out, "\n")
	if secret == "" || strings.ContainsAny(secret, " \n") {
		t.Fatalf("token create printed %q, want the secret alone on one line", out)
	}
	var id string
	if _, err := fmt.Sscanf(errOut, "wharf: created developer token %s", &id); err != nil {
		t.Fatalf("token create said %q: %v", errOut, err)
	}
	id = strings.TrimSuffix(id, ";")
	if want := "wharf: created developer token " + id + "; the secret above is shown only once\n"; errOut != want {
		t.Fatalf("token create said\n%q\nwant\n%q", errOut, want)
	}
	// The secret is a developer's: known to the server (403 on an admin
	// route, not 401).
	asSecret := func() int {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.HS.URL+"/v1/tokens", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := asSecret(); code != http.StatusForbidden {
		t.Fatalf("the created developer secret on an admin route: %d, want 403", code)
	}

	out, _, err = capture(true, func(io streams) error {
		o := &TokenCreateOptions{TokenOptions: admin, Role: "agent", Expires: "30d"}
		o.IO = io
		return runTokenCreate(ctx, o)
	})
	var created createdToken
	if err != nil || json.Unmarshal([]byte(out), &created) != nil {
		t.Fatalf("token create --json: %v\n%s", err, out)
	}
	if created.Role != "agent" || created.Token == "" || created.ExpiresAt == nil ||
		created.ExpiresAt.Before(time.Now().Add(29*24*time.Hour)) || created.ExpiresAt.After(time.Now().Add(31*24*time.Hour)) {
		t.Fatalf("token create --expires 30d --json: %s", out)
	}

	// list prints what the server has, one token a line.
	var listed []listedToken
	srv.Do("GET", "/v1/tokens", nil, nil, http.StatusOK, &listed)
	if len(listed) != 3 {
		t.Fatalf("the server lists %d tokens, want the admin's and two created", len(listed))
	}
	want := ""
	for _, tk := range listed {
		exp := "never expires"
		if tk.ExpiresAt != nil {
			exp = "expires " + tk.ExpiresAt.UTC().Format(time.RFC3339)
		}
		want += fmt.Sprintf("%s  %-9s  %s  %s  %s  %s\n", tk.ID, tk.Role, tk.CreatedAt.Format(time.RFC3339), exp, lastUsedText(tk.LastUsed), tk.Note)
	}
	// The admin token listing them has been used; the new ones not.
	if !strings.Contains(want, id+"  developer  ") || !strings.Contains(want, "never expires  never used  laptop\n") || !strings.Contains(want, "  admin      ") || !strings.Contains(want, "  used 20") {
		t.Fatalf("the server's list does not hold the developer token %s:\n%s", id, want)
	}
	out, _, err = capture(false, func(io streams) error { o := admin; o.IO = io; return runTokenList(ctx, &o) })
	if err != nil || out != want {
		t.Fatalf("token list: %v\n%s\nwant\n%s", err, out, want)
	}

	out, _, err = capture(false, func(io streams) error {
		return runTokenRevoke(ctx, &TokenRevokeOptions{TokenOptions: TokenOptions{IO: io, Server: srv.HS.URL, Token: srv.Admin}, ID: id})
	})
	if err != nil || out != "revoked "+id+"\n" {
		t.Fatalf("token revoke: %v, printed %q", err, out)
	}
	if code := asSecret(); code != http.StatusUnauthorized {
		t.Fatalf("the revoked secret: %d, want 401", code)
	}
	out, _, err = capture(true, func(io streams) error { o := admin; o.IO = io; return runTokenList(ctx, &o) })
	if err != nil || strings.Contains(out, id) || !strings.Contains(out, created.ID) {
		t.Fatalf("token list --json after the revoke: %v\n%s", err, out)
	}
	if out, _, err := capture(false, func(io streams) error {
		return runTokenRevoke(ctx, &TokenRevokeOptions{TokenOptions: TokenOptions{IO: io, Server: srv.HS.URL, Token: srv.Admin}, ID: id})
	}); exitCode(err) != 1 || out != "" {
		t.Fatalf("second token revoke: exit %d, %v, printed %q", exitCode(err), err, out)
	}

	// An agent token is one machine's unless --max-machines says more;
	// the quota is the server's, and a negative one a usage error.
	if _, errOut, err := capture(false, func(io streams) error {
		o := &TokenCreateOptions{TokenOptions: admin, Role: "agent"}
		o.IO = io
		return runTokenCreate(ctx, o)
	}); err != nil || !strings.Contains(errOut, "; it may report 1 machine(s) and ") {
		t.Fatalf("agent token create said %q: %v", errOut, err)
	}
	_, errOut, err = capture(false, func(io streams) error {
		o := &TokenCreateOptions{TokenOptions: admin, Role: "agent", MaxMachines: 25, MaxPlugins: 500}
		o.IO = io
		return runTokenCreate(ctx, o)
	})
	if err != nil || !strings.HasSuffix(errOut, "; it may report 25 machine(s) and 500 plugin ids\n") {
		t.Fatalf("token create --max-machines 25 --max-plugins 500 said %q: %v", errOut, err)
	}
	var quotas []struct {
		Role        string `json:"role"`
		MaxMachines int    `json:"maxMachines"`
		MaxPlugins  int    `json:"maxPlugins"`
	}
	srv.Do("GET", "/v1/tokens", nil, nil, http.StatusOK, &quotas)
	found := false
	for _, q := range quotas {
		found = found || (q.Role == "agent" && q.MaxMachines == 25 && q.MaxPlugins == 500)
	}
	if !found {
		t.Fatalf("the server holds no agent token with the quota given: %+v", quotas)
	}
	for _, o := range []TokenCreateOptions{{TokenOptions: admin, Role: "agent", MaxMachines: -1}, {TokenOptions: admin, Role: "agent", MaxPlugins: -5}} {
		if _, _, err := capture(false, func(io streams) error { o.IO = io; return runTokenCreate(ctx, &o) }); exitCode(err) != 2 || !strings.Contains(err.Error(), "must not be negative") {
			t.Fatalf("token create with a negative quota %+v: exit %d, %v", o, exitCode(err), err)
		}
	}
	if _, _, err := capture(false, func(io streams) error {
		o := &TokenCreateOptions{TokenOptions: admin, Role: "agent", MaxMachines: 2_000_000}
		o.IO = io
		return runTokenCreate(ctx, o)
	}); err == nil || !strings.Contains(err.Error(), "maxMachines") {
		t.Fatalf("token create over the largest quota: %v", err)
	}
}

// inventory report runs as a function over a home, with no cobra command,
// against a real wharf server: it refuses what it cannot do with usage
// errors, a refused token exits 6, and a report of this home, then of a
// Copilot CLI and a Codex home, reaches the server under each machine id.
func TestInventoryReportRunsWithoutCobra(t *testing.T) {
	srv := testapi.New(t, nil)
	var tok struct {
		Token string `json:"token"`
	}
	srv.Do("POST", "/v1/tokens", nil, map[string]string{"role": "agent"}, http.StatusCreated, &tok)
	w := newVerbWorld(t)
	w.policy.ExtraManagedDir = filepath.Join(w.dir, "no-managed")
	ctx := context.Background()
	w.must(func(io streams, h *home.Home) error {
		return runInstall(ctx, &InstallOptions{IO: io, Home: h, Plugin: "app@corp", Scope: "user"})
	})
	report := func(o InventoryReportOptions) func(streams, *home.Home) error {
		return func(io streams, h *home.Home) error {
			o.IO, o.Home = io, h
			if o.from == "" {
				o.from = "wharf"
			}
			return runInventoryReport(ctx, &o)
		}
	}
	flags := func(r reportOptions) InventoryReportOptions {
		return InventoryReportOptions{reportOptions: r, Token: tok.Token}
	}

	for _, c := range []struct {
		name string
		opts InventoryReportOptions
		want string
	}{
		{"no server", flags(reportOptions{}), "no server to report to"},
		{"no token", InventoryReportOptions{reportOptions: reportOptions{server: srv.HS.URL}}, "no token for the inventory report"},
		{"--from nope", flags(reportOptions{from: "nope", server: srv.HS.URL}), `unknown source "nope"`},
		{"--claude-home without --from claude", flags(reportOptions{claudeHome: w.dir, server: srv.HS.URL}), "--claude-home needs --from claude"},
		{"--codex-home with --from copilot", flags(reportOptions{from: "copilot", codexHome: w.dir, server: srv.HS.URL}), "--codex-home needs --from codex"},
	} {
		if out, err := w.do(report(c.opts)); exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) || out != "" {
			t.Errorf("%s: exit %d, %v, printed %q; want exit 2 and %q", c.name, exitCode(err), err, out, c.want)
		}
	}
	refused := flags(reportOptions{server: srv.HS.URL})
	refused.Token = "not-a-token"
	if out, err := w.do(report(refused)); exitCode(err) != 6 || !strings.Contains(err.Error(), "refused the credentials") || out != "" {
		t.Fatalf("report with a refused token: exit %d, %v, printed %q", exitCode(err), err, out)
	}

	paths := layout.New(w.dir)
	host, _ := os.Hostname()
	machine := func(dir string) string {
		b, err := os.ReadFile(dir)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	out := w.must(report(flags(reportOptions{server: srv.HS.URL})))
	id := machine(paths.MachineID())
	if want := fmt.Sprintf("reported 2 plugin(s) of machine %s (%s, wharf) to %s: updated\n", id, host, srv.HS.URL); out != want {
		t.Fatalf("inventory report printed\n%s\nwant\n%s", out, want)
	}
	if st := collect.ReadState(paths.InventoryState()); st.Server != srv.HS.URL || st.SentHash == "" || st.Pending != "" {
		t.Fatalf("the report was not recorded for the background reports: %+v", st)
	}
	var got struct {
		Report inventory.Report `json:"report"`
	}
	srv.Do("GET", "/v1/inventory/machines/"+id, nil, nil, http.StatusOK, &got)
	if _, ok := pluginIn(got.Report, "app@corp"); !ok || len(got.Report.Plugins) != 2 || got.Report.Client.Kind != inventory.KindWharf {
		t.Fatalf("the server holds %+v", got.Report)
	}
	out = w.must(report(flags(reportOptions{server: srv.HS.URL})))
	if !strings.HasSuffix(out, ": unchanged\n") {
		t.Fatalf("a second, unchanged report printed %q", out)
	}

	// An unmodified Copilot CLI home and Codex home, each under the
	// machine id kept in it, each with a token of its own (an agent token
	// reports one machine).
	copilotHome, codexHome := t.TempDir(), t.TempDir()
	testworld.WriteTree(t, copilotHome, map[string]string{
		"config.json": `{"installedPlugins": [{"name": "deploy", "marketplace": "approved", "version": "1.2.0", "enabled": true}]}`,
		"installed-plugins/approved/deploy/.claude-plugin/plugin.json": `{"name":"deploy"}`,
	})
	testworld.WriteTree(t, codexHome, map[string]string{
		"config.toml": "[plugins.\"deploy@approved\"]\nenabled = true\n\n[plugins.\"bad@x@y\"]\nenabled = true\n",
		"plugins/cache/approved/deploy/1.2.0/commands/ship.md": "Ship.\n",
	})
	for _, c := range []struct {
		from, dir string
		opts      reportOptions
	}{
		{"copilot", copilotHome, reportOptions{from: "copilot", copilotHome: copilotHome, server: srv.HS.URL}},
		{"codex", codexHome, reportOptions{from: "codex", codexHome: codexHome, server: srv.HS.URL}},
	} {
		var own struct {
			Token string `json:"token"`
		}
		srv.Do("POST", "/v1/tokens", nil, map[string]string{"role": "agent"}, http.StatusCreated, &own)
		w.json = true
		out := w.must(report(InventoryReportOptions{reportOptions: c.opts, Token: own.Token}))
		w.json = false
		var res reportResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("--from %s --json: %v\n%s", c.from, err, out)
		}
		mid := machine(filepath.Join(c.dir, collect.ClaudeMachineIDFile))
		p, ok := pluginIn(res.Report, "deploy@approved")
		if res.Server != srv.HS.URL || !res.Changed || res.Report.Machine.ID != mid || res.Report.Client.Kind != c.from || !ok || p.Version != "1.2.0" || p.State != inventory.StateActive {
			t.Fatalf("--from %s --json: %s", c.from, out)
		}
		srv.Do("GET", "/v1/inventory/machines/"+mid, nil, nil, http.StatusOK, &got)
		if got.Report.Client.Kind != c.from || len(got.Report.Plugins) != 1 {
			t.Fatalf("the server holds for %s: %+v", c.from, got.Report)
		}
	}
	if !strings.Contains(w.err.String(), "wharf: warning: codex: ") || !strings.Contains(w.err.String(), "bad@x@y") {
		t.Fatalf("the Codex home's bad entry was not a warning: %q", w.err.String())
	}
}

// doctor runs as a function over a home, with no cobra command: it says
// when there is no state yet, counts the records, reports damage (exit 1)
// and repairs it from the cache.
func TestDoctorRunsWithoutCobra(t *testing.T) {
	w := &verbWorld{t: t, dir: t.TempDir(), mkt: t.TempDir()}
	ctx := context.Background()
	db := layout.New(w.dir).StateDB()
	doctor := func(repair bool) func(streams, *home.Home) error {
		return func(io streams, h *home.Home) error {
			return runDoctor(ctx, &DoctorOptions{IO: io, Home: h, Repair: repair})
		}
	}
	if out := w.must(doctor(false)); out != db+": does not exist (nothing installed yet)\nnothing to repair\n" {
		t.Fatalf("doctor on a new home printed\n%s", out)
	}

	w = newVerbWorld(t)
	db = layout.New(w.dir).StateDB()
	w.must(func(io streams, h *home.Home) error {
		return runInstall(ctx, &InstallOptions{IO: io, Home: h, Plugin: "app@corp", Scope: "user"})
	})
	if out := w.must(doctor(false)); out != db+": ok, 2 installed plugin record(s)\nnothing to repair\n" {
		t.Fatalf("doctor on a sound home printed\n%s", out)
	}

	if err := os.Truncate(db, 0); err != nil {
		t.Fatal(err)
	}
	out, err := w.do(doctor(false))
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "wharf's state is damaged") || !strings.HasPrefix(out, db+": damaged\n  ") || !strings.Contains(out, "empty (0 bytes)") {
		t.Fatalf("doctor on an empty state.db: exit %d, %v\n%s", exitCode(err), err, out)
	}
	out = w.must(doctor(true))
	asides, _ := filepath.Glob(db + ".damaged-*")
	if len(asides) != 1 {
		t.Fatalf("the damaged file was kept as %v", asides)
	}
	for _, line := range []string{
		"kept the old file as " + asides[0] + "\n",
		"restored app@corp 1.0.0 (from the cache)\n",
		"restored lib@corp 1.0.0 (from the cache)\n",
		"rebuilt " + db + "; check it with: wharf list\n",
	} {
		if !strings.Contains(out, line) {
			t.Fatalf("doctor --repair printed\n%s\nwant a line %q", out, line)
		}
	}
	w.json = true
	out = w.must(doctor(false))
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Status != "ok" || rep.Records != 2 || rep.StateDB != db {
		t.Fatalf("doctor --json after the repair: %v\n%s", err, out)
	}
}

// marketplace list runs as a function over a home, with no cobra command.
func TestMarketplaceListRunsWithoutCobra(t *testing.T) {
	ctx := context.Background()
	list := func(io streams, h *home.Home) error {
		return runMarketplaceList(ctx, &MarketplaceListOptions{IO: io, Home: h})
	}
	empty := &verbWorld{t: t, dir: t.TempDir()}
	if out := empty.must(list); out != "No marketplaces. Add one with: wharf marketplace add <source>\n" {
		t.Fatalf("marketplace list of a new home printed %q", out)
	}
	empty.json = true
	if out := empty.must(list); out != "[]\n" {
		t.Fatalf("marketplace list --json of a new home printed %q", out)
	}

	w := newVerbWorld(t)
	w.json = true
	var known []marketplace.Known
	if out := w.must(list); json.Unmarshal([]byte(out), &known) != nil || len(known) != 1 || known[0].Name != "corp" {
		t.Fatalf("marketplace list --json printed\n%s", out)
	}
	w.json = false
	updated := known[0].LastUpdated.Local().Format(time.DateTime)
	want := "NAME  SOURCE" + strings.Repeat(" ", len(w.mkt)-len("SOURCE")) + "  KIND       UPDATED\n" +
		"corp  " + w.mkt + "  directory  " + updated + "\n"
	if out := w.must(list); out != want {
		t.Fatalf("marketplace list printed\n%q\nwant\n%q", out, want)
	}
}

// validate runs as a function, with no cobra command: a sound marketplace
// is summed up, a broken plugin exits 1 with each problem, --strict makes
// warnings fail.
func TestValidateRunsWithoutCobra(t *testing.T) {
	w := newVerbWorld(t)
	ctx := context.Background()
	validate := func(o ValidateOptions) (string, error) {
		out, _, err := capture(false, func(io streams) error { o.IO = io; return runValidate(ctx, &o) })
		return out, err
	}
	out, err := validate(ValidateOptions{Path: w.mkt})
	if err != nil {
		t.Fatalf("validate of a sound marketplace: %v\n%s", err, out)
	}
	appJSON := filepath.Join(w.mkt, "plugins", "app", ".claude-plugin", "plugin.json")
	if !strings.Contains(out, appJSON+": warning: description: plugin \"app\" has no description\n") || !strings.HasSuffix(out, "marketplace corp: 2 plugins\n"+
		"  app              1.0.0    1 command  (needs lib)\n"+
		"  lib              1.0.0    1 command\n"+
		w.mkt+": ok (8 warnings)\n") {
		t.Fatalf("validate of a sound marketplace printed\n%s", out)
	}
	out, err = validate(ValidateOptions{Path: w.mkt, validateOptions: validateOptions{strict: true}})
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "8 problem(s)") || strings.Contains(out, ": ok (") {
		t.Fatalf("validate --strict of a marketplace with warnings: exit %d, %v\n%s", exitCode(err), err, out)
	}

	bad := t.TempDir()
	testworld.WriteTree(t, bad, map[string]string{".claude-plugin/plugin.json": `{"name": "Bad Name", "version": 3}`})
	out, err = validate(ValidateOptions{Path: bad})
	if exitCode(err) != 1 || !strings.Contains(out, "plugin.json") || strings.Contains(out, ": ok (") {
		t.Fatalf("validate of a broken plugin: exit %d, %v\n%s", exitCode(err), err, out)
	}
	out, _, err = capture(true, func(io streams) error { return runValidate(ctx, &ValidateOptions{IO: io, Path: bad}) })
	var res validateResult
	if exitCode(err) != 1 || json.Unmarshal([]byte(out), &res) != nil || res.OK || res.Errors == 0 || res.Path != bad {
		t.Fatalf("validate --json of a broken plugin: exit %d, %v\n%s", exitCode(err), err, out)
	}
	if _, err := validate(ValidateOptions{Path: filepath.Join(bad, "missing")}); exitCode(err) == 0 {
		t.Fatal("validate of a missing path succeeded")
	}
}

// policy export runs as a function over a home, with no cobra command:
// the merged layers as Claude Code's managed settings, to stdout or a
// file; an unknown format and --channel without a server are usage
// errors, and a refused token exits 6.
func TestPolicyExportRunsWithoutCobra(t *testing.T) {
	w := &verbWorld{t: t, dir: t.TempDir()}
	layer := filepath.Join(t.TempDir(), "block.json")
	writeFile(t, layer, `{"blockedMarketplaces":[{"source":"pathPattern","pathPattern":".*/corp$"}]}`)
	w.policy.ExtraManagedDir = filepath.Join(w.dir, "no-managed")
	w.policy.Paths = []string{layer}
	ctx := context.Background()
	export := func(o PolicyExportOptions) func(streams, *home.Home) error {
		return func(io streams, h *home.Home) error {
			o.IO, o.Home = io, h
			if o.Format == "" {
				o.Format = "claude"
			}
			return runPolicyExport(ctx, &o)
		}
	}
	out := w.must(export(PolicyExportOptions{}))
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("policy export printed no JSON: %v\n%s", err, out)
	}
	if want := `[{"source":"pathPattern","pathPattern":".*/corp$"}]`; compactJSON(t, doc["blockedMarketplaces"]) != want {
		t.Fatalf("policy export: blockedMarketplaces %s, want %s\n%s", doc["blockedMarketplaces"], want, out)
	}
	file := filepath.Join(t.TempDir(), "managed-settings.json")
	if got := w.must(export(PolicyExportOptions{Output: file})); got != "wrote "+file+"\n" {
		t.Fatalf("policy export -o printed %q", got)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != out {
		t.Fatalf("policy export -o wrote %q (%v), want what it prints:\n%s", b, err, out)
	}

	if got, err := w.do(export(PolicyExportOptions{Format: "yaml"})); exitCode(err) != 2 || !strings.Contains(err.Error(), `unknown export format "yaml"`) || got != "" {
		t.Fatalf("policy export --format yaml: exit %d, %v, printed %q", exitCode(err), err, got)
	}
	if got, err := w.do(export(PolicyExportOptions{Channel: "approved"})); exitCode(err) != 2 || !strings.Contains(err.Error(), "no wharf server to ask for the channel") || got != "" {
		t.Fatalf("policy export --channel without a server: exit %d, %v, printed %q", exitCode(err), err, got)
	}
	srv := testapi.New(t, nil)
	w.policy.URL, w.policy.Token = srv.HS.URL, "not-a-token"
	if got, err := w.do(export(PolicyExportOptions{Channel: "approved"})); exitCode(err) != 6 || !strings.Contains(err.Error(), "refused the credentials") || got != "" {
		t.Fatalf("policy export --channel with a refused token: exit %d, %v, printed %q", exitCode(err), err, got)
	}
}

func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The agent verbs run as functions over a home, with no cobra command:
// components and status of the installed set, a hook that blocks (exit
// 2), MCP list of a set without servers, and folder trust.
func TestAgentVerbsRunWithoutCobra(t *testing.T) {
	w := newVerbWorld(t)
	ctx := context.Background()
	agentOpts := func(io streams, h *home.Home) AgentOptions {
		return AgentOptions{IO: io, Home: h, agentOptions: agentOptions{project: w.dir}}
	}
	if out := w.must(func(io streams, h *home.Home) error {
		o := agentOpts(io, h)
		return runAgentComponents(ctx, &o)
	}); out != "no components; see why with: wharf agent status\n" {
		t.Fatalf("agent components of an empty home printed %q", out)
	}
	if out := w.must(func(io streams, h *home.Home) error {
		o := agentOpts(io, h)
		return runAgentStatus(ctx, &o)
	}); out != "no plugins installed or loaded (cache-only load)\nproject folder "+w.dir+": not trusted\n" {
		t.Fatalf("agent status of an empty home printed %q", out)
	}

	w.must(func(io streams, h *home.Home) error {
		return runInstall(ctx, &InstallOptions{IO: io, Home: h, Plugin: "app@corp", Scope: "user"})
	})
	if out, want := w.must(func(io streams, h *home.Home) error {
		o := agentOpts(io, h)
		return runAgentComponents(ctx, &o)
	}), "KIND     NAME     SOURCE  PLUGIN\n"+
		"command  app:app  plugin  app@corp\n"+
		"command  lib:lib  plugin  lib@corp\n"; out != want {
		t.Fatalf("agent components printed\n%q\nwant\n%q", out, want)
	}
	if out, want := w.must(func(io streams, h *home.Home) error {
		o := agentOpts(io, h)
		return runAgentStatus(ctx, &o)
	}), "PLUGIN    VERSION  SOURCE     STATUS  COMPONENTS  WHY\n"+
		"app@corp  1.0.0    installed  active  1           \n"+
		"lib@corp  1.0.0    installed  active  1           \n"+
		"project folder "+w.dir+": not trusted\n"; out != want {
		t.Fatalf("agent status printed\n%q\nwant\n%q", out, want)
	}

	hook := func(event, stdin string) func(streams, *home.Home) error {
		return func(io streams, h *home.Home) error {
			return runAgentHook(ctx, &AgentHookOptions{AgentOptions: agentOpts(io, h), Event: event, Stdin: strings.NewReader(stdin), Parallel: 2})
		}
	}
	if out, err := w.do(hook("PreToolUse", "not json")); exitCode(err) != 1 || out != "" {
		t.Fatalf("agent hook with a malformed event: exit %d, %v, printed %q", exitCode(err), err, out)
	}
	if out := w.must(hook("PreToolUse", `{"tool_name":"Bash"}`)); out != "no decision: 0 of 0 matching hook(s) ran; the agent goes on as usual\n" {
		t.Fatalf("agent hook without hooks printed %q", out)
	}
	// A user settings hook that blocks Bash.
	writeFile(t, layout.New(w.dir).Settings(), `{"enabledPlugins":{"app@corp":true,"lib@corp":true},"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"echo no shell here >&2; exit 2"}]}]}}`)
	out, err := w.do(hook("PreToolUse", `{"tool_name":"Bash"}`))
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "no shell here") || !strings.HasPrefix(out, "blocked by ") || !strings.HasSuffix(out, ": no shell here\n") {
		t.Fatalf("agent hook with a blocking hook: exit %d, %v, printed %q", exitCode(err), err, out)
	}
	if out := w.must(hook("PreToolUse", `{"tool_name":"Read"}`)); out != "no decision: 0 of 0 matching hook(s) ran; the agent goes on as usual\n" {
		t.Fatalf("agent hook for another tool printed %q", out)
	}

	if out := w.must(func(io streams, h *home.Home) error {
		o := agentOpts(io, h)
		return runAgentMCPList(ctx, &o)
	}); out != "no MCP servers in the active set; see why with: wharf agent status\n" {
		t.Fatalf("agent mcp list without servers printed %q", out)
	}

	folder := t.TempDir()
	canon, err := filepath.EvalSymlinks(folder)
	if err != nil {
		t.Fatal(err)
	}
	trust := func(o AgentTrustOptions) func(streams, *home.Home) error {
		return func(io streams, h *home.Home) error {
			o.AgentOptions = agentOpts(io, h)
			return runAgentTrust(ctx, &o)
		}
	}
	if out := w.must(trust(AgentTrustOptions{List: true})); out != "no trusted folders\n" {
		t.Fatalf("agent trust --list of a new home printed %q", out)
	}
	if out := w.must(trust(AgentTrustOptions{Folder: folder})); out != "trusted "+canon+": its hooks and MCP servers load at the next session start or reload\n" {
		t.Fatalf("agent trust printed %q", out)
	}
	if out := w.must(trust(AgentTrustOptions{List: true})); !strings.HasPrefix(out, "FOLDER") || !strings.Contains(out, "\n"+canon+"  ") {
		t.Fatalf("agent trust --list printed %q", out)
	}
	if out := w.must(trust(AgentTrustOptions{Folder: folder, Revoke: true})); out != canon+" is no longer trusted\n" {
		t.Fatalf("agent trust --revoke printed %q", out)
	}
	if out := w.must(trust(AgentTrustOptions{Folder: folder, Revoke: true})); out != canon+" was not trusted itself (a trusted parent folder still trusts it; see wharf agent trust --list)\n" {
		t.Fatalf("second agent trust --revoke printed %q", out)
	}
}

// agent serve runs as a function over a home, with no cobra command: it
// needs --stdio, answers one request per line on its stdout, and tells the
// command after each load (which starts the background report from it).
func TestAgentServeRunsWithoutCobra(t *testing.T) {
	w := newVerbWorld(t)
	ctx := context.Background()
	w.must(func(io streams, h *home.Home) error {
		return runInstall(ctx, &InstallOptions{IO: io, Home: h, Plugin: "app@corp", Scope: "user"})
	})
	loads := 0
	serve := func(o AgentServeOptions, stdin string) func(streams, *home.Home) error {
		return func(io streams, h *home.Home) error {
			o.AgentOptions = AgentOptions{IO: io, Home: h, agentOptions: agentOptions{project: w.dir}}
			o.Stdin, o.MaxLine, o.AfterLoad = strings.NewReader(stdin), 1<<16, func() { loads++ }
			return runAgentServe(ctx, &o)
		}
	}
	if out, err := w.do(serve(AgentServeOptions{}, "")); exitCode(err) != 2 || !strings.Contains(err.Error(), "needs --stdio") || out != "" || loads != 0 {
		t.Fatalf("agent serve without --stdio: exit %d, %v, printed %q, %d loads", exitCode(err), err, out, loads)
	}
	out := w.must(serve(AgentServeOptions{Stdio: true, NoMCP: true},
		`{"type":"control_request","request_id":"r1","request":{"subtype":"list_components","kind":"command"}}`+"\n"))
	var res struct {
		Type     string `json:"type"`
		Response struct {
			Subtype   string `json:"subtype"`
			RequestID string `json:"request_id"`
			Response  struct {
				Mode       string `json:"mode"`
				Components []struct {
					Name   string `json:"name"`
					Plugin string `json:"plugin"`
				} `json:"components"`
			} `json:"response"`
		} `json:"response"`
	}
	if strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("agent serve answered one request with\n%s", out)
	}
	r := res.Response
	if res.Type != "control_response" || r.Subtype != "success" || r.RequestID != "r1" || r.Response.Mode != "cache-only" ||
		len(r.Response.Components) != 2 || r.Response.Components[0].Name != "app:app" || r.Response.Components[1].Plugin != "lib@corp" {
		t.Fatalf("agent serve answered list_components with\n%s", out)
	}
	if loads != 1 {
		t.Fatalf("the command was told of %d loads, want the startup load", loads)
	}
}
