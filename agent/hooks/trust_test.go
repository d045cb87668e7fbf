package hooks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/internal/worldtest"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// projectHookWorld is a project whose settings add a PreToolUse hook: a
// script in the project folder that records that it ran and blocks.
func projectHookWorld(t *testing.T) (*worldtest.World, string) {
	w := worldtest.New(t)
	marker := filepath.Join(w.Project, "ran.txt")
	worldtest.WriteTree(t, w.Project, map[string]string{
		".wharf/hooks/guard.sh": "#!/bin/sh\necho ran >> \"$CLAUDE_PROJECT_DIR/ran.txt\"\necho 'project guard says no' >&2\nexit 2\n",
	})
	if err := os.Chmod(filepath.Join(w.Project, ".wharf/hooks/guard.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.WriteSettings(settings.ScopeProject, map[string]any{"hooks": map[string]any{
		"PreToolUse": []any{map[string]any{"matcher": "Bash", "hooks": []any{map[string]any{"type": "command", "command": "${CLAUDE_PROJECT_DIR}/.wharf/hooks/guard.sh"}}}},
	}})
	return w, marker
}

func runPre(t *testing.T, s *agent.Set, project string) *Result {
	t.Helper()
	return (&Runner{}).Run(context.Background(), preToolUse(t, "Bash"), FromSet(s, plugin.HookPreToolUse, project))
}

func ranCount(t *testing.T, marker string) int {
	b, err := os.ReadFile(marker)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "ran")
}

func TestProjectHooksRunOnlyInTrustedFolders(t *testing.T) {
	w, marker := projectHookWorld(t)
	ctx := context.Background()

	// Untrusted: the hook is not live, does not run, and status says why.
	s := w.Load(w.Runtime(w.Options()), agent.CacheOnly)
	res := runPre(t, s, w.Project)
	if res.Blocked() || ranCount(t, marker) != 0 {
		t.Fatalf("untrusted project hook ran: %+v", res)
	}
	if pt := s.ProjectTrust(); pt.Trusted || pt.Why != "not trusted" {
		t.Fatalf("project trust = %+v", pt)
	}
	var skipped bool
	for _, sk := range s.Skipped() {
		var pe *plugin.Error
		if sk.Component.Source == agent.SourceProject && errors.As(sk.Err, &pe) && pe.Type == agent.TypeFolderUntrusted && pe.Layer == plugin.LayerTrust {
			skipped = true
		}
	}
	if !skipped {
		t.Fatalf("no trust skip in %v", s.Skipped())
	}

	// Trusted (through a symlinked alias of the folder): it runs and blocks.
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(w.Project, alias); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.TrustFolder(ctx, w.Home, alias); err != nil {
		t.Fatal(err)
	}
	s = w.Load(w.Runtime(w.Options()), agent.CacheOnly)
	res = runPre(t, s, w.Project)
	if !res.Blocked() || res.Reason != "project guard says no" || ranCount(t, marker) != 1 {
		t.Fatalf("trusted project hook: %+v, ran %d", res, ranCount(t, marker))
	}

	// Managed settings forbid project code: the user's trust does not matter.
	w.WriteManaged(map[string]any{agent.KeyDisableProjectCode: true})
	s = w.Load(w.Runtime(w.Options()), agent.CacheOnly)
	res = runPre(t, s, w.Project)
	if res.Blocked() || ranCount(t, marker) != 1 {
		t.Fatalf("forbidden project hook ran: %+v", res)
	}
	var fe *plugin.Error
	if pt := s.ProjectTrust(); pt.Trusted || !errors.As(pt.Err, &fe) || fe.Layer != plugin.LayerPolicy || fe.Type != agent.TypeProjectCodeForbidden {
		t.Fatalf("project trust under disableProjectCode = %+v", pt)
	}
	// A value that is not a boolean fails closed, with a warning.
	w.WriteManaged(map[string]any{agent.KeyDisableProjectCode: "yes"})
	s = w.Load(w.Runtime(w.Options()), agent.CacheOnly)
	if res := runPre(t, s, w.Project); res.Blocked() || s.ProjectTrust().Trusted || !strings.Contains(strings.Join(s.Warnings(), "\n"), "disableProjectCode must be true or false") {
		t.Fatalf("disableProjectCode \"yes\": %+v, %q", s.ProjectTrust(), s.Warnings())
	}

	// Revoked, then pre-trusted by managed settings (a parent folder).
	if found, err := agent.UntrustFolder(ctx, w.Home, w.Project); err != nil || !found {
		t.Fatalf("untrust: %v %v", found, err)
	}
	w.WriteManaged(map[string]any{agent.KeyTrustedProjectFolders: []string{filepath.Dir(w.Project)}})
	s = w.Load(w.Runtime(w.Options()), agent.CacheOnly)
	res = runPre(t, s, w.Project)
	if !res.Blocked() || ranCount(t, marker) != 2 || !strings.HasPrefix(s.ProjectTrust().Why, "pre-trusted by managed settings") {
		t.Fatalf("pre-trusted project hook: %+v, ran %d, trust %+v", res, ranCount(t, marker), s.ProjectTrust())
	}
}

