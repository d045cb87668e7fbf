package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/internal/client/agentlink"
	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

// driftRow is what the three views must agree on for one plugin.
type driftRow struct {
	Status       string             `json:"status"`
	Chain        string             `json:"chain"`
	ErrorDetails []load.ErrorDetail `json:"errorDetails"`
	Failed       []string           `json:"failed"`
}

// driftHome is a real home (bbolt registry, read-only cache dirs, settings,
// a managed directory with an admin module) with one installed plugin per
// failure kind, damaged after install as a user or an attacker would.
func driftHome(t *testing.T) (home, managed string, revs policy.Revocations) {
	t.Helper()
	root := t.TempDir()
	home, managed = filepath.Join(root, "home"), filepath.Join(root, "managed")
	st, err := store.OpenBolt(filepath.Join(home, "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(cache.Options{Home: home, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	manifest := func(name string, deps ...string) string {
		d, _ := json.Marshal(append([]string{}, deps...))
		return fmt.Sprintf(`{"name": %q, "version": "1.0.0", "dependencies": %s}`, name, d)
	}
	plugins := map[string]map[string]string{
		"ok":     {".claude-plugin/plugin.json": manifest("ok")},
		"tamper": {".claude-plugin/plugin.json": manifest("tamper")},
		"gone":   {".claude-plugin/plugin.json": manifest("gone")},
		"denied": {".claude-plugin/plugin.json": manifest("denied")},
		"rev":    {".claude-plugin/plugin.json": manifest("rev")},
		"revdep": {".claude-plugin/plugin.json": manifest("revdep", "rev")},
		"off":    {".claude-plugin/plugin.json": manifest("off")},
		"needy":  {".claude-plugin/plugin.json": manifest("needy", "off")},
		"bad":    {".claude-plugin/plugin.json": `{"name": "bad", "version": 1.0}`},
		"comp": {".claude-plugin/plugin.json": manifest("comp"),
			".mcp.json": `{"mcpServers": {"bad:name": {"command": "x"}, "good": {"command": "y"}}}`},
	}
	enabled := map[string]bool{}
	paths := map[string]string{}
	for name, files := range plugins {
		files["commands/run.md"] = "---\ndescription: run " + name + "\n---\nRun.\n"
		id := plugin.ID{Name: name, Source: "m"}
		v, err := c.Materialize(context.Background(), id, "1.0.0", func(ctx context.Context, dir string) error {
			for f, body := range files {
				p := filepath.Join(dir, filepath.FromSlash(f))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Put(context.Background(), cache.RecordFor(v, "user")); err != nil {
			t.Fatal(err)
		}
		enabled[id.String()] = name != "off"
		paths[name] = v.Path
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.Walk(root, func(p string, fi os.FileInfo, err error) error { os.Chmod(p, 0o755); return nil })
	})
	settingsDoc, _ := json.Marshal(map[string]any{"enabledPlugins": enabled})
	writeFile(t, filepath.Join(home, "settings.json"), string(settingsDoc))
	writeFile(t, filepath.Join(managed, "org.rego"),
		"package wharf.admin.managed\n\ndeny contains \"denied@m is not approved\" if { input.action == \"load\"; input.plugin == \"denied@m\" }\n")
	// Tamper with one file's bytes; remove another plugin's file.
	for _, d := range []string{paths["tamper"], filepath.Join(paths["tamper"], "commands"), paths["gone"], filepath.Join(paths["gone"], "commands")} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(paths["tamper"], "commands", "run.md"), []byte("---\ndescription: rm -rf /\n---\nRm.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(paths["gone"], "commands", "run.md")); err != nil {
		t.Fatal(err)
	}
	revs = policy.Revocations{{ID: "rv-7", Plugin: "rev@m", Version: "1.0.0", Reason: "it sends tokens away"}}
	return home, managed, revs
}

// The drift test: for every kind of failure, `wharf list --json`, `wharf
// agent status --json` and the agent runtime give the plugin the same
// status, and the same type, layer, object, message and hint.
func TestListAgentStatusAndRuntimeAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	home, managed, revs := driftHome(t)
	revJSON, _ := json.Marshal(revs)
	bin := wharfBinary(t)
	run := func(args ...string) []byte {
		c := exec.Command(bin, args...)
		c.Env = append(os.Environ(), "WHARF_HOME="+home, "WHARF_MANAGED_DIR="+managed, "WHARF_TEST_REVOCATIONS="+string(revJSON))
		c.Dir = home
		out, err := c.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("wharf %v: %v\n%s%s", args, err, out, stderr)
		}
		return out
	}
	byID := func(rows []struct {
		ID string `json:"id"`
		driftRow
	}) map[string]driftRow {
		m := map[string]driftRow{}
		for _, r := range rows {
			m[r.ID] = r.driftRow
		}
		return m
	}
	var listRows []struct {
		ID string `json:"id"`
		driftRow
	}
	if err := json.Unmarshal(run("list", "--json"), &listRows); err != nil {
		t.Fatal(err)
	}
	var status struct {
		Plugins []struct {
			ID string `json:"id"`
			driftRow
		} `json:"plugins"`
	}
	if err := json.Unmarshal(run("agent", "status", "--json"), &status); err != nil {
		t.Fatal(err)
	}
	list, agentStatus := byID(listRows), byID(status.Plugins)

	// The runtime, through the agent package's API on the same home.
	st, err := store.OpenBolt(filepath.Join(home, "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := cache.New(cache.Options{Home: home, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Open(policy.Sources{ManagedDir: managed})
	if err != nil {
		t.Fatal(err)
	}
	o := agent.Options{Home: home, ExtraManagedDir: managed, Policy: agentlink.Policy(pol).(*agent.Policy), NoMemo: true}
	agentlink.Wire(&o, agentlink.Wiring{Registry: c, Revocations: revs})
	r, err := agent.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	set, err := r.Load(context.Background(), agent.CacheOnly)
	if err != nil {
		t.Fatal(err)
	}
	runtime := map[string]driftRow{}
	for _, p := range set.Plugins() {
		d := driftRow{Status: p.Status, Chain: p.Chain, Failed: p.Failed}
		for _, e := range p.ErrorDetails {
			d.ErrorDetails = append(d.ErrorDetails, load.ErrorDetail(e))
		}
		if len(d.ErrorDetails) == 0 {
			d.ErrorDetails = nil
		}
		runtime[p.ID.String()] = d
	}
	for _, m := range []map[string]driftRow{list, agentStatus} {
		for id, d := range m {
			if len(d.ErrorDetails) == 0 {
				d.ErrorDetails = nil
				m[id] = d
			}
		}
	}

	for _, k := range []struct {
		kind, id, status, typ, layer, object, message, hint string
	}{
		{"tamper", "tamper@m", load.StatusFailed, plugin.TypeTrustRejected, "trust", "tamper@m 1.0.0", "commands/run.md (modified", "wharf verify"},
		{"missing file", "gone@m", load.StatusFailed, plugin.TypeTrustRejected, "trust", "gone@m 1.0.0", "commands/run.md", "wharf verify"},
		{"denied by policy", "denied@m", load.StatusFailed, plugin.TypePolicyDenied, "policy", "denied@m", "denied@m is not approved", ""},
		{"revoked", "rev@m", load.StatusFailed, load.TypeRevoked, "policy", "rev@m 1.0.0", "is revoked by revocation rv-7 (rev@m 1.0.0): it sends tokens away", "rv-7"},
		{"demoted by a revoked dependency", "revdep@m", load.StatusDemoted, plugin.TypeDependencyUnsatisfied, "dependency", "revdep@m", "revdep@m needs rev@m; rev@m is disabled (it is enabled but failed: " + load.TypeRevoked + ")", "enable or install"},
		{"demoted", "needy@m", load.StatusDemoted, plugin.TypeDependencyUnsatisfied, "dependency", "needy@m", "needy@m needs off@m; off@m is disabled", "enable or install"},
		{"bad manifest", "bad@m", load.StatusFailed, plugin.TypeManifestParse, "materialization", "", "version", ""},
		{"failed component", "comp@m", load.StatusActive, "", "", "", "", ""},
		{"control", "ok@m", load.StatusActive, "", "", "", "", ""},
	} {
		t.Run(k.kind, func(t *testing.T) {
			l, ok1 := list[k.id]
			a, ok2 := agentStatus[k.id]
			rt, ok3 := runtime[k.id]
			if !ok1 || !ok2 || !ok3 {
				t.Fatalf("%s missing: list %v, agent status %v, runtime %v", k.id, ok1, ok2, ok3)
			}
			t.Logf("%s: %+v", k.id, l)
			if !reflect.DeepEqual(l, a) || !reflect.DeepEqual(l, rt) {
				t.Fatalf("the views disagree on %s:\nlist         %+v\nagent status %+v\nruntime      %+v", k.id, l, a, rt)
			}
			if l.Status != k.status {
				t.Fatalf("%s is %s, want %s: %+v", k.id, l.Status, k.status, l)
			}
			if k.typ == "" {
				if len(l.ErrorDetails) != 0 {
					t.Fatalf("%s has errors: %+v", k.id, l.ErrorDetails)
				}
				return
			}
			if len(l.ErrorDetails) != 1 {
				t.Fatalf("%s: %d errors, want 1: %+v", k.id, len(l.ErrorDetails), l.ErrorDetails)
			}
			d := l.ErrorDetails[0]
			if d.Type != k.typ || d.Layer != k.layer || !strings.HasPrefix(d.Object, k.object) ||
				!strings.Contains(d.Message, k.message) || !strings.Contains(d.Hint, k.hint) {
				t.Fatalf("%s: %+v, want type %s, layer %s, object %q..., message with %q, hint with %q", k.id, d, k.typ, k.layer, k.object, k.message, k.hint)
			}
		})
	}
	// The failed component is named alike by all three (compared above),
	// and its sibling loads.
	if f := list["comp@m"].Failed; len(f) != 1 || !strings.Contains(f[0], "bad:name") {
		t.Fatalf("comp@m failed components: %q", f)
	}
	if _, ok := set.Lookup(plugin.KindMCPServer, "plugin:comp:good"); !ok {
		var names []string
		for _, c := range set.ComponentsOf(plugin.KindMCPServer) {
			names = append(names, c.Name)
		}
		t.Fatalf("comp@m's good server is not live: %q", names)
	}
	// A revoked plugin's revocation hint says who lifts it.
	if h := list["rev@m"].ErrorDetails[0].Hint; !strings.Contains(h, "administrator") {
		t.Fatalf("revocation hint %q", h)
	}
}
