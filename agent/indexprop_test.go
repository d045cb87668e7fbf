package agent

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
)

// The component index never answers differently from parsing the trees:
// over random sequences of changes to a home (a plugin reinstalled at
// another version or with other content, installed, uninstalled, enabled,
// disabled, revoked, a version dir edited in place, the managed policy
// edited, the project dir changed), every cache-only session start that reads the
// index (and the policy memo file) gives the same components and plugin
// rows as one that reads neither.
func TestComponentIndexCachedEqualsUncached(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 33))
			w := newWorld(t)
			pool := []string{"a", "b", "ops", "lint"}
			projects := []string{w.project, filepath.Join(t.TempDir(), "other-project")}
			project := projects[0]
			version := map[string]int{}
			installed := map[string]string{} // id → install path
			reinstall := func(name string) {
				version[name]++
				var files map[string]string
				switch rng.IntN(3) {
				case 0:
					files = fullPlugin(name)
				case 1:
					files = smallPlugin(name)
				default:
					files = smallPlugin(name, pool[rng.IntN(len(pool))]+"@corp")
				}
				files["commands/v.md"] = fmt.Sprintf("---\ndescription: version %d\n---\nV.\n", version[name])
				r := w.install(name+"@corp", fmt.Sprintf("1.0.%d", version[name]), files)
				installed[name+"@corp"] = r.InstallPath
			}
			for _, n := range pool {
				reinstall(n)
				w.setEnabled(n+"@corp", true)
			}
			index := filepath.Join(w.home, "agent", "components.idx")
			var revs policy.Revocations
			for step := range 24 {
				var what string
				name := pool[rng.IntN(len(pool))]
				id := name + "@corp"
				switch rng.IntN(9) {
				case 0, 1:
					reinstall(name)
					what = "reinstalled " + id
				case 2:
					w.setEnabled(id, rng.IntN(2) == 0)
					what = "enabled set of " + id
				case 3:
					if _, ok := installed[id]; ok {
						w.uninstall(id)
						delete(installed, id)
						what = "uninstalled " + id
					} else {
						reinstall(name)
						what = "installed " + id
					}
				case 4:
					project = projects[rng.IntN(2)]
					what = "project dir " + project
				case 5:
					w.writeManaged(map[string]any{"enabledPlugins": map[string]bool{id: rng.IntN(2) == 0},
						"strictPluginOnlyCustomization": []string{string(settings.SurfaceHooks)}[:rng.IntN(2)]})
					what = "policy edited"
				case 6:
					if dir, ok := installed[id]; ok {
						makeWritable(dir)
						if err := os.WriteFile(filepath.Join(dir, "commands", "v.md"), []byte("---\ndescription: edited\n---\nE.\n"), 0o644); err != nil {
							t.Fatal(err)
						}
						what = "edited in place " + id
					}
				case 7:
					revs = append(revs, policy.Revocation{ID: fmt.Sprintf("r-%d", step), Plugin: id,
						Version: fmt.Sprintf("1.0.%d", version[name]), Reason: "withdrawn"})
					what = "revoked " + id
				default:
					what = "nothing changed"
				}
				o := w.options()
				o.Project = project
				o.Revocations = revs
				o.Leaser = nil
				o.Policy = w.policy()
				cached := w.load(w.runtime(o), CacheOnly)
				if _, err := os.Stat(index); err != nil && step > 0 {
					t.Fatalf("step %d: no component index was saved: %v", step, err)
				}
				o.NoMemo = true
				e, err := policy.Open(policy.Sources{ManagedDir: w.managed})
				if err != nil {
					t.Fatal(err)
				}
				o.Policy = e
				parsed := w.load(w.runtime(o), CacheOnly)
				if !reflect.DeepEqual(cached.Components(), parsed.Components()) {
					t.Fatalf("step %d (%s): components from the index differ from parsed ones:\nindex  %q\nparsed %q", step, what, names(cached), names(parsed))
				}
				if a, b := fmt.Sprintf("%+v", cached.Plugins()), fmt.Sprintf("%+v", parsed.Plugins()); a != b {
					t.Fatalf("step %d (%s): plugin rows differ:\nindex  %s\nparsed %s", step, what, a, b)
				}
			}
		})
	}
}