func TestEditedHookScriptRefusedUntilReload(t *testing.T) {
	w, marker := projectHookWorld(t)
	if _, err := agent.TrustFolder(context.Background(), w.Home, w.Project); err != nil {
		t.Fatal(err)
	}
	r := w.Runtime(w.Options())
	s := w.Load(r, agent.CacheOnly)
	if res := runPre(t, s, w.Project); !res.Blocked() || ranCount(t, marker) != 1 {
		t.Fatalf("first run: %+v", res)
	}
	// The script is edited while the session runs: the loaded set refuses it.
	script := filepath.Join(w.Project, ".wharf/hooks/guard.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho ran >> \"$CLAUDE_PROJECT_DIR/ran.txt\"\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := runPre(t, s, w.Project)
	if ranCount(t, marker) != 1 || res.Blocked() || len(res.Refused) != 1 || !strings.Contains(res.Refused[0], "changed since the session loaded it") {
		t.Fatalf("edited script: ran %d, %+v", ranCount(t, marker), res)
	}
	var pe *plugin.Error
	if len(s.ComponentsOf(plugin.KindHook)[0].Hook.Scripts) == 0 {
		t.Fatal("no script pinned")
	}
	for _, ps := range s.ComponentsOf(plugin.KindHook)[0].Hook.Scripts {
		for _, p := range ps {
			err := p.Check()
			var sc *agent.ScriptChangedError
			if !errors.As(err, &pe) || pe.Layer != plugin.LayerTrust || pe.Type != agent.TypeScriptChanged || !errors.As(err, &sc) || sc.Got == "" {
				t.Fatalf("Check() = %v", err)
			}
		}
	}
	// A removed script is refused too.
	if err := os.Rename(script, script+".bak"); err != nil {
		t.Fatal(err)
	}
	if res := runPre(t, s, w.Project); len(res.Refused) != 1 || !strings.Contains(res.Refused[0], "gone or unreadable") {
		t.Fatalf("removed script: %+v", res)
	}
	if err := os.Rename(script+".bak", script); err != nil {
		t.Fatal(err)
	}
	// After a reload the new script is the trusted one and runs.
	s = w.Load(r, agent.CacheOnly)
	res = runPre(t, s, w.Project)
	if ranCount(t, marker) != 2 || res.Blocked() || len(res.Refused) != 0 {
		t.Fatalf("after reload: ran %d, %+v", ranCount(t, marker), res)
	}
}

func TestTrustStore(t *testing.T) {
	home := t.TempDir()
	ctx := context.Background()
	dirs := make([]string, 16)
	errs := make(chan error, len(dirs))
	for i := range dirs {
		dirs[i] = t.TempDir()
		go func(d string) { _, err := agent.TrustFolder(ctx, home, d); errs <- err }(dirs[i])
	}
	for range dirs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got, err := agent.TrustedFolders(home)
	if err != nil || len(got) != len(dirs) {
		t.Fatalf("after %d concurrent trusts: %d folders, %v", len(dirs), len(got), err)
	}
	if _, err := agent.TrustFolder(ctx, home, filepath.Join(home, "missing")); plugin.LayerOf(err) != plugin.LayerIntent {
		t.Fatalf("trusting a missing folder: %v", err)
	}
	if err := os.WriteFile(layout.New(home).TrustedFolders(), []byte(`{"version":1,"folders":[{"path":"relative"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var pe *plugin.Error
	if _, err := agent.TrustedFolders(home); !errors.As(err, &pe) || pe.Type != agent.TypeTrustStore || !strings.Contains(err.Error(), "not absolute") {
		t.Fatalf("corrupt store: %v", err)
	}
	if _, err := agent.TrustFolder(ctx, home, dirs[0]); !errors.As(err, &pe) || pe.Type != agent.TypeTrustStore {
		t.Fatalf("trusting over a corrupt store: %v", err)
	}
}
