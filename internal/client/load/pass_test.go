package load

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

var bg = context.Background()

// installed materializes plugins into a real cache (bbolt registry,
// read-only version dirs) in a temp dir and returns their records.
func installed(t *testing.T, plugins map[string]string) map[string]cache.Record {
	t.Helper()
	home := t.TempDir()
	st, err := store.OpenBolt(filepath.Join(home, "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Close()
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { os.Chmod(p, 0o755); return nil })
	})
	c, err := cache.New(cache.Options{Home: home, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]cache.Record{}
	for id, manifest := range plugins {
		pid := plugin.MustParseID(id)
		v, err := c.Materialize(bg, pid, "1.0.0", func(ctx context.Context, dir string) error {
			if err := os.MkdirAll(filepath.Join(dir, ".claude-plugin"), 0o755); err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Join(dir, "commands"), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, "commands", "go.md"), []byte("go "+id+"\n"), 0o644); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, ".claude-plugin", "plugin.json"), []byte(manifest), 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
		out[id] = cache.RecordFor(v, "user")
	}
	return out
}

func rowsByID(rows []Row) map[string]Row {
	m := map[string]Row{}
	for _, r := range rows {
		m[r.ID.String()] = r
	}
	return m
}

// A revocation of a content digest withdraws that content under any name
// and version; its dependents are demoted with the chain of why; a plugin
// with the same name but other content is untouched.
func TestRevokedByDigestDemotesDependents(t *testing.T) {
	recs := installed(t, map[string]string{
		"lib@m":  `{"name": "lib", "version": "1.0.0"}`,
		"app@m":  `{"name": "app", "version": "1.0.0", "dependencies": ["lib"]}`,
		"safe@m": `{"name": "safe", "version": "1.0.0"}`,
	})
	in := Input{Enabled: map[plugin.ID]bool{}}
	for _, r := range recs {
		in.Records = append(in.Records, r)
		in.Enabled[r.ID] = true
	}
	// Without revocations everything is active.
	rows, err := List(bg, Options{}, in)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Status != StatusActive {
			t.Fatalf("%s is %s before any revocation: %v", r.ID, r.Status, r.Errors)
		}
	}
	rv := policy.Revocation{ID: "rv-1", Digest: recs["lib@m"].Digest, Reason: "compromised build"}
	rows, err = List(bg, Options{Revocations: policy.Revocations{rv}}, in)
	if err != nil {
		t.Fatal(err)
	}
	got := rowsByID(rows)
	lib := got["lib@m"]
	if lib.Status != StatusFailed || len(lib.ErrorDetails) != 1 {
		t.Fatalf("lib@m: %+v", lib)
	}
	d := lib.ErrorDetails[0]
	if d.Type != TypeRevoked || d.Layer != string(plugin.LayerPolicy) || d.Object != "lib@m 1.0.0" ||
		d.Message != "lib@m 1.0.0 is "+policy.RevokedReason(rv) || !strings.Contains(d.Message, "revoked by revocation rv-1 (digest "+rv.Digest+"): compromised build") ||
		d.Hint != policy.RevokedHint(rv) || !strings.Contains(d.Hint, "rv-1") || !strings.Contains(d.Hint, "administrator") {
		t.Fatalf("lib@m's error: %+v", d)
	}
	app := got["app@m"]
	if app.Status != StatusDemoted || app.Chain != "app@m needs lib@m; lib@m is disabled (it is enabled but failed: "+TypeRevoked+")" {
		t.Fatalf("app@m: %+v", app)
	}
	if got["safe@m"].Status != StatusActive {
		t.Fatalf("safe@m: %+v", got["safe@m"])
	}
	// The revoked plugin's error is a policy error: exit code 3.
	var pe *plugin.Error
	if err := policy.RevokedError(plugin.LayerPolicy, rv, lib.ID, "1.0.0", rv.Digest); !errors.As(err, &pe) || pe.Layer != plugin.LayerPolicy || err.Error() != d.Message {
		t.Fatalf("RevokedError = %v, want the load pass's message %q", err, d.Message)
	}
	// A revocation of another version does not match.
	rows, _ = List(bg, Options{Revocations: policy.Revocations{{ID: "rv-2", Plugin: "lib@m", Version: "0.9.0", Reason: "old"}}}, in)
	if got := rowsByID(rows)["lib@m"]; got.Status != StatusActive {
		t.Fatalf("a revocation of 0.9.0 withdrew 1.0.0: %+v", got)
	}
	// A disabled plugin is not reported revoked: it would not load anyway.
	in.Enabled[plugin.MustParseID("lib@m")] = false
	rows, _ = List(bg, Options{Revocations: policy.Revocations{rv}}, in)
	if got := rowsByID(rows)["lib@m"]; got.Status != StatusDisabled {
		t.Fatalf("disabled lib@m: %+v", got)
	}
}

