package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/client/load"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

func TestLoadNamespacesAndSubstitutes(t *testing.T) {
	w := newWorld(t)
	rec := w.install("ops@corp", "1.0.0", fullPlugin("ops"))
	w.setEnabled("ops@corp", true)
	r := w.runtime(w.options())
	s := w.load(r, CacheOnly)

	got := names(s)
	want := []string{
		"command ops:deploy plugin", "command ops:help plugin",
		"agent ops:reviewer plugin",
		"skill ops:rotate plugin",
		"output-style ops:terse plugin",
		"hook ops:PreToolUse plugin", "hook ops:Stop plugin",
		"mcp-server plugin:ops:api plugin", "mcp-server plugin:ops:db plugin",
		"lsp-server plugin:ops:gopls plugin",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("components:\n got %q\nwant %q", got, want)
	}
	root := rec.InstallPath
	data := filepath.Join(w.home, "data", "corp", "ops")

	cmd, _ := s.Lookup(plugin.KindCommand, "ops:deploy")
	if cmd.Description != "Deploy the app" || cmd.Path != filepath.Join(root, "commands", "deploy.md") {
		t.Errorf("command: %+v", cmd)
	}
	if got := cmd.Expand("Deploy from ${CLAUDE_PROJECT_DIR}.", w.project); got != "Deploy from "+w.project+"." {
		t.Errorf("Expand = %q", got)
	}
	pre, _ := s.Lookup(plugin.KindHook, "ops:PreToolUse")
	if pre.Hook == nil || len(pre.Hook.Matchers) != 1 || pre.Hook.Matchers[0].Matcher != "Edit|Write" {
		t.Fatalf("hook: %+v", pre.Hook)
	}
	if c := pre.Hook.Matchers[0].Hooks[0].Command; c != root+"/bin/check --data "+data+" --project "+w.project {
		t.Errorf("hook command = %q", c)
	}
	stop, _ := s.Lookup(plugin.KindHook, "ops:Stop")
	if stop.Path != plugin.ManifestFile(root) || stop.Hook.Matchers[0].Hooks[0].Command != root+"/bin/stop" {
		t.Errorf("manifest hook: %+v %+v", stop, stop.Hook)
	}
	db, _ := s.Lookup(plugin.KindMCPServer, "plugin:ops:db")
	if db.MCP.Command != root+"/bin/db" || db.MCP.Args[1] != data || db.MCP.Env["ROOT"] != root {
		t.Errorf("mcp: %+v", db.MCP)
	}
	if got := db.ToolName("query"); got != "mcp__plugin_ops_db__query" {
		t.Errorf("ToolName = %q", got)
	}
	lsp, _ := s.Lookup(plugin.KindLSPServer, "plugin:ops:gopls")
	if lsp.LSP.Args[1] != data+"/gopls.log" {
		t.Errorf("lsp: %+v", lsp.LSP)
	}
	env := strings.Join(db.Env(w.project), "\n")
	for _, want := range []string{"CLAUDE_PLUGIN_ROOT=" + root, "WHARF_PLUGIN_ROOT=" + root, "CLAUDE_PLUGIN_DATA=" + data, "CLAUDE_PROJECT_DIR=" + w.project} {
		if !strings.Contains(env, want) {
			t.Errorf("Env lacks %s:\n%s", want, env)
		}
	}
	st, ok := s.Plugin(plugin.MustParseID("ops@corp"))
	if !ok || st.Status != load.StatusActive || st.Components != 10 {
		t.Errorf("status: %+v", st)
	}
}

func TestToolName(t *testing.T) {
	for _, tc := range []struct{ p, s, tool, want string }{
		{"ops", "db", "query", "mcp__plugin_ops_db__query"},
		{"my.plugin", "srv name", "do/it", "mcp__plugin_my_plugin_srv_name__do_it"},
	} {
		if got := ToolName(tc.p, tc.s, tc.tool); got != tc.want {
			t.Errorf("ToolName(%q,%q,%q) = %q, want %q", tc.p, tc.s, tc.tool, got, tc.want)
		}
	}
	if got := ServerToolName("github", "search"); got != "mcp__github__search" {
		t.Errorf("ServerToolName = %q", got)
	}
}

func TestPluginCannotReplaceBuiltinHelp(t *testing.T) {
	w := newWorld(t)
	w.install("ops@corp", "1.0.0", fullPlugin("ops"))
	w.setEnabled("ops@corp", true)
	writeTree(t, w.home, map[string]string{"commands/help.md": "my help", "commands/mine.md": "mine"})
	o := w.options()
	o.Builtins = []Builtin{{Kind: plugin.KindCommand, Name: "help"}, {Kind: plugin.KindCommand, Name: "clear"}}
	act := newRecorder()
	o.Activator = act
	s := w.load(w.runtime(o), CacheOnly)

	for _, c := range s.Components() {
		if c.Kind == plugin.KindCommand && (c.Local == "help" || c.Name == "help") {
			t.Fatalf("%s %s from %s was loaded next to builtin /help", c.Kind, c.Name, c.Source)
		}
	}
	if act.isLive("command ops:help") || act.isLive("command help") {
		t.Fatal("a help command was activated")
	}
	if !act.isLive("command ops:deploy") || !act.isLive("command mine") {
		t.Fatalf("other commands missing: %v", act.liveKeys())
	}
	var collided []string
	for _, sk := range s.Skipped() {
		var pe *plugin.Error
		if !errors.As(sk.Err, &pe) || pe.Type != TypeCollision || pe.Layer != plugin.LayerActive {
			t.Errorf("skip error %v is not a collision", sk.Err)
		}
		collided = append(collided, sk.Component.Source+" "+sk.Component.Name)
	}
	if !reflect.DeepEqual(collided, []string{"user help", "plugin ops:help"}) {
		t.Errorf("skipped = %q", collided)
	}
	st, _ := s.Plugin(plugin.MustParseID("ops@corp"))
	if len(st.Skipped) != 1 || !strings.Contains(st.Skipped[0], "would shadow builtin command help") {
		t.Errorf("status skipped = %q", st.Skipped)
	}
}

