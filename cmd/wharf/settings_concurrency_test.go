package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/internal/testutil/testworld"
)

// TestConcurrentSettingsWrites8 and ...32 run wharf processes at once
// against one home, each installing, disabling, enabling and uninstalling
// its own plugin (and all of them enabling a shared dependency), and check
// that the final settings file and `wharf list` hold what every command
// acknowledged (an uninstall deletes the plugin's entry). Before settings writes were locked with the registry
// write, parallel commands rewrote settings.json from stale reads and
// lost each other's keys while every command exited 0.
func TestConcurrentSettingsWrites8(t *testing.T)  { testConcurrentSettingsWrites(t, 8) }
func TestConcurrentSettingsWrites32(t *testing.T) { testConcurrentSettingsWrites(t, 32) }

func testConcurrentSettingsWrites(t *testing.T, n int) {
	if testing.Short() {
		t.Skip("builds the binary and runs many processes")
	}
	w := newWharfRun(t)
	plugins := map[string]map[string]string{"shared": {".claude-plugin/plugin.json": testworld.Manifest("shared", "1.0.0")}}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("q%02d", i)
		plugins[name] = map[string]string{
			".claude-plugin/plugin.json": testworld.Manifest(name, "1.0.0", "shared"),
			"commands/hello.md":          "hello from " + name + "\n",
		}
	}
	root := testworld.Marketplace(t, t.TempDir(), "race", plugins)
	w.ok("marketplace", "add", root)

	// Four mixes of commands, each starting with an install; process i
	// runs mix i%4 on its own plugin. Every step starts in all processes
	// at once (the next waits for all of them), so that n settings writes
	// are in flight together, as when a user starts commands in parallel.
	mixes := [][]string{
		{"install", "disable", "enable", "uninstall", "install", "disable", "enable", "disable"},
		{"install", "uninstall", "install", "disable", "enable", "uninstall", "install", "enable"},
		{"install", "disable", "uninstall", "install", "enable", "disable", "enable", "uninstall"},
		{"install", "enable", "disable", "enable", "uninstall", "install", "disable", "enable"},
	}
	rounds := max(1, 24/n)
	type want struct {
		installed, enabled bool
		// gone: uninstalled, so settings.json holds no entry for it.
		gone bool
	}
	wants := make([]want, n)
	for r := 0; r < rounds; r++ {
		for step := range mixes[0] {
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					id := fmt.Sprintf("q%02d@race", i)
					verb := mixes[i%4][step]
					out, err := w.cmd(verb, id).CombinedOutput()
					if err != nil {
						errs <- fmt.Errorf("wharf %s %s: %v\n%s", verb, id, err, out)
						return
					}
					// The command acknowledged: this is now the state.
					switch verb {
					case "install":
						wants[i] = want{installed: true, enabled: true}
					case "enable":
						wants[i].enabled = true
					case "disable":
						wants[i].enabled = false
					case "uninstall":
						wants[i] = want{gone: true}
					}
				}(i)
			}
			wg.Wait()
			close(errs)
			failed := false
			for err := range errs {
				t.Error(err)
				failed = true
			}
			if failed {
				t.FailNow()
			}
		}
	}

	raw, err := os.ReadFile(filepath.Join(w.home, "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		EnabledPlugins map[string]bool `json:"enabledPlugins"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("settings.json: %v\n%s", err, raw)
	}
	var rows []listRow
	if err := json.Unmarshal([]byte(w.ok("list", "--json")), &rows); err != nil {
		t.Fatal(err)
	}
	listed := map[string]listRow{}
	for _, r := range rows {
		if r.InstallPath == "" {
			continue // enabled in settings but not installed: a row of its own, not an install
		}
		listed[r.ID] = r
	}
	lost := 0
	for i, wt := range wants {
		id := fmt.Sprintf("q%02d@race", i)
		on, ok := doc.EnabledPlugins[id]
		switch {
		case wt.gone && ok:
			lost++
			t.Errorf("%s: settings.json says enabled=%v; the last acknowledged command, an uninstall, deleted the entry", id, on)
		case !wt.gone && (!ok || on != wt.enabled):
			lost++
			t.Errorf("%s: settings.json says enabled=%v (present %v); the last acknowledged command left it %v", id, on, ok, wt.enabled)
		}
		r, ok := listed[id]
		if ok != wt.installed {
			t.Errorf("%s: wharf list shows it installed=%v; the last acknowledged command left it installed=%v", id, ok, wt.installed)
			continue
		}
		if !ok {
			continue
		}
		status := "disabled"
		if wt.enabled {
			status = "active"
		}
		if r.Status != status {
			t.Errorf("%s is %s in wharf list, want %s (errors %v)", id, r.Status, status, r.Errors)
		}
	}
	if !doc.EnabledPlugins["shared@race"] {
		t.Errorf("shared@race, enabled by every install, is not enabled in settings.json")
	}
	if r := listed["shared@race"]; r.Status != "active" {
		t.Errorf("shared@race is %q in wharf list, want active", r.Status)
	}
	if lost > 0 {
		t.Errorf("%d of %d plugins' acknowledged settings were lost", lost, n)
	}
}
