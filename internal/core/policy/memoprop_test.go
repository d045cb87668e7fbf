package policy

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wharfhq/wharf/internal/core/capability"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// A field added to Request cannot be left out of its memo key: every field
// the request carries, walked by reflection (so a new one is walked too),
// changes the key when it alone changes. A field of a type this test does
// not know how to change fails it, so whoever adds one decides how memoKey
// reads it.
func TestMemoKeyChangesWithEveryRequestField(t *testing.T) {
	base := Request{Action: ActionLoadComponent, Plugin: plugin.MustParseID("a@m"), RequiredBy: plugin.MustParseID("b@n"),
		Marketplace:   Marketplace{Name: "m", Source: &plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "o/r"}},
		DeclaredCross: []string{"n"}, Signatures: []string{"k1"}, Surface: settings.SurfaceHooks, From: FromManaged,
		Path: "/p", ManagedDir: "/etc/x"}
	baseKey := string(memoKey(nil, base, nil))
	srcType := reflect.TypeOf((*plugin.MarketplaceSource)(nil))
	contentType := reflect.TypeOf((*Content)(nil))
	var walk func(name string, get func(r *Request) reflect.Value, typ reflect.Type)
	walk = func(name string, get func(r *Request) reflect.Value, typ reflect.Type) {
		change := func(set func(v reflect.Value)) {
			r := base
			src := *base.Marketplace.Source
			r.Marketplace.Source = &src
			r.DeclaredCross, r.Signatures = append([]string(nil), base.DeclaredCross...), append([]string(nil), base.Signatures...)
			set(get(&r))
			if string(memoKey(nil, r, nil)) == baseKey {
				t.Errorf("changing %s alone leaves the memo key as it was: two requests would share a decision", name)
			}
		}
		switch {
		case typ == srcType:
			// A marketplace source is known to policy by its Key.
			change(func(v reflect.Value) {
				v.Set(reflect.ValueOf(&plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "o/other"}))
			})
		case typ == contentType:
			// A tree's content is keyed by all of it (its JSON): with it
			// and without it, and with another finding.
			change(func(v reflect.Value) { v.Set(reflect.ValueOf(&Content{})) })
			change(func(v reflect.Value) {
				v.Set(reflect.ValueOf(&Content{Findings: []capability.Finding{{Kind: "k", File: "f", Line: 1}}}))
			})
		case typ.Kind() == reflect.String:
			change(func(v reflect.Value) { v.SetString(v.String() + "x") })
		case typ.Kind() == reflect.Slice && typ.Elem().Kind() == reflect.String:
			change(func(v reflect.Value) { v.Set(reflect.Append(v, reflect.ValueOf("x").Convert(typ.Elem()))) })
		case typ.Kind() == reflect.Struct:
			for i := range typ.NumField() {
				f := typ.Field(i)
				walk(name+"."+f.Name, func(r *Request) reflect.Value { return get(r).Field(i) }, f.Type)
			}
		default:
			t.Errorf("Request field %s has type %s, which this test cannot change: make memoKey read it, then teach this test", name, typ)
		}
	}
	walk("Request", func(r *Request) reflect.Value { return reflect.ValueOf(r).Elem() }, reflect.TypeOf(base))
}

// memoWorld is a managed dir, a local marketplace reached through a link,
// and the requests asked about them, all drawn from one seeded generator.
type memoWorld struct {
	rng     *rand.Rand
	managed string
	link    string // a directory marketplace source, a link to ok/ or blocked/
	dirs    [2]string
}

var propPlugins = []string{"a@corp", "b@corp", "deploy@corp", "x@evil", "y@acme", "z@local"}

func (w *memoWorld) pick(l []string) string { return l[w.rng.IntN(len(l))] }

// editPolicy writes a random managed-settings.json: the keys policy reads,
// each present or not.
func (w *memoWorld) editPolicy(t *testing.T) {
	doc := map[string]any{}
	if w.rng.IntN(2) == 0 {
		ep := map[string]bool{}
		for range w.rng.IntN(3) {
			ep[w.pick(propPlugins)] = w.rng.IntN(2) == 0
		}
		doc["enabledPlugins"] = ep
	}
	if w.rng.IntN(2) == 0 {
		doc["blockedMarketplaces"] = []any{w.pick([]string{"evil/*", "acme/*", "corp/*"}),
			map[string]string{"source": "directory", "path": w.dirs[1]}}
	}
	if w.rng.IntN(3) == 0 {
		doc["strictKnownMarketplaces"] = []any{"corp/*", map[string]string{"source": "github", "repo": "acme/tools"}}
	}
	if w.rng.IntN(3) == 0 {
		doc["strictPluginOnlyCustomization"] = w.rng.IntN(2) == 0
	}
	if w.rng.IntN(3) == 0 {
		doc["allowManagedHooksOnly"] = true
	}
	if w.rng.IntN(3) == 0 {
		doc["disableSideloadFlags"] = true
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.managed, "managed-settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// repoint points the local marketplace's link at the other directory.
func (w *memoWorld) repoint(t *testing.T) {
	target := w.dirs[w.rng.IntN(2)]
	if err := os.Remove(w.link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, w.link); err != nil {
		t.Fatal(err)
	}
}

func (w *memoWorld) source() *plugin.MarketplaceSource {
	switch w.rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return &plugin.MarketplaceSource{Kind: plugin.MktDirectory, Path: w.link}
	default:
		return &plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: w.pick([]string{"evil/x", "acme/tools", "corp/m", "other/y"})}
	}
}

