package hooks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/internal/worldtest"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// A session runs what it verified: while another process keeps renaming a
// modified script over a hook's pinned script (and the original back), many
// runs of the hook either refuse it or run the verified script; the
// modified one never runs.
func TestPinnedScriptRaceNeverRunsModified(t *testing.T) {
	const good = "#!/bin/sh\necho good >> \"$CLAUDE_PROJECT_DIR/ran.txt\"\n"
	const bad = "#!/bin/sh\necho bad >> \"$CLAUDE_PROJECT_DIR/ran.txt\"\n"
	for _, tc := range []struct{ name, command string }{
		{"executed directly", "${CLAUDE_PROJECT_DIR}/.wharf/hooks/guard.sh"},
		{"through an interpreter", `sh "$CLAUDE_PROJECT_DIR"/.wharf/hooks/guard.sh --flag`},
		{"named twice", "sh ${CLAUDE_PROJECT_DIR}/.wharf/hooks/guard.sh; ${CLAUDE_PROJECT_DIR}/.wharf/hooks/guard.sh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp) // where the verified copies go
			w := worldtest.New(t)
			script := filepath.Join(w.Project, ".wharf/hooks/guard.sh")
			worldtest.WriteTree(t, w.Project, map[string]string{".wharf/hooks/guard.sh": good})
			if err := os.Chmod(script, 0o755); err != nil {
				t.Fatal(err)
			}
			w.WriteSettings(settings.ScopeProject, map[string]any{"hooks": map[string]any{
				"PreToolUse": []any{map[string]any{"matcher": "Bash", "hooks": []any{map[string]any{"type": "command", "command": tc.command}}}},
			}})
			if _, err := agent.TrustFolder(context.Background(), w.Home, w.Project); err != nil {
				t.Fatal(err)
			}
			s := w.Load(w.Runtime(w.Options()), agent.CacheOnly)
			if len(s.ComponentsOf(plugin.KindHook)) != 1 {
				t.Fatal("the hook did not load")
			}

			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				tmp := filepath.Join(filepath.Dir(script), ".swap")
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					body := bad
					if i%2 == 1 {
						body = good
					}
					if err := os.WriteFile(tmp, []byte(body), 0o755); err != nil {
						t.Error(err)
						return
					}
					if err := os.Rename(tmp, script); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			const runs = 300
			for i := 0; i < runs; i++ {
				runPre(t, s, w.Project)
			}
			close(stop)
			wg.Wait()
			data, err := os.ReadFile(filepath.Join(w.Project, "ran.txt"))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if n := strings.Count(string(data), "bad"); n != 0 {
				t.Fatalf("the modified script ran %d times in %d runs (the verified one %d times)", n, runs, strings.Count(string(data), "good"))
			}
			if left, _ := filepath.Glob(filepath.Join(tmp, "wharf-hook-*")); len(left) != 0 {
				t.Fatalf("verified copies left behind: %q", left)
			}
			t.Logf("%d runs: the verified script ran %d times, the others were refused", runs, strings.Count(string(data), "good"))
		})
	}
}