func TestProjectShadowsUserComponent(t *testing.T) {
	w := newWorld(t)
	writeTree(t, w.home, map[string]string{"commands/fmt.md": "---\ndescription: user\n---\n", "skills/lint/SKILL.md": "---\ndescription: user lint\n---\n"})
	writeTree(t, filepath.Join(w.project, ".wharf"), map[string]string{"commands/fmt.md": "---\ndescription: project\n---\n", "agents/a.md": "a"})
	s := w.load(w.runtime(w.options()), CacheOnly)
	want := []string{"command fmt project", "agent a project", "skill lint user"}
	if got := names(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q want %q", got, want)
	}
	if sk := s.Skipped(); len(sk) != 1 || sk[0].Component.Source != SourceUser {
		t.Fatalf("skipped %+v", sk)
	}
}

func TestDisabledPluginGoneAfterReload(t *testing.T) {
	w := newWorld(t)
	w.install("a@corp", "1.0.0", smallPlugin("a"))
	w.install("b@corp", "1.0.0", smallPlugin("b"))
	w.setEnabled("a@corp", true)
	w.setEnabled("b@corp", true)
	writeTree(t, w.home, map[string]string{"commands/mine.md": "mine"})
	w.writeManaged(map[string]any{"hooks": map[string]any{"Stop": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "audit"}}}}}})
	act := newRecorder()
	o := w.options()
	o.Activator = act
	r := w.runtime(o)
	w.load(r, CacheOnly)
	for _, k := range []string{"command a:run", "skill a:s", "hook a:SessionStart", "command b:run", "command mine", "hook Stop"} {
		if !act.isLive(k) {
			t.Fatalf("%s not live: %v", k, act.liveKeys())
		}
	}
	act.takeLog()

	w.setEnabled("a@corp", false)
	s := w.load(r, CacheOnly)
	for _, k := range []string{"command a:run", "skill a:s", "hook a:SessionStart"} {
		if act.isLive(k) {
			t.Errorf("%s still live after disabling a@corp", k)
		}
		if _, ok := s.Lookup(plugin.ComponentKind(strings.Fields(k)[0]), strings.Fields(k)[1]); ok {
			t.Errorf("%s still in the set", k)
		}
	}
	if !act.isLive("command b:run") || !act.isLive("command mine") || !act.isLive("hook Stop") {
		t.Errorf("reload lost components it should have kept: %q", act.liveKeys())
	}
	// b's, the user's and managed components were untouched: only a's
	// undos ran.
	for _, l := range act.takeLog() {
		if !strings.HasPrefix(l, "-") || !strings.Contains(l, " a:") {
			t.Errorf("reload did %s", l)
		}
	}
	if st, _ := s.Plugin(plugin.MustParseID("a@corp")); st.Status != load.StatusDisabled {
		t.Errorf("a@corp status %q", st.Status)
	}
}

func TestUndosRunLIFO(t *testing.T) {
	w := newWorld(t)
	w.install("a@corp", "1.0.0", smallPlugin("a"))
	w.setEnabled("a@corp", true)
	act := newRecorder()
	o := w.options()
	o.Activator = act
	r := w.runtime(o)
	w.load(r, CacheOnly)
	on := act.takeLog()
	if len(on) != 3 {
		t.Fatalf("activations %q", on)
	}
	w.setEnabled("a@corp", false)
	w.load(r, CacheOnly)
	off := act.takeLog()
	var want []string
	for i := len(on) - 1; i >= 0; i-- {
		want = append(want, "-"+on[i][1:])
	}
	if !reflect.DeepEqual(off, want) {
		t.Fatalf("undo order %q, want %q (reverse of %q)", off, want, on)
	}

	// Close undoes in reverse activation order too.
	w.setEnabled("a@corp", true)
	w.load(r, CacheOnly)
	on = act.takeLog()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	off = act.takeLog()
	want = want[:0]
	for i := len(on) - 1; i >= 0; i-- {
		want = append(want, "-"+on[i][1:])
	}
	if !reflect.DeepEqual(off, want) {
		t.Fatalf("close order %q, want %q", off, want)
	}
	if _, err := r.Load(bg, CacheOnly); !errors.Is(err, ErrClosed) {
		t.Fatalf("load after close: %v", err)
	}
}