func (w *memoWorld) request() Request {
	id := plugin.MustParseID(w.pick(propPlugins))
	r := Request{Plugin: id, Marketplace: Marketplace{Name: id.Source, Source: w.source()}}
	switch w.rng.IntN(7) {
	case 0:
		r.Action = ActionInstall
		if w.rng.IntN(2) == 0 {
			r.Signatures = []string{w.pick([]string{"k1", "k2"})}
		}
	case 1:
		r.Action = ActionLoad
	case 2:
		r.Action = ActionEnable
	case 3:
		r.Action = ActionLoadComponent
		r.Surface = settings.Surface(w.pick([]string{"commands", "skills", "agents", "hooks"}))
		r.From = w.pick([]string{FromPlugin, FromManaged, FromUser, FromProject})
	case 4:
		r.Action = ActionRunHook
		r.From = w.pick([]string{FromPlugin, FromManaged, FromUser, FromProject})
	case 5:
		r = Request{Action: ActionSideload, Path: w.pick([]string{"/tmp/dev", "/home/u/p"})}
	case 6:
		r.Action = ActionCrossDependency
		r.RequiredBy = plugin.MustParseID(w.pick(propPlugins))
		r.DeclaredCross = []string{w.pick([]string{"corp", "evil", "acme"})}
	}
	if r.From != FromManaged || w.rng.IntN(2) == 0 {
		return r
	}
	r.ManagedDir = w.pick([]string{"", "/etc/wharf-extra"})
	return r
}

func decisionText(d Decision, err error) string {
	b, _ := json.Marshal(d)
	if err != nil {
		return string(b) + " error: " + err.Error()
	}
	return string(b)
}

// The decision memo never answers differently from an evaluation: over
// random policies and requests, an engine that memoizes (in memory and in
// its memo file, read again by each new engine as each new process does)
// decides exactly as a fresh engine that memoizes nothing, including right
// after the managed settings were edited (a new policy version), after a
// local marketplace's link was repointed, and in a process started after
// those changes.
func TestMemoCachedEqualsUncached(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			tmp := t.TempDir()
			w := &memoWorld{rng: rand.New(rand.NewPCG(seed, 33)), managed: filepath.Join(tmp, "managed"),
				link: filepath.Join(tmp, "mkt"), dirs: [2]string{filepath.Join(tmp, "ok"), filepath.Join(tmp, "blocked")}}
			for _, d := range append(w.dirs[:], w.managed) {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(w.dirs[0], w.link); err != nil {
				t.Skip("symlinks unavailable:", err)
			}
			w.editPolicy(t)
			memoFile := filepath.Join(tmp, "policy-decisions.memo")
			src := Sources{ManagedDir: w.managed}
			open := func(opts ...Option) *Engine {
				e, err := Open(src, opts...)
				if err != nil {
					t.Fatal(err)
				}
				return e
			}
			memo := open(WithMemoFile(memoFile))
			var asked []Request
			seen := map[string]bool{}
			hits := int64(0)
			for step := range 40 {
				var what string
				switch w.rng.IntN(5) {
				case 0:
					w.editPolicy(t)
					if _, err := memo.Reload(ctx); err != nil {
						t.Fatal(err)
					}
					what = "policy edited"
				case 1:
					w.repoint(t)
					what = "link repointed"
				case 2:
					if err := memo.SaveMemo(); err != nil {
						t.Fatal(err)
					}
					hits += memo.MemoHits()
					memo = open(WithMemoFile(memoFile))
					what = "new process"
				default:
					what = "same policy"
				}
				for range 3 {
					// Each request once: the fresh engine, which memoizes
					// in memory too, then evaluates every one.
					r := w.request()
					if k := fmt.Sprintf("%+v %+v", r, r.Marketplace.Source); !seen[k] {
						seen[k] = true
						asked = append(asked, r)
					}
				}
				fresh := open()
				for _, r := range asked {
					want := decisionText(fresh.Decide(ctx, r))
					if got := decisionText(memo.Decide(ctx, r)); got != want {
						t.Fatalf("step %d (%s): %s %s %+v\nmemoized: %s\nevaluated: %s", step, what, r.Action, r.Plugin, r, got, want)
					}
				}
			}
			if hits+memo.MemoHits() == 0 {
				t.Fatal("the memo never answered: the property was not exercised")
			}
		})
	}
}
