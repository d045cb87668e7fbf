package resolver

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// One Resolver shared by many goroutines (the API server resolves for many
// requests at once); run with -race. The installed graph is built lazily by
// whichever call comes first, while Closure reads the installed set.
func TestResolverConcurrentUse(t *testing.T) {
	cat, all := genDAG(2000)
	var installed []Installed
	for i, id := range all {
		if i%3 == 0 {
			installed = append(installed, Installed{ID: id, Auto: i%2 == 0})
		}
	}
	enabled := map[plugin.ID]bool{}
	for i, id := range all {
		enabled[id] = i%50 != 7
	}
	r := New(cat, installed, nil)
	wantPlan, err := New(cat, installed, nil).Closure(all[0])
	if err != nil {
		t.Fatal(err)
	}
	wantActive := len(New(cat, installed, nil).Demote(enabled).Active())

	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			switch g % 4 {
			case 0:
				plan, err := r.Closure(all[0])
				if err != nil || len(plan.Steps) != len(wantPlan.Steps) {
					t.Errorf("concurrent Closure: %d steps, %v", len(plan.Steps), err)
				}
			case 1:
				if n := len(r.Demote(enabled).Active()); n != wantActive {
					t.Errorf("concurrent Demote: %d active, want %d", n, wantActive)
				}
			case 2:
				r.ReverseDependents(all[len(all)-1])
			case 3:
				r.Prunable()
			}
		}(g)
	}
	wg.Wait()
}

func TestPlanJSON(t *testing.T) {
	cat := newCatalog().market("m").add(t, "a@m", "b", "c").add(t, "b@m").add(t, "c@m")
	plan, err := New(cat, manual("c@m"), nil).Closure(plugin.MustParseID("a@m"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"steps":[{"id":"b@m","role":"dependency","requiredBy":"a@m"},{"id":"c@m","role":"installed","requiredBy":"a@m"},{"id":"a@m","role":"root"}]}`
	if string(b) != want {
		t.Errorf("JSON:\n got %s\nwant %s", b, want)
	}
}
