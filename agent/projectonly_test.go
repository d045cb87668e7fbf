package agent

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
	"pgregory.net/rapid"
)

// projectOnlyOnePass is projectOnlyPlugins as it was written before it
// read the project's documents first: every document parsed, in order.
func projectOnlyOnePass(snap *settings.Snapshot) map[plugin.ID]bool {
	out := map[plugin.ID]bool{}
	elsewhere := map[plugin.ID]bool{}
	for _, doc := range snap.Docs {
		if doc.Missing || len(doc.Data) == 0 || !bytes.Contains(doc.Data, []byte("nabledPlugins")) && bytes.IndexByte(doc.Data, '\\') < 0 {
			continue
		}
		s, err := settings.Parse(doc.Name, doc.Data)
		if err != nil {
			continue
		}
		for id, on := range s.EnabledPlugins {
			if !on {
				continue
			}
			if doc.Scope == settings.ScopeProject || doc.Scope == settings.ScopeLocal {
				out[id] = true
			} else {
				elsewhere[id] = true
			}
		}
	}
	for id := range elsewhere {
		delete(out, id)
	}
	return out
}

// The plugins only the project's settings enable are those the one-pass
// reading found, over documents of every scope that enable, disable or
// leave out plugins, escape their keys, or do not parse.
func TestProjectOnlyPluginsEqualsOnePass(t *testing.T) {
	scopes := []settings.Scope{settings.ScopeManaged, settings.ScopeUser, settings.ScopeProject, settings.ScopeLocal, settings.ScopeFlag}
	rapid.Check(t, func(t *rapid.T) {
		var snap settings.Snapshot
		for i := range rapid.IntRange(0, 5).Draw(t, "docs") {
			doc := settings.Document{Scope: rapid.SampledFrom(scopes).Draw(t, "scope"), Name: "doc" + string(rune('a'+i))}
			switch rapid.IntRange(0, 4).Draw(t, "kind") {
			case 0:
				doc.Missing = true
			case 1:
				doc.Data = []byte(`{"enabledPlugins": `) // does not parse
			case 2:
				doc.Data = []byte(`{"model": "x"}`)
			default:
				enabled := map[string]bool{}
				for _, id := range rapid.SliceOfN(rapid.SampledFrom([]string{"a@m", "b@m", "c@n"}), 0, 3).Draw(t, "ids") {
					enabled[id] = rapid.Bool().Draw(t, "on")
				}
				doc.Data, _ = json.Marshal(map[string]any{"enabledPlugins": enabled})
				if rapid.Bool().Draw(t, "escaped") {
					doc.Data = bytes.Replace(doc.Data, []byte("enabledPlugins"), []byte(`enabled\u0050lugins`), 1)
				}
			}
			snap.Docs = append(snap.Docs, doc)
		}
		if got, want := projectOnlyPlugins(&snap), projectOnlyOnePass(&snap); !reflect.DeepEqual(got, want) {
			t.Fatalf("projectOnlyPlugins = %v, one pass gives %v", got, want)
		}
	})
}
