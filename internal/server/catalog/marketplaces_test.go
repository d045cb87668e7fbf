package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/wharfhq/wharf/internal/core/marketplace"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

func writeFile(t testing.TB, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

type testPlugin struct {
	Name, Description, Category, Version string
	Commands                             []string
}

// writeMarketplace writes a directory marketplace named name with plugins
// stored beside it.
func writeMarketplace(t testing.TB, root, name string, ps []testPlugin) {
	t.Helper()
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Name        string `json:"name"`
		Source      string `json:"source"`
		Description string `json:"description,omitempty"`
		Category    string `json:"category,omitempty"`
		Version     string `json:"version,omitempty"`
	}
	es := []entry{}
	for _, p := range ps {
		es = append(es, entry{Name: p.Name, Source: "./" + p.Name, Description: p.Description, Category: p.Category, Version: p.Version})
		writeFile(t, filepath.Join(root, p.Name, ".claude-plugin", "plugin.json"), fmt.Sprintf(`{"name":%q,"version":%q}`, p.Name, p.Version))
		for _, c := range p.Commands {
			writeFile(t, filepath.Join(root, p.Name, "commands", c+".md"), "run "+c+"\n")
		}
	}
	raw, err := json.Marshal(map[string]any{"name": name, "owner": map[string]string{"name": "o"}, "plugins": es})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, ".claude-plugin", "marketplace.json"), string(raw))
}

func openManager(t testing.TB) *marketplace.Manager {
	t.Helper()
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "s.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return marketplace.NewManager(st, marketplace.Options{Dir: t.TempDir()})
}

func dirSource(root string) json.RawMessage {
	raw, _ := json.Marshal(map[string]string{"source": "directory", "path": root})
	return raw
}

var (
	words      = []string{"deploy", "lint", "review", "ops", "docs", "test"}
	categories = []string{"", "devops", "quality"}
)

func genPlugins(t *rapid.T) []testPlugin {
	n := rapid.IntRange(0, 4).Draw(t, "plugins")
	seen := map[string]bool{}
	var ps []testPlugin
	for i := 0; i < n; i++ {
		name := rapid.SampledFrom(words).Draw(t, "name") + fmt.Sprint(rapid.IntRange(0, 2).Draw(t, "suffix"))
		if seen[name] {
			continue
		}
		seen[name] = true
		ps = append(ps, testPlugin{
			Name:        name,
			Description: rapid.SampledFrom(words).Draw(t, "desc") + " tools",
			Category:    rapid.SampledFrom(categories).Draw(t, "category"),
			Version:     fmt.Sprintf("1.%d.0", rapid.IntRange(0, 3).Draw(t, "minor")),
			Commands:    rapid.SliceOfNDistinct(rapid.SampledFrom(words), 0, 2, rapid.ID[string]).Draw(t, "commands"),
		})
	}
	return ps
}

// TestCachedEqualsUncached: after any sequence of adds, updates (with the
// marketplace's files changed) and removes made through the catalog, every
// search and plugin lookup answered through its caches equals the answer
// of a fresh parse of every marketplace, computed without any cache.
func TestCachedEqualsUncached(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		mgr := openManager(t)
		base := t.TempDir()
		mc := New(mgr)
		mc.TTL = time.Hour // only changes made through it may renew the snapshot
		ctx := context.Background()
		names := []string{"corp", "tools", "extra"}
		known := map[string]bool{}
		check := func() {
			fresh, err := load(mgr)
			if err != nil {
				rt.Fatal(err)
			}
			for i := 0; i < 4; i++ {
				q := SearchQuery{
					Text:        rapid.SampledFrom(append([]string{""}, words...)).Draw(rt, "text"),
					Marketplace: rapid.SampledFrom(append([]string{""}, names...)).Draw(rt, "marketplace"),
					Category:    rapid.SampledFrom(categories).Draw(rt, "qcategory"),
					Limit:       rapid.IntRange(0, 3).Draw(rt, "limit"),
				}
				// Twice: the second answer comes from the cache.
				for range 2 {
					got, err := mc.Search(ctx, q)
					if err != nil {
						rt.Fatal(err)
					}
					if want := search(fresh.cat, q); !reflect.DeepEqual(got, want) {
						rt.Fatalf("search %+v: cached %+v, fresh %+v", q, got, want)
					}
				}
			}
			for _, mk := range names {
				for _, w := range words {
					id := plugin.ID{Name: w + fmt.Sprint(rapid.IntRange(0, 2).Draw(rt, "idsuffix")), Source: mk}
					want, werr := detail(fresh.cat, id)
					for range 2 {
						got, err := mc.Plugin(ctx, id)
						if (err == nil) != (werr == nil) {
							rt.Fatalf("plugin %s: cached error %v, fresh error %v", id, err, werr)
						}
						if err == nil && !reflect.DeepEqual(got, want) {
							rt.Fatalf("plugin %s: cached %+v, fresh %+v", id, got, want)
						}
					}
				}
			}
			got, err := mc.Marketplaces(ctx)
			if err != nil {
				rt.Fatal(err)
			}
			if !reflect.DeepEqual(got, fresh.mkts) {
				rt.Fatalf("marketplaces: cached %+v, fresh %+v", got, fresh.mkts)
			}
		}
		steps := rapid.IntRange(1, 8).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			name := rapid.SampledFrom(names).Draw(rt, "target")
			root := filepath.Join(base, name)
			switch op := rapid.SampledFrom([]string{"add", "update", "remove"}).Draw(rt, "op"); {
			case op == "add" && !known[name]:
				writeMarketplace(t, root, name, genPlugins(rt))
				if _, err := mc.AddMarketplace(ctx, name, dirSource(root)); err != nil {
					rt.Fatalf("add %s: %v", name, err)
				}
				known[name] = true
			case op == "update" && known[name]:
				writeMarketplace(t, root, name, genPlugins(rt))
				if _, err := mc.UpdateMarketplace(ctx, name); err != nil {
					rt.Fatalf("update %s: %v", name, err)
				}
			case op == "remove" && known[name]:
				if err := mc.RemoveMarketplace(ctx, name); err != nil {
					rt.Fatalf("remove %s: %v", name, err)
				}
				delete(known, name)
			}
			check()
		}
	})
}