func TestOldHooksArmedUntilNewSetInPlace(t *testing.T) {
	w := newWorld(t)
	w.install("a@corp", "1.0.0", smallPlugin("a"))
	w.setEnabled("a@corp", true)
	act := newRecorder()
	o := w.options()
	o.Activator = act
	r := w.runtime(o)
	w.load(r, CacheOnly)

	// Update a@corp to 2.0.0: its hook changes content; while the new
	// set activates, the old hook must still be armed.
	files := smallPlugin("a")
	files["hooks/hooks.json"] = `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo v2"}]}]}}`
	files[".claude-plugin/plugin.json"] = `{"name": "a", "version": "2.0.0"}`
	w.install("a@corp", "2.0.0", files)
	var sawOld bool
	act.during = func(c Component) {
		if c.Kind == plugin.KindHook {
			sawOld = act.isLive("hook a:SessionStart") && r.Current().mode == CacheOnly &&
				r.Current().plugins[0].Version == "1.0.0"
		}
	}
	s := w.load(r, CacheOnly)
	if !sawOld {
		t.Fatal("the old hook was not armed while the new one was activated")
	}
	h, _ := s.Lookup(plugin.KindHook, "a:SessionStart")
	if h.Hook.Matchers[0].Hooks[0].Command != "echo v2" {
		t.Fatalf("hook %+v", h.Hook)
	}
	if got := act.liveKeys(); !reflect.DeepEqual(got, []string{"command a:run", "hook a:SessionStart", "skill a:s"}) {
		t.Fatalf("live after update: %q", got)
	}
}

func TestFailedActivationKeepsPreviousSet(t *testing.T) {
	w := newWorld(t)
	w.install("a@corp", "1.0.0", smallPlugin("a"))
	w.install("b@corp", "1.0.0", smallPlugin("b"))
	w.setEnabled("a@corp", true)
	act := newRecorder()
	o := w.options()
	o.Activator = act
	r := w.runtime(o)
	first := w.load(r, CacheOnly)
	before := act.liveKeys()

	act.fail = "b:s"
	w.setEnabled("b@corp", true)
	_, err := r.Load(bg, CacheOnly)
	if plugin.LayerOf(err) != plugin.LayerActive {
		t.Fatalf("err = %v", err)
	}
	if r.Current() != first {
		t.Fatal("a failed reload replaced the set")
	}
	if got := act.liveKeys(); !reflect.DeepEqual(got, before) {
		t.Fatalf("live after failed reload %q, want %q", got, before)
	}
}

func TestLatePluginDirFails(t *testing.T) {
	w := newWorld(t)
	dir := filepath.Join(t.TempDir(), "dev")
	writeTree(t, dir, smallPlugin("dev"))
	r := w.runtime(w.options())
	if err := r.AddPluginDir(bg, dir); err != nil {
		t.Fatal(err)
	}
	s := w.load(r, CacheOnly)
	if _, ok := s.Lookup(plugin.KindCommand, "dev:run"); !ok {
		t.Fatalf("inline plugin not loaded: %q", names(s))
	}
	st, _ := s.Plugin(plugin.ID{Name: "dev", Source: plugin.SourceInline})
	if st.Source != plugin.SourceInline || st.Status != load.StatusActive {
		t.Fatalf("inline status %+v", st)
	}
	other := filepath.Join(t.TempDir(), "late")
	writeTree(t, other, smallPlugin("late"))
	err := r.AddPluginDir(bg, other)
	if !errors.Is(err, ErrLateSideload) || plugin.LayerOf(err) != plugin.LayerIntent {
		t.Fatalf("late AddPluginDir: %v", err)
	}
	s = w.load(r, CacheOnly)
	if _, ok := s.Lookup(plugin.KindCommand, "late:run"); ok {
		t.Fatal("a late plugin dir was loaded")
	}
	// Nothing was persisted: a fresh runtime does not see the dir.
	s = w.load(w.runtime(w.options()), CacheOnly)
	if len(s.Plugins()) != 0 {
		t.Fatalf("inline plugin persisted: %+v", s.Plugins())
	}
}

func TestSideloadRefusedByPolicy(t *testing.T) {
	w := newWorld(t)
	w.writeManaged(map[string]any{"disableSideloadFlags": true})
	dir := filepath.Join(t.TempDir(), "dev")
	writeTree(t, dir, smallPlugin("dev"))
	o := w.options()
	o.Policy = w.policy()
	r := w.runtime(o)
	err := r.AddPluginDir(bg, dir)
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Layer != plugin.LayerPolicy || pe.Type != plugin.TypePolicyDenied || !strings.Contains(err.Error(), "disableSideloadFlags") {
		t.Fatalf("AddPluginDir under disableSideloadFlags: %v", err)
	}
	s := w.load(r, CacheOnly)
	if len(s.Plugins()) != 0 || len(s.Components()) != 0 {
		t.Fatalf("refused dir loaded: %q", names(s))
	}
}

