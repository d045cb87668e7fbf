package agent

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// systemManaged makes dir the machine's managed directory for the test.
func systemManaged(t testing.TB, dir string) {
	t.Helper()
	old := settings.SystemManagedDir
	settings.SystemManagedDir = dir
	t.Cleanup(func() { settings.SystemManagedDir = old })
}

// A Runtime without a policy is refused, naming the field: it never runs a
// session that nothing decides for.
func TestOpenWithoutPolicyFails(t *testing.T) {
	w := newWorld(t)
	systemManaged(t, w.managed)
	_, err := Open(Options{Home: w.home})
	if !errors.Is(err, ErrNoPolicy) {
		t.Fatalf("Open without a policy: %v", err)
	}
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Object != "Options.Policy" || pe.Layer != plugin.LayerIntent {
		t.Fatalf("error does not name the field: %#v", err)
	}
	if _, err := Open(Options{Policy: &Policy{}}); err == nil || !strings.Contains(err.Error(), "Options.Home") {
		t.Fatalf("Open without a home: %v", err)
	}
}

// closeStore lets Open read the world's registry: the world holds its
// bbolt file open (and locked) until it is closed.
func (w *world) closeStore() {
	w.tb.Helper()
	if err := w.st.Close(); err != nil {
		w.tb.Fatal(err)
	}
}

