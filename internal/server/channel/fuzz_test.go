package channel

import (
	"encoding/json"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// FuzzRewriteManifest: a plugin.json from an origin is hostile; rewriting
// its dependencies to the channel's names never panics, and what it writes
// is JSON naming exactly the channel's dependencies.
func FuzzRewriteManifest(f *testing.F) {
	for _, s := range []string{
		`{"name": "deploy", "dependencies": ["lint"]}`,
		`{"name": "deploy", "dependencies": ["lint@corp", {"name": "x", "marketplace": "m", "version": "^1"}]}`,
		`{"name": "deploy"}`,
		`{"dependencies": 3}`,
		`[]`,
		`{"dependencies": [null]}`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e := &Entry{Origin: "deploy@corp", Dependencies: []string{"lint-corp"}}
		files := []file{{path: ".claude-plugin/plugin.json", mode: filemode.Regular, data: data}, {path: "z.md", mode: filemode.Regular, data: []byte("z")}}
		out, err := rewriteManifest(files, e)
		if err != nil {
			return
		}
		if len(out) != 2 || out[1].path != "z.md" {
			t.Fatalf("rewrite changed other files: %+v", out)
		}
		if string(out[0].data) == string(data) {
			return
		}
		var m struct {
			Dependencies []string `json:"dependencies"`
		}
		if err := json.Unmarshal(out[0].data, &m); err != nil || len(m.Dependencies) != 1 || m.Dependencies[0] != "lint-corp" {
			t.Fatalf("rewritten plugin.json %q: %v", out[0].data, err)
		}
	})
}
