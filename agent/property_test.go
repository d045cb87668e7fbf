package agent

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// TestReloadConfluence: any sequence of enable, disable, install (of one of
// two versions), uninstall and reload steps, applied to one session with
// reloads in between, ends with the same component set, the same plugin
// statuses and the same live activations as a fresh session started on the
// final settings and registry.
func TestReloadConfluence(t *testing.T) {
	w := newWorld(t)
	ids := []string{"a@corp", "b@corp", "c@corp", "d@other"}
	// Two versions of every plugin, materialized as real version dirs;
	// install and uninstall move the registry between them.
	versions := map[string][2]cache.Record{}
	for _, id := range ids {
		pid := plugin.MustParseID(id)
		var recs [2]cache.Record
		for i, ver := range []string{"1.0.0", "2.0.0"} {
			files := smallPlugin(pid.Name)
			switch pid.Name {
			case "b":
				files = smallPlugin("b", "a") // b needs a
			case "c":
				files["commands/help.md"] = "---\ndescription: c's help\n---\n" // collides with the builtin
			}
			files[".claude-plugin/plugin.json"] = fmt.Sprintf(`{"name": %q, "version": %q, "dependencies": %s}`, pid.Name, ver,
				map[bool]string{true: `["a"]`, false: `[]`}[pid.Name == "b"])
			if i == 1 {
				files["commands/extra.md"] = "---\ndescription: new in 2.0.0\n---\n"
				files["hooks/hooks.json"] = `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo v2"}]}]}}`
			}
			v, err := w.c.Materialize(bg, pid, ver, func(_ context.Context, dir string) error {
				writeTree(t, dir, files)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			recs[i] = cache.RecordFor(v, "user")
		}
		versions[id] = recs
	}
	builtins := []Builtin{{Kind: plugin.KindCommand, Name: "help"}}
	writeTree(t, w.home, map[string]string{"commands/mine.md": "mine"})

	rapid.Check(t, func(rt *rapid.T) {
		// Start from nothing installed and empty settings.
		for _, id := range ids {
			w.uninstall(id)
		}
		w.writeSettings(settings.ScopeUser, map[string]any{})

		act := newRecorder()
		o := w.options()
		o.Builtins, o.Activator = builtins, act
		r, err := newRuntime(o)
		if err != nil {
			rt.Fatal(err)
		}
		defer r.Close()
		steps := rapid.IntRange(1, 25).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			id := rapid.SampledFrom(ids).Draw(rt, "plugin")
			switch op := rapid.SampledFrom([]string{"enable", "disable", "install", "uninstall", "reload"}).Draw(rt, "op"); op {
			case "enable":
				w.setEnabled(id, true)
			case "disable":
				w.setEnabled(id, false)
			case "install":
				rec := versions[id][rapid.IntRange(0, 1).Draw(rt, "version")]
				if err := w.c.Put(bg, rec); err != nil {
					rt.Fatal(err)
				}
			case "uninstall":
				w.uninstall(id)
			case "reload":
				mode := rapid.SampledFrom([]Mode{CacheOnly, Full}).Draw(rt, "mode")
				if _, err := r.Load(bg, mode); err != nil {
					rt.Fatal(err)
				}
			}
		}
		inc, err := r.Load(bg, CacheOnly)
		if err != nil {
			rt.Fatal(err)
		}

		freshAct := newRecorder()
		o.Activator = freshAct
		fr, err := newRuntime(o)
		if err != nil {
			rt.Fatal(err)
		}
		defer fr.Close()
		fresh, err := fr.Load(bg, CacheOnly)
		if err != nil {
			rt.Fatal(err)
		}
		if !reflect.DeepEqual(inc.Components(), fresh.Components()) {
			rt.Fatalf("components differ:\nincremental %q\nfresh       %q", names(inc), names(fresh))
		}
		if !reflect.DeepEqual(inc.Plugins(), fresh.Plugins()) {
			rt.Fatalf("statuses differ:\nincremental %+v\nfresh       %+v", inc.Plugins(), fresh.Plugins())
		}
		if got, want := act.liveKeys(), freshAct.liveKeys(); !reflect.DeepEqual(got, want) {
			rt.Fatalf("live activations differ:\nincremental %q\nfresh       %q", got, want)
		}
		var want []string
		for _, c := range fresh.Components() {
			want = append(want, string(c.Kind)+" "+c.Name)
		}
		if got := freshAct.liveKeys(); len(got) != len(want) {
			rt.Fatalf("live %q, set %q", got, want)
		}
		if _, ok := fresh.Lookup(plugin.KindCommand, "c:help"); ok {
			rt.Fatal("c:help loaded next to builtin help")
		}
	})
}