// tamper makes one change to an installed (read-only) version dir,
// restoring the modes it had to loosen.
func tamper(t *testing.T, root, how string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	f := filepath.Join(root, "commands", "run.md")
	switch how {
	case "modify-a-byte":
		fi, err := os.Stat(f)
		must(err)
		b, err := os.ReadFile(f)
		must(err)
		b[len(b)-2] ^= 0x20 // same size, other content
		time.Sleep(10 * time.Millisecond)
		must(os.Chmod(f, 0o644))
		must(os.WriteFile(f, b, 0o644))
		must(os.Chmod(f, fi.Mode().Perm()))
	case "flip-exec-bit":
		fi, err := os.Stat(f)
		must(err)
		must(os.Chmod(f, fi.Mode().Perm()|0o100))
	case "add-a-file":
		d := filepath.Join(root, "commands")
		fi, err := os.Stat(d)
		must(err)
		must(os.Chmod(d, 0o755))
		must(os.WriteFile(filepath.Join(d, "evil.md"), []byte("run evil"), 0o444))
		must(os.Chmod(d, fi.Mode().Perm()))
	default:
		t.Fatalf("unknown tamper %q", how)
	}
}

func TestTamperedPluginRefusedOnCacheOnlyPath(t *testing.T) {
	for _, how := range []string{"modify-a-byte", "flip-exec-bit", "add-a-file"} {
		t.Run(how, func(t *testing.T) {
			w := newWorld(t)
			rec := w.install("a@corp", "1.0.0", smallPlugin("a"))
			w.install("b@corp", "1.0.0", smallPlugin("b"))
			w.setEnabled("a@corp", true)
			w.setEnabled("b@corp", true)
			act := newRecorder()
			o := w.options()
			o.Activator = act
			r := w.runtime(o)
			w.load(r, CacheOnly)
			tamper(t, rec.InstallPath, how)

			s := w.load(r, CacheOnly)
			st, _ := s.Plugin(plugin.MustParseID("a@corp"))
			if st.Status != load.StatusFailed || len(st.ErrorDetails) != 1 ||
				st.ErrorDetails[0].Type != plugin.TypeTrustRejected || st.ErrorDetails[0].Layer != string(plugin.LayerTrust) {
				t.Fatalf("status after %s: %+v", how, st)
			}
			if !strings.Contains(st.Errors[0], "commands") {
				t.Errorf("error does not name the change: %s", st.Errors[0])
			}
			for _, c := range s.Components() {
				if c.Plugin.Name == "a" {
					t.Fatalf("tampered plugin component %s loaded", c.Name)
				}
			}
			if act.isLive("command a:run") || !act.isLive("command b:run") {
				t.Fatalf("live: %q", act.liveKeys())
			}
		})
	}
}

func TestFullLoadReplacesCacheOnly(t *testing.T) {
	w := newWorld(t)
	rec := w.install("a@corp", "1.0.0", smallPlugin("a"))
	w.setEnabled("a@corp", true)
	act := newRecorder()
	o := w.options()
	o.Activator = act
	r := w.runtime(o)

	// An edit whose new stats were also written into the registry's
	// fingerprint (the digest left as installed): the stat check passes;
	// only the full loader's re-hash sees it.
	tamper(t, rec.InstallPath, "modify-a-byte")
	fp, err := trust.Fingerprint(rec.InstallPath)
	if err != nil {
		t.Fatal(err)
	}
	rec.Fingerprint = fp
	if err := w.c.Put(bg, rec); err != nil {
		t.Fatal(err)
	}
	fast := w.load(r, CacheOnly)
	if st, _ := fast.Plugin(rec.ID); st.Status != load.StatusActive {
		t.Fatalf("cache-only status %+v", st)
	}
	full := w.load(r, Full)
	if r.Current() != full || full.Mode() != Full {
		t.Fatal("the full result did not replace the cache-only one")
	}
	st, _ := full.Plugin(rec.ID)
	if st.Status != load.StatusFailed || st.ErrorDetails[0].Type != plugin.TypeTrustRejected {
		t.Fatalf("full status %+v", st)
	}
	if act.isLive("command a:run") {
		t.Fatal("the tampered plugin stayed live after the full load")
	}
}