// An embedder's policy layers (LoadPolicy) sit below the machine's
// managed layers: one that allows a plugin the managed layer denies, even
// one that forces it on, cannot make it active, and one that denies a
// plugin the managed layer allows does keep it out. Open reads the
// managed layers itself, from the system directory and the further one.
func TestEmbedderPolicyOnlyTightens(t *testing.T) {
	w := newWorld(t)
	systemManaged(t, w.managed)
	for _, id := range []string{"denied@corp", "forced@corp", "ok@corp", "mine@corp", "extra@corp"} {
		name := plugin.MustParseID(id).Name
		w.install(id, "1.0.0", map[string]string{".claude-plugin/plugin.json": `{"name": "` + name + `"}`, "commands/go.md": "Go."})
		w.setEnabled(id, true)
	}
	w.closeStore()
	writeTree(t, w.managed, map[string]string{
		"managed-settings.json": `{"enabledPlugins": {"forced@corp": false}}`,
		"org.rego": "package wharf.admin.managed\n\n" +
			"deny contains \"denied@corp is not approved\" if { input.action == \"load\"; input.plugin == \"denied@corp\" }\n",
	})
	extra := filepath.Join(t.TempDir(), "extra")
	writeTree(t, extra, map[string]string{"managed-settings.json": `{"enabledPlugins": {"extra@corp": false}}`})
	// The embedder's layers: a settings file that forces on both plugins
	// the managed layers keep out, and a rule of its own.
	mine := t.TempDir()
	writeTree(t, mine, map[string]string{
		"allow.json": `{"enabledPlugins": {"forced@corp": true, "denied@corp": true, "extra@corp": true}}`,
		"mine.rego": "package wharf.admin.mine\n\n" +
			"deny contains \"not mine\" if { input.action == \"load\"; input.plugin == \"mine@corp\" }\n",
	})
	pol, err := LoadPolicy(filepath.Join(mine, "allow.json"), filepath.Join(mine, "mine.rego"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(Options{Home: w.home, ExtraManagedDir: extra, Policy: pol, NoMemo: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	set := w.load(r, CacheOnly)
	want := map[string]string{"denied@corp": "failed", "forced@corp": "disabled", "extra@corp": "disabled", "mine@corp": "failed", "ok@corp": "active"}
	for id, status := range want {
		p, ok := set.Plugin(plugin.MustParseID(id))
		if !ok || p.Status != status {
			t.Errorf("%s is %q, want %q (%+v)", id, p.Status, status, p)
		}
	}
	if _, ok := set.Lookup(plugin.KindCommand, "ok:go"); !ok {
		t.Fatalf("the allowed plugin's command is not live: %+v %v", set.Components(), set.Warnings())
	}
}

// An embedder's policy that leaves out the managed layers (here one that
// allows everything) cannot make a plugin the managed policy denies active:
// Open reads the managed layers itself and their deny wins.
func TestOpenKeepsTheManagedDeny(t *testing.T) {
	w := newWorld(t)
	systemManaged(t, w.managed)
	w.install("a@corp", "1.0.0", map[string]string{"commands/go.md": "Go."})
	w.install("b@corp", "1.0.0", map[string]string{"commands/stay.md": "Stay."})
	w.setEnabled("a@corp", true)
	w.setEnabled("b@corp", true)
	writeTree(t, w.managed, map[string]string{"org.rego": "package wharf.admin.managed\n\n" +
		"deny contains \"a@corp is not approved\" if { input.action == \"load\"; input.plugin == \"a@corp\" }\n"})
	loose, err := policy.Open(policy.Sources{}) // no managed layer: allows all
	if err != nil {
		t.Fatal(err)
	}

	// The loose policy alone, as a Runtime built without Open ran it.
	o := w.options()
	o.Policy = loose
	o.NoMemo = true
	unguarded := w.load(w.runtime(o), CacheOnly)
	if p, _ := unguarded.Plugin(plugin.MustParseID("a@corp")); p.Status != "active" {
		t.Fatalf("control: without the managed layers a@corp is %s", p.Status)
	}

	r, err := open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	set := w.load(r, CacheOnly)
	a, _ := set.Plugin(plugin.MustParseID("a@corp"))
	if a.Status == "active" {
		t.Fatal("a@corp is active: the embedder's policy dropped the managed deny")
	}
	if b, _ := set.Plugin(plugin.MustParseID("b@corp")); b.Status != "active" {
		t.Fatalf("b@corp, which no layer denies, is %s", b.Status)
	}
	if _, ok := set.Lookup(plugin.KindCommand, "a:go"); ok {
		t.Fatal("the denied plugin's command is live")
	}
}

// When the embedder's policy already has the managed layers on top (the
// home's engine, as wharf's commands open it), Open's guard costs no
// evaluation of its own: a load through Open runs exactly the evaluations
// the same policy runs without the guard, and the managed deny still holds.
// Before, every decision evaluated the managed layers a second time.
func TestOpenEvaluatesEachDecisionOnce(t *testing.T) {
	w := newWorld(t)
	systemManaged(t, w.managed)
	for _, id := range []string{"a@corp", "b@corp", "c@corp", "d@corp"} {
		w.install(id, "1.0.0", map[string]string{"commands/go.md": "Go.", "hooks/hooks.json": `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}`})
		w.setEnabled(id, true)
	}
	writeTree(t, w.managed, map[string]string{"org.rego": "package wharf.admin.managed\n\n" +
		"deny contains \"a@corp is not approved\" if { input.action == \"load\"; input.plugin == \"a@corp\" }\n"})
	home := func() *policy.Engine {
		e, err := policy.Open(policy.Sources{ManagedDir: w.managed})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	o := w.options()
	o.NoMemo = true

	// The control: the home's engine alone.
	alone := home()
	o.Policy = alone
	w.load(w.runtime(o), CacheOnly)
	want := alone.Evaluations()
	if want == 0 {
		t.Fatal("control: the load evaluated nothing")
	}

	o.Policy = home()
	r, err := open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	set := w.load(r, CacheOnly)
	if got := evaluations(r.o.Policy); got != want {
		t.Fatalf("a load through Open ran %d evaluations; the same policy alone runs %d", got, want)
	}
	if a, _ := set.Plugin(plugin.MustParseID("a@corp")); a.Status == "active" {
		t.Fatal("a@corp, which the managed layer denies, is active")
	}
	if b, _ := set.Plugin(plugin.MustParseID("b@corp")); b.Status != "active" {
		t.Fatalf("b@corp is %s", b.Status)
	}
}

// CheckPolicy answers with the session's policy: the managed layers' deny
// and the program's own, each naming its layer, the denial worded as wharf
// reports it, and the session's policy version. A request that does not
// parse is an error.
func TestCheckPolicyAsksTheSessionsPolicy(t *testing.T) {
	w := newWorld(t)
	systemManaged(t, w.managed)
	w.closeStore()
	writeTree(t, w.managed, map[string]string{"org.rego": "package wharf.admin.managed\n\n" +
		"deny contains \"a@corp is not approved\" if { input.action == \"load\"; input.plugin == \"a@corp\" }\n"})
	rules := filepath.Join(t.TempDir(), "team.rego")
	writeTree(t, filepath.Dir(rules), map[string]string{"team.rego": "package wharf.admin.team\n\n" +
		"deny contains \"b@corp is the team's no\" if { input.action == \"load\"; input.plugin == \"b@corp\" }\n"})
	pol, err := LoadPolicy(rules)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(Options{Home: w.home, Policy: pol, NoMemo: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	set := w.load(r, CacheOnly)
	check := func(id string) PolicyDecision {
		t.Helper()
		d, err := r.CheckPolicy(bg, []byte(`{"action": "load", "plugin": "`+id+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		if d.PolicyVersion != set.PolicyVersion() {
			t.Fatalf("decided under %q; the session's policy is %q", d.PolicyVersion, set.PolicyVersion())
		}
		return d
	}
	for id, layer := range map[string]string{"a@corp": "managed", "b@corp": "team"} {
		d := check(id)
		if d.Allowed || len(d.Reasons) == 0 || d.Reasons[0].Layer != layer || !strings.Contains(d.Message, id) {
			t.Errorf("%s: %+v, want a denial by layer %s", id, d, layer)
		}
	}
	if d := check("c@corp"); !d.Allowed || d.Message != "" || d.Reasons == nil {
		t.Errorf("c@corp: %+v", d)
	}
	if _, err := r.CheckPolicy(bg, []byte(`{"action": "fly"}`)); err == nil || !strings.Contains(err.Error(), "action") {
		t.Errorf("a bad request: %v", err)
	}
}

// A Runtime is a hooks.Gate over the session's policy: with managed
// allowManagedHooksOnly, a user hook is refused and a managed one runs.
func TestRuntimeAllowHookAsksTheSessionsPolicy(t *testing.T) {
	w := newWorld(t)
	systemManaged(t, w.managed)
	w.closeStore()
	w.writeManaged(map[string]any{"allowManagedHooksOnly": true})
	r, err := Open(Options{Home: w.home, Policy: &Policy{}, NoMemo: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var pe *plugin.Error
	if err := r.AllowHook(bg, "user", plugin.ID{}); !errors.As(err, &pe) || pe.Layer != plugin.LayerPolicy {
		t.Fatalf("a user hook under allowManagedHooksOnly: %v", err)
	}
	if err := r.AllowHook(bg, "managed", plugin.ID{}); err != nil {
		t.Fatalf("a managed hook: %v", err)
	}
}