// The fast and the full trust check fail one tampered plugin with the same
// object, and both name the changed file.
func TestTrustChecksNameTheSameObject(t *testing.T) {
	recs := installed(t, map[string]string{"a@m": `{"name": "a", "version": "1.0.0"}`})
	r := recs["a@m"]
	cmds := filepath.Join(r.InstallPath, "commands")
	if err := os.Chmod(cmds, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cmds, "go.md"), []byte("gone wrong\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := Input{Records: []cache.Record{r}, Enabled: map[plugin.ID]bool{r.ID: true}}
	var objects []string
	for _, mode := range []Mode{Fast, Full} {
		rows, err := List(bg, Options{Mode: mode}, in)
		if err != nil {
			t.Fatal(err)
		}
		row := rows[0]
		if row.Status != StatusFailed || row.ErrorDetails[0].Type != plugin.TypeTrustRejected || !strings.Contains(row.Errors[0], "commands/go.md") {
			t.Fatalf("mode %d: %+v", mode, row)
		}
		objects = append(objects, row.ErrorDetails[0].Object)
	}
	if !strings.HasPrefix(objects[0], "a@m 1.0.0") || !strings.HasPrefix(objects[1], "a@m 1.0.0") {
		t.Fatalf("objects %q", objects)
	}
}

// A bad manifest fails the plugin alone, and a damaged registry record is
// a failed row with the way out.
func TestManifestAndBrokenRecord(t *testing.T) {
	recs := installed(t, map[string]string{
		"bad@m": `{"name": "bad", "version": 1}`,
		"ok@m":  `{"name": "ok", "version": "1.0.0"}`,
	})
	broken := cache.BrokenRecord{Key: "x@m", ID: plugin.MustParseID("x@m"),
		Err: plugin.Errorf(plugin.LayerMaterialization, "registry-record-corrupt", "x@m", "run: wharf doctor --repair", "record does not decode")}
	in := Input{Records: []cache.Record{recs["bad@m"], recs["ok@m"]}, Broken: []cache.BrokenRecord{broken},
		Enabled: map[plugin.ID]bool{plugin.MustParseID("bad@m"): true, plugin.MustParseID("ok@m"): true, plugin.MustParseID("x@m"): true}}
	units, err := Pass(bg, Options{}, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	Demote(units)
	got := map[string]*Unit{}
	for _, u := range units {
		got[u.ID.String()] = u
	}
	if u := got["bad@m"]; u.Status != StatusFailed || u.ErrorDetails[0].Type != plugin.TypeManifestParse || u.Path != "" {
		t.Fatalf("bad@m: %+v", u)
	}
	if u := got["ok@m"]; u.Status != StatusActive || u.Path != recs["ok@m"].InstallPath {
		t.Fatalf("ok@m: %+v", u)
	}
	if u := got["x@m"]; u.Status != StatusFailed || u.ErrorDetails[0].Hint != "run: wharf doctor --repair" {
		t.Fatalf("x@m: %+v", u)
	}
}

// A Decider keeps no decisions of its own: it returns its policy's answer
// to every request (the policy's memo is the one memo), so a policy that
// changes its answer is heard at once; nil allows.
func TestDeciderAsksItsPolicy(t *testing.T) {
	var nilDecider *Decider
	if err := nilDecider.Check(bg, policy.Request{Action: policy.ActionLoad, Plugin: plugin.MustParseID("a@m")}); err != nil {
		t.Fatal(err)
	}
	p := &fakePolicy{version: "v1", deny: map[string]bool{"b@m": true}}
	d := NewDecider(p)
	d.Begin()
	for i := 0; i < 3; i++ {
		if err := d.Check(bg, policy.Request{Action: policy.ActionLoad, Plugin: plugin.MustParseID("a@m")}); err != nil {
			t.Fatal(err)
		}
		err := d.Check(bg, policy.Request{Action: policy.ActionLoad, Plugin: plugin.MustParseID("b@m")})
		if plugin.LayerOf(err) != plugin.LayerPolicy {
			t.Fatalf("b@m: %v", err)
		}
	}
	if p.asked != 6 {
		t.Fatalf("policy asked %d times, want 6", p.asked)
	}
	p.version, p.deny = "v2", map[string]bool{"a@m": true}
	d.Begin()
	if err := d.Check(bg, policy.Request{Action: policy.ActionLoad, Plugin: plugin.MustParseID("a@m")}); plugin.LayerOf(err) != plugin.LayerPolicy {
		t.Fatalf("the Decider answered from a decision of the previous policy: %v", err)
	}
}

type fakePolicy struct {
	version string
	deny    map[string]bool
	asked   int
}

func (f *fakePolicy) Version() string { return f.version }

func (f *fakePolicy) Decide(_ context.Context, req policy.Request) (policy.Decision, error) {
	f.asked++
	d := policy.Decision{Allowed: true, Reasons: []policy.Reason{}, Warnings: []string{}, PolicyVersion: f.version}
	if f.deny[req.Plugin.String()] {
		d.Allowed = false
		d.Reasons = []policy.Reason{{Layer: "managed", Rule: "test", Message: "no"}}
	}
	return d, nil
}