func TestCacheOnlyAndFullAgreeOnCleanTrees(t *testing.T) {
	w := newWorld(t)
	w.install("ops@corp", "1.0.0", fullPlugin("ops"))
	w.install("a@corp", "1.0.0", smallPlugin("a"))
	w.setEnabled("ops@corp", true)
	w.setEnabled("a@corp", true)
	parsed := w.load(w.runtime(w.options()), CacheOnly)
	index := filepath.Join(w.home, "agent", "components.idx")
	if _, err := os.Stat(index); err != nil {
		t.Fatal(err)
	}
	// The next session reads the component index instead of the trees.
	indexed := w.load(w.runtime(w.options()), CacheOnly)
	full := w.load(w.runtime(w.options()), Full)
	if len(parsed.Components()) != 13 {
		t.Fatalf("components %q", names(parsed))
	}
	if !reflect.DeepEqual(parsed.Components(), indexed.Components()) {
		t.Fatalf("parsed %+v\nindexed %+v", parsed.Components(), indexed.Components())
	}
	if !reflect.DeepEqual(parsed.Components(), full.Components()) {
		t.Fatalf("cache-only %q\nfull %q", names(parsed), names(full))
	}
	// A damaged index is ignored, never trusted.
	if err := os.WriteFile(index, []byte("not an index at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	damaged := w.load(w.runtime(w.options()), CacheOnly)
	if !reflect.DeepEqual(parsed.Components(), damaged.Components()) {
		t.Fatalf("with a damaged index: %q", names(damaged))
	}
}

func TestIndexIsKeyedOnProjectAndData(t *testing.T) {
	w := newWorld(t)
	w.install("ops@corp", "1.0.0", fullPlugin("ops"))
	w.setEnabled("ops@corp", true)
	w.load(w.runtime(w.options()), CacheOnly)
	o := w.options()
	o.Project = filepath.Join(t.TempDir(), "elsewhere")
	s := w.load(w.runtime(o), CacheOnly)
	h, _ := s.Lookup(plugin.KindHook, "ops:PreToolUse")
	if c := h.Hook.Matchers[0].Hooks[0].Command; !strings.HasSuffix(c, "--project "+o.Project) {
		t.Fatalf("hook command %q kept the old project dir", c)
	}
}

func TestDemotionChainInStatus(t *testing.T) {
	w := newWorld(t)
	w.install("a@corp", "1.0.0", smallPlugin("a", "b"))
	w.install("b@corp", "1.0.0", smallPlugin("b", "c"))
	w.install("c@corp", "1.0.0", smallPlugin("c"))
	for _, id := range []string{"a@corp", "b@corp"} {
		w.setEnabled(id, true)
	}
	w.setEnabled("c@corp", false)
	s := w.load(w.runtime(w.options()), CacheOnly)
	st, _ := s.Plugin(plugin.MustParseID("a@corp"))
	if st.Status != load.StatusDemoted || st.ErrorDetails[0].Type != plugin.TypeDependencyUnsatisfied ||
		!strings.Contains(st.Chain, "a@corp needs b@corp; b@corp needs c@corp; c@corp is disabled") {
		t.Fatalf("a@corp: %+v", st)
	}
	if len(s.Components()) != 0 {
		t.Fatalf("demoted components loaded: %q", names(s))
	}
	// Uninstalling b leaves a demoted with "not installed".
	w.uninstall("b@corp")
	s = w.load(w.runtime(w.options()), CacheOnly)
	st, _ = s.Plugin(plugin.MustParseID("a@corp"))
	if st.Status != load.StatusDemoted || !strings.Contains(st.Chain, "b@corp is not installed") {
		t.Fatalf("a@corp: %+v", st)
	}
	// b, still enabled, is a failed row of its own (the load pass's), not a
	// warning.
	if w := s.Warnings(); len(w) != 0 {
		t.Fatalf("warnings %q", w)
	}
	st, ok := s.Plugin(plugin.MustParseID("b@corp"))
	if !ok || st.Status != load.StatusFailed || st.Source != "settings" || len(st.ErrorDetails) != 1 ||
		st.ErrorDetails[0].Type != load.TypeNotInstalled || st.ErrorDetails[0].Hint != "install it with: wharf install b@corp" {
		t.Fatalf("b@corp: %+v", st)
	}
}

func TestManagedForcing(t *testing.T) {
	w := newWorld(t)
	w.install("on@corp", "1.0.0", smallPlugin("on"))
	w.install("off@corp", "1.0.0", smallPlugin("off"))
	w.setEnabled("off@corp", true)
	w.writeManaged(map[string]any{"enabledPlugins": map[string]bool{"on@corp": true, "off@corp": false}})
	o := w.options()
	o.Policy = w.policy()
	s := w.load(w.runtime(o), CacheOnly)
	on, _ := s.Plugin(plugin.MustParseID("on@corp"))
	off, _ := s.Plugin(plugin.MustParseID("off@corp"))
	if on.Status != load.StatusActive || on.Forced != "on" {
		t.Errorf("forced on: %+v", on)
	}
	if off.Status != load.StatusDisabled || off.Forced != "off" {
		t.Errorf("forced off: %+v", off)
	}
	if _, ok := s.Lookup(plugin.KindCommand, "off:run"); ok {
		t.Error("a forced-off plugin loaded")
	}
	if _, ok := s.Lookup(plugin.KindCommand, "on:run"); !ok {
		t.Error("a forced-on plugin did not load")
	}
}

func TestStrictPluginOnlyCustomization(t *testing.T) {
	w := newWorld(t)
	w.install("a@corp", "1.0.0", smallPlugin("a"))
	w.setEnabled("a@corp", true)
	writeTree(t, w.home, map[string]string{"commands/mine.md": "m", "skills/myskill/SKILL.md": "s"})
	writeTree(t, filepath.Join(w.project, ".wharf"), map[string]string{"commands/proj.md": "p"})
	w.writeSettings(settings.ScopeProject, map[string]any{"mcpServers": map[string]any{"local-db": map[string]any{"command": "db"}}})
	w.writeManaged(map[string]any{
		"strictPluginOnlyCustomization": []string{"commands", "mcp-servers"},
		"mcpServers":                    map[string]any{"corp-db": map[string]any{"command": "corpdb"}},
	})
	o := w.options()
	o.Policy = w.policy()
	s := w.load(w.runtime(o), CacheOnly)
	got := names(s)
	for _, want := range []string{"command a:run plugin", "skill myskill user", "mcp-server corp-db managed"} {
		if !has(got, want) {
			t.Errorf("missing %s in %q", want, got)
		}
	}
	var locked []string
	for _, sk := range s.Skipped() {
		if plugin.LayerOf(sk.Err) != plugin.LayerPolicy || !strings.Contains(sk.Err.Error(), "strictPluginOnlyCustomization") {
			t.Errorf("%s skipped with %v", sk.Component.Name, sk.Err)
		}
		locked = append(locked, sk.Component.Source+" "+sk.Component.Name)
	}
	if !reflect.DeepEqual(locked, []string{"user mine", "project proj", "project local-db"}) {
		t.Errorf("locked = %q", locked)
	}
}

func TestAllowManagedHooksOnly(t *testing.T) {
	w := newWorld(t)
	w.install("a@corp", "1.0.0", smallPlugin("a"))
	w.install("forced@corp", "1.0.0", smallPlugin("forced"))
	w.setEnabled("a@corp", true)
	hook := map[string]any{"Stop": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "echo ${CLAUDE_PROJECT_DIR}"}}}}}
	w.writeSettings(settings.ScopeUser, map[string]any{"enabledPlugins": map[string]bool{"a@corp": true}, "hooks": hook})
	w.writeManaged(map[string]any{"allowManagedHooksOnly": true, "hooks": hook, "enabledPlugins": map[string]bool{"forced@corp": true}})
	o := w.options()
	o.Policy = w.policy()
	s := w.load(w.runtime(o), CacheOnly)
	var hooks []string
	for _, c := range s.ComponentsOf(plugin.KindHook) {
		hooks = append(hooks, c.Source+" "+c.Name)
	}
	if !reflect.DeepEqual(hooks, []string{"managed Stop", "plugin forced:SessionStart"}) {
		t.Fatalf("hooks = %q", hooks)
	}
	mh, _ := s.Lookup(plugin.KindHook, "Stop")
	if mh.Hook.Matchers[0].Hooks[0].Command != "echo "+w.project {
		t.Errorf("managed hook command %q", mh.Hook.Matchers[0].Hooks[0].Command)
	}
	if _, ok := s.Lookup(plugin.KindCommand, "a:run"); !ok {
		t.Error("a@corp lost its command: only hooks are restricted")
	}
	var refused []string
	for _, sk := range s.Skipped() {
		if plugin.LayerOf(sk.Err) != plugin.LayerPolicy {
			t.Errorf("%s: %v", sk.Component.Name, sk.Err)
		}
		refused = append(refused, sk.Component.Source+" "+sk.Component.Name)
	}
	if !reflect.DeepEqual(refused, []string{"user Stop", "plugin a:SessionStart"}) {
		t.Errorf("refused = %q", refused)
	}
}