// TestInvalidateDropsAnswers: a change made behind the catalog's back (by
// another replica over the same store) shows once the server invalidates
// it, searches included.
func TestInvalidateDropsAnswers(t *testing.T) {
	ctx := context.Background()
	mgr := openManager(t)
	root := filepath.Join(t.TempDir(), "corp")
	writeMarketplace(t, root, "corp", []testPlugin{{Name: "deploy", Description: "ship it", Version: "1.0.0"}})
	mc := New(mgr)
	mc.TTL = time.Hour
	if _, err := mc.AddMarketplace(ctx, "corp", dirSource(root)); err != nil {
		t.Fatal(err)
	}
	if hits, err := mc.Search(ctx, SearchQuery{Text: "lint"}); err != nil || len(hits) != 0 {
		t.Fatalf("search lint = %v, %v; want none", hits, err)
	}
	writeMarketplace(t, root, "corp", []testPlugin{{Name: "deploy", Version: "1.0.0"}, {Name: "lint", Version: "2.0.0"}})
	if _, err := New(mgr).UpdateMarketplace(ctx, "corp"); err != nil { // another replica
		t.Fatal(err)
	}
	if hits, _ := mc.Search(ctx, SearchQuery{Text: "lint"}); len(hits) != 0 {
		t.Fatalf("before Invalidate the snapshot (and its answers) stay: %v", hits)
	}
	mc.Invalidate()
	hits, err := mc.Search(ctx, SearchQuery{Text: "lint"})
	if err != nil || len(hits) != 1 || hits[0].ID != "lint@corp" || hits[0].Version != "2.0.0" {
		t.Fatalf("after Invalidate search lint = %+v, %v; want lint@corp 2.0.0", hits, err)
	}
}

// TestAddErrors: a source that does not parse is a FieldError on
// "source"; a name already known is a conflict naming the next step.
func TestAddErrors(t *testing.T) {
	ctx := context.Background()
	mc := New(openManager(t))
	_, err := mc.AddMarketplace(ctx, "corp", json.RawMessage(`{"source":`))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "source" {
		t.Fatalf("add with a broken source = %v; want a FieldError on source", err)
	}
	root := filepath.Join(t.TempDir(), "corp")
	writeMarketplace(t, root, "corp", nil)
	if _, err := mc.AddMarketplace(ctx, "corp", dirSource(root)); err != nil {
		t.Fatal(err)
	}
	_, err = mc.AddMarketplace(ctx, "corp", dirSource(root))
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Type != plugin.TypeConflict || !strings.Contains(plugin.HintOf(err), "/v1/marketplaces/corp/update") {
		t.Fatalf("second add = %v; want a conflict with the update route as hint", err)
	}
	if _, err := mc.Plugin(ctx, plugin.ID{Name: "none", Source: "corp"}); err == nil {
		t.Fatal("lookup of a plugin the marketplace lacks succeeded")
	}
}
