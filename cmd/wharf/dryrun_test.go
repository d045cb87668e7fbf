package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/testworld"
)

// snapshotTree is every file under root (state.db, the plugin cache, the
// settings files) with its mode and a digest of its bytes; but the memo of
// policy decisions (*.memo), a speed layer every reading command may
// refresh, which holds no state.
func snapshotTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasSuffix(rel, ".memo") {
			return nil
		}
		if d.IsDir() {
			out[rel] = "dir " + info.Mode().String()
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[rel] = info.Mode().String() + " " + hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed %s: %q -> %q", what, k, v, after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s created %s", what, k)
		}
	}
}

// --dry-run on install, update, uninstall and prune prints the plan (and
// --json emits it) and leaves state.db, the cache and the settings files
// byte for byte as they were.
func TestDryRunChangesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	w := newWharfRun(t)
	w.env = append(w.env, "HOME="+filepath.Join(w.home, "userhome"), "WHARF_INVENTORY_INTERVAL=off")
	mkt := t.TempDir()
	plugins := map[string]map[string]string{
		"a":   {".claude-plugin/plugin.json": testworld.Manifest("a", "1.0.0", "lib"), "commands/go.md": "go a\n"},
		"lib": {".claude-plugin/plugin.json": testworld.Manifest("lib", "1.0.0"), "commands/lib.md": "lib\n"},
		"c":   {".claude-plugin/plugin.json": testworld.Manifest("c", "1.0.0"), "commands/c.md": "c\n"},
	}
	root := testworld.Marketplace(t, mkt, "m", plugins)
	w.ok("marketplace", "add", root)
	w.ok("install", "a@m")
	// A newer a on disk for update to find.
	plugins["a"][".claude-plugin/plugin.json"] = testworld.Manifest("a", "1.1.0", "lib")
	testworld.Marketplace(t, mkt, "m", plugins)
	w.ok("marketplace", "update", "m")

	for _, tt := range []struct {
		args []string
		want []string // in the human output
	}{
		{[]string{"install", "c@m", "--dry-run"}, []string{"would install c@m", "nothing was changed"}},
		{[]string{"i", "c@m", "--dry-run", "--scope", "project"}, []string{"would install c@m", "project scope"}},
		{[]string{"uninstall", "a@m", "--dry-run", "--prune"}, []string{"would remove a@m", "would remove lib@m", "nothing was changed"}},
		{[]string{"rm", "a@m", "--dry-run"}, []string{"would remove a@m"}},
		{[]string{"prune", "--dry-run"}, []string{"nothing to prune", "nothing was changed"}},
		{[]string{"update", "--all", "--dry-run"}, []string{"would update a@m 1.0.0 -> 1.1.0", "nothing was fetched or changed"}},
	} {
		before := snapshotTree(t, w.home)
		out := w.ok(tt.args...)
		for _, s := range tt.want {
			if !strings.Contains(out, s) {
				t.Errorf("wharf %v: output lacks %q:\n%s", tt.args, s, out)
			}
		}
		sameTree(t, strings.Join(tt.args, " "), before, snapshotTree(t, w.home))
		jout := w.ok(append([]string{"--json"}, tt.args...)...)
		var doc struct {
			DryRun bool `json:"dryRun"`
		}
		if err := json.Unmarshal([]byte(jout), &doc); err != nil || !doc.DryRun {
			t.Errorf("wharf --json %v: %v\n%s", tt.args, err, jout)
		}
		sameTree(t, "--json "+strings.Join(tt.args, " "), before, snapshotTree(t, w.home))
	}
	// The same commands without --dry-run do change the home.
	before := snapshotTree(t, w.home)
	w.ok("uninstall", "a@m", "--prune")
	if after := snapshotTree(t, w.home); len(after) == len(before) && after["state.db"] == before["state.db"] {
		t.Errorf("uninstall without --dry-run changed nothing")
	}
}