func TestPolicyMemo(t *testing.T) {
	w := newWorld(t)
	w.install("a@corp", "1.0.0", smallPlugin("a"))
	w.setEnabled("a@corp", true)
	w.writeManaged(map[string]any{"enabledPlugins": map[string]bool{"x@corp": false}})
	count := &countingPolicy{Engine: w.policy()}
	o := w.options()
	o.Policy = count
	r := w.runtime(o)
	w.load(r, CacheOnly)
	first := count.n
	if first == 0 {
		t.Fatal("policy was not asked")
	}
	// The runtime saved the engine's memo file: the one memo of the home.
	if _, err := os.Stat(w.memoFile()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w.home, "agent", "policy-decisions.gob")); !os.IsNotExist(err) {
		t.Fatalf("a second memo file was written: %v", err)
	}
	// A reload under the same policy version evaluates nothing.
	hits := count.MemoHits()
	w.load(r, CacheOnly)
	if got := count.MemoHits() - hits; got != int64(first) {
		t.Fatalf("the memo answered %d of %d decisions of a reload", got, first)
	}
	// A new process with the same policy version evaluates nothing: the
	// memo file answers every decision.
	eng := w.policy()
	o.Policy = eng
	w.load(w.runtime(o), CacheOnly)
	if hits := eng.MemoHits(); hits != int64(first) {
		t.Fatalf("the memo file answered %d of %d decisions", hits, first)
	}
	// A memo made by another build of wharf is not used.
	data, err := os.ReadFile(w.memoFile())
	if err != nil {
		t.Fatal(err)
	}
	// The header line, a line of JSON, then the keys.
	head, body, _ := strings.Cut(string(data), "\n")
	line, keys, _ := strings.Cut(body, "\n")
	var doc map[string]any
	if err := json.Unmarshal([]byte(line), &doc); err != nil {
		t.Fatal(err)
	}
	doc["build"] = "another build"
	other, _ := json.Marshal(doc)
	if err := os.WriteFile(w.memoFile(), []byte(head+"\n"+string(other)+"\n"+keys), 0o644); err != nil {
		t.Fatal(err)
	}
	eng = w.policy()
	o.Policy = eng
	w.load(w.runtime(o), CacheOnly)
	if hits := eng.MemoHits(); hits != 0 {
		t.Fatalf("a memo of another build answered %d decisions", hits)
	}
	// A changed policy makes the memo stale: forced off now wins.
	w.writeManaged(map[string]any{"enabledPlugins": map[string]bool{"a@corp": false}})
	o.Policy = &countingPolicy{Engine: w.policy()}
	s := w.load(w.runtime(o), CacheOnly)
	if st, _ := s.Plugin(plugin.MustParseID("a@corp")); st.Forced != "off" || st.Status != load.StatusDisabled {
		t.Fatalf("stale memo used: %+v", st)
	}
}

// countingPolicy counts the decisions asked of an engine; its memo file
// methods are the engine's.
type countingPolicy struct {
	*policy.Engine
	n int
}

func (c *countingPolicy) Decide(ctx context.Context, req policy.Request) (policy.Decision, error) {
	c.n++
	return c.Engine.Decide(ctx, req)
}

func TestRegistryErrorsAndLeases(t *testing.T) {
	w := newWorld(t)
	rec := w.install("a@corp", "1.0.0", smallPlugin("a"))
	w.setEnabled("a@corp", true)
	r := w.runtime(w.options())
	w.load(r, CacheOnly)
	leases, err := w.c.Leases(false)
	if err != nil || len(leases) != 1 || leases[0].Paths[0] != rec.InstallPath {
		t.Fatalf("leases %+v %v", leases, err)
	}
	w.setEnabled("a@corp", false)
	w.load(r, CacheOnly)
	if leases, _ := w.c.Leases(false); len(leases) != 0 {
		t.Fatalf("lease kept after the plugin went: %+v", leases)
	}
	if _, err := Open(Options{}); err == nil {
		t.Fatal("New without a registry")
	}
}

func TestStatusErrorLayers(t *testing.T) {
	w := newWorld(t)
	w.install("broken@corp", "1.0.0", map[string]string{
		".claude-plugin/plugin.json": `{"name": "broken", "version": 1.0}`,
		"commands/x.md":              "x",
	})
	w.setEnabled("broken@corp", true)
	one := filepath.Join(t.TempDir(), "one")
	two := filepath.Join(t.TempDir(), "two")
	writeTree(t, one, smallPlugin("dev"))
	writeTree(t, two, smallPlugin("dev"))
	r := w.runtime(w.options())
	for _, d := range []string{one, two} {
		if err := r.AddPluginDir(bg, d); err != nil {
			t.Fatal(err)
		}
	}
	s := w.load(r, CacheOnly)
	st, _ := s.Plugin(plugin.MustParseID("broken@corp"))
	if st.Status != load.StatusFailed || st.ErrorDetails[0].Layer != string(plugin.LayerMaterialization) ||
		st.ErrorDetails[0].Type != plugin.TypeManifestParse || !strings.Contains(st.Errors[0], "version") {
		t.Fatalf("broken manifest: %+v", st)
	}
	var conflict bool
	for _, p := range s.Plugins() {
		for _, d := range p.ErrorDetails {
			if p.ID.Source == plugin.SourceInline && d.Layer == string(plugin.LayerIntent) && d.Type == plugin.TypeConflict {
				conflict = true
			}
		}
	}
	if !conflict {
		t.Fatalf("two session dirs named dev: %+v", s.Plugins())
	}
}

func TestCurrentDuringReloads(t *testing.T) {
	w := newWorld(t)
	w.install("a@corp", "1.0.0", smallPlugin("a"))
	r := w.runtime(w.options())
	if r.Current() != nil {
		t.Fatal("a set before the first load")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 6; i++ {
			w.setEnabled("a@corp", i%2 == 0)
			if _, err := r.Load(bg, CacheOnly); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for {
		select {
		case <-done:
			if s := r.Current(); s == nil || len(s.Components()) != 0 {
				t.Fatalf("final set %v", s)
			}
			return
		default:
			if s := r.Current(); s != nil {
				if n := len(s.Components()); n != 0 && n != 3 {
					t.Fatalf("a half-built set with %d components", n)
				}
			}
		}
	}
}

func TestProjectAtHomeIsNotReadTwice(t *testing.T) {
	w := newWorld(t)
	writeTree(t, w.home, map[string]string{"commands/mine.md": "m"})
	o := w.options()
	o.Home = filepath.Join(w.project, ".wharf")
	writeTree(t, o.Home, map[string]string{"commands/mine.md": "m"})
	s := w.load(w.runtime(o), CacheOnly)
	if got := names(s); !reflect.DeepEqual(got, []string{"command mine user"}) || len(s.Skipped()) != 0 {
		t.Fatalf("components %q skipped %+v", got, s.Skipped())
	}
}

// Settings documents without hooks or MCP servers are not parsed again for
// them; a document whose keys are written with JSON escapes still is.
func TestSettingsHooksWithEscapedKeys(t *testing.T) {
	w := newWorld(t)
	p := w.paths().File(settings.ScopeUser)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	doc := `{"\u0068ooks": {"Stop": [{"\u0068ooks": [{"type": "command", "command": "audit"}]}]},
		"mcp\u0053ervers": {"api": {"command": "api"}}}`
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	s := w.load(w.runtime(w.options()), CacheOnly)
	if h, ok := s.Lookup(plugin.KindHook, "Stop"); !ok || h.Source != SourceUser {
		t.Errorf("hook of an escaped key not loaded: %q", names(s))
	}
	if _, ok := s.Lookup(plugin.KindMCPServer, "api"); !ok {
		t.Errorf("MCP server of an escaped key not loaded: %q", names(s))
	}
	if err := os.WriteFile(p, []byte(`{"enabledPlugins": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := w.load(w.runtime(w.options()), CacheOnly); len(s.Components()) != 0 {
		t.Errorf("components from a document without any: %q", names(s))
	}
}

// A session plugin dir provides the plugin settings enable under its id
// (name@inline): it is loaded, and not also listed as not installed.
func TestPluginDirProvidesAnEnabledPlugin(t *testing.T) {
	w := newWorld(t)
	w.setEnabled("dev@"+plugin.SourceInline, true)
	w.setEnabled("gone@corp", true)
	dir := filepath.Join(t.TempDir(), "dev")
	writeTree(t, dir, smallPlugin("dev"))
	r := w.runtime(w.options())
	if err := r.AddPluginDir(bg, dir); err != nil {
		t.Fatal(err)
	}
	s := w.load(r, CacheOnly)
	ps := s.Plugins()
	if len(ps) != 2 {
		t.Fatalf("plugins %+v, want dev@inline and gone@corp", ps)
	}
	if st, _ := s.Plugin(plugin.ID{Name: "dev", Source: plugin.SourceInline}); st.Source != plugin.SourceInline || st.Status != load.StatusActive {
		t.Fatalf("dev@inline: %+v", st)
	}
	if st, _ := s.Plugin(plugin.MustParseID("gone@corp")); st.Source != "settings" || !hasErrorType(st, load.TypeNotInstalled) {
		t.Fatalf("gone@corp: %+v", st)
	}
}

// hasErrorType reports whether st has an error of type typ.
func hasErrorType(st PluginStatus, typ string) bool {
	for _, d := range st.ErrorDetails {
		if d.Type == typ {
			return true
		}
	}
	return false
}

// TestCacheOnlyEqualsFullOnBenchHome is the benchmark's home at a small
// size (plugins of commands, skills, an agent, an output style, hooks and
// an MCP server): a cache-only start from the component index gives the
// set the full loader's re-hash gives, and after a tree is tampered with
// both refuse it with a trust error and agree on everything else.
func TestCacheOnlyEqualsFullOnBenchHome(t *testing.T) {
	for _, how := range []string{"modify-a-byte", "flip-exec-bit", "add-a-file"} {
		t.Run(how, func(t *testing.T) {
			w := newWorld(t)
			var victim cache.Record
			for i := 0; i < 12; i++ {
				name := fmt.Sprintf("p%02d", i)
				files := benchPlugin(name)
				files["commands/run.md"] = "---\ndescription: Run\n---\nRun it.\n"
				rec := w.install(name+"@bench", "1.0.0", files)
				w.setEnabled(name+"@bench", true)
				if i == 5 {
					victim = rec
				}
			}
			w.load(w.runtime(w.options()), CacheOnly) // writes the component index
			agree := func(want int) {
				t.Helper()
				fast := w.load(w.runtime(w.options()), CacheOnly)
				full := w.load(w.runtime(w.options()), Full)
				if got := len(fast.Components()); got != want {
					t.Fatalf("cache-only: %d components, want %d", got, want)
				}
				if !reflect.DeepEqual(fast.Components(), full.Components()) {
					t.Fatalf("cache-only %q\nfull %q", names(fast), names(full))
				}
				// The two checks word a refusal apart (the changed stats,
				// the digest that does not match): rows are compared by
				// their error types.
				if a, b := plainRows(fast.Plugins()), plainRows(full.Plugins()); !reflect.DeepEqual(a, b) {
					t.Fatalf("cache-only %+v\nfull %+v", a, b)
				}
				if !reflect.DeepEqual(fast.Skipped(), full.Skipped()) {
					t.Fatalf("skipped: cache-only %+v\nfull %+v", fast.Skipped(), full.Skipped())
				}
			}
			agree(12 * 11)
			tamper(t, victim.InstallPath, how)
			agree(11 * 11)
			for _, mode := range []Mode{CacheOnly, Full} {
				s := w.load(w.runtime(w.options()), mode)
				st, _ := s.Plugin(victim.ID)
				if st.Status != load.StatusFailed || len(st.ErrorDetails) != 1 || st.ErrorDetails[0].Type != plugin.TypeTrustRejected {
					t.Fatalf("%s load after %s: %+v", mode, how, st)
				}
			}
		})
	}
}

// plainRows are status rows with each error reduced to its type and layer.
func plainRows(ps []PluginStatus) []PluginStatus {
	out := make([]PluginStatus, len(ps))
	for i, p := range ps {
		p.Errors = nil
		p.ErrorDetails = slices.Clone(p.ErrorDetails)
		for j := range p.ErrorDetails {
			p.ErrorDetails[j] = ErrorDetail{Type: p.ErrorDetails[j].Type, Layer: p.ErrorDetails[j].Layer}
		}
		out[i] = p
	}
	return out
}
