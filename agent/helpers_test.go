package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/internal/client/cache"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/testutil/testworld"
	"github.com/wharfhq/wharf/plugin"
)

var bg = context.Background()

// world is a wharf home with a real bbolt registry and cache, a project
// and a managed directory, all in temp dirs (testworld's), under the short
// names the agent's tests use.
type world struct {
	tw      *testworld.World
	tb      testing.TB
	home    string
	project string
	managed string
	st      *store.Bolt
	c       *cache.Cache
}

func newWorld(tb testing.TB) *world {
	tb.Helper()
	tw := testworld.New(tb)
	return &world{tw: tw, tb: tb, home: tw.Home, project: tw.Project, managed: tw.Managed, st: tw.Store, c: tw.Cache}
}

// makeWritable undoes the cache's read-only modes so the temp dir can go.
func makeWritable(root string) { testworld.MakeWritable(root) }

func (w *world) paths() settings.Paths { return w.tw.Paths() }

// writeTree writes files under dir: "name" → content; a name ending in "*"
// is executable.
func writeTree(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	testworld.WriteTree(tb, dir, files)
}

// install materializes files as id at version in the real cache and points
// the registry at it, as `wharf install` does after fetching.
func (w *world) install(id, version string, files map[string]string) cache.Record {
	w.tb.Helper()
	return w.tw.Materialize(id, version, files)
}

func (w *world) uninstall(id string) {
	w.tb.Helper()
	if err := w.c.Delete(bg, plugin.MustParseID(id)); err != nil {
		w.tb.Fatal(err)
	}
}

func (w *world) setEnabled(id string, on bool) {
	w.tb.Helper()
	w.tw.SetEnabled(id, on)
}

// writeManaged writes the managed settings document.
func (w *world) writeManaged(doc map[string]any) {
	w.tb.Helper()
	w.tw.WriteManaged(doc)
}

func (w *world) writeSettings(scope settings.Scope, doc map[string]any) {
	w.tb.Helper()
	w.tw.WriteSettings(scope, doc)
}

// policy compiles the managed directory into a real engine.
func (w *world) policy() *policy.Engine {
	w.tb.Helper()
	return w.tw.Policy()
}

// memoFile is where the world's policy engines keep their decisions
// between processes, as wharf's commands do.
func (w *world) memoFile() string { return layout.New(w.home).PolicyMemo() }

// options is a config over the world as the package's tests build it:
// the world's managed directory is the managed scope, and the registry and
// leaser are the world's cache (Open would read the home's).
func (w *world) options() config {
	return config{Options: Options{Home: w.home, Project: w.project}, Settings: w.paths(), Registry: w.c, Leaser: w.c}
}

func (w *world) runtime(o config) *Runtime {
	w.tb.Helper()
	r, err := newRuntime(o)
	if err != nil {
		w.tb.Fatal(err)
	}
	w.tb.Cleanup(func() { r.Close() })
	return r
}

func (w *world) load(r *Runtime, mode Mode) *Set {
	w.tb.Helper()
	s, err := r.Load(bg, mode)
	if err != nil {
		w.tb.Fatalf("load %s: %v", mode, err)
	}
	return s
}

// recorder is an Activator that keeps a registry of live components and a
// log of every activation and undo, in order.
type recorder struct {
	mu   sync.Mutex
	live map[string][]int // key → stack of activation serials
	log  []string
	n    int
	fail string // a component name whose activation fails
	// during is called inside Activate (before registering), to observe
	// what is live at that moment.
	during func(c Component)
}

func newRecorder() *recorder { return &recorder{live: map[string][]int{}} }

func (r *recorder) Activate(ctx context.Context, c Component) (func() error, error) {
	if r.during != nil {
		r.during(c)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.Name == r.fail {
		return nil, fmt.Errorf("refusing %s", c.Name)
	}
	r.n++
	serial := r.n
	key := string(c.Kind) + " " + c.Name
	r.live[key] = append(r.live[key], serial)
	r.log = append(r.log, "+"+key)
	return func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		st := r.live[key]
		for i, s := range st {
			if s == serial {
				st = append(st[:i], st[i+1:]...)
				break
			}
		}
		if len(st) == 0 {
			delete(r.live, key)
		} else {
			r.live[key] = st
		}
		r.log = append(r.log, "-"+key)
		return nil
	}, nil
}

func (r *recorder) liveKeys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k, st := range r.live {
		for range st {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func (r *recorder) isLive(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.live[key]) > 0
}

func (r *recorder) takeLog() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.log
	r.log = nil
	return l
}

// names lists "kind name source" of every component of s.
func names(s *Set) []string {
	var out []string
	for _, c := range s.Components() {
		out = append(out, string(c.Kind)+" "+c.Name+" "+c.Source)
	}
	return out
}

func has(list []string, want string) bool {
	for _, s := range list {
		if s == want {
			return true
		}
	}
	return false
}

// fullPlugin is a plugin with every component kind, in default and
// manifest forms.
func fullPlugin(name string) map[string]string {
	return map[string]string{
		".claude-plugin/plugin.json": `{"name": "` + name + `", "version": "1.0.0",
			"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/bin/stop"}]}]},
			"lspServers": {"gopls": {"command": "gopls", "args": ["-logfile", "${CLAUDE_PLUGIN_DATA}/gopls.log"], "extensionToLanguage": {".go": "go"}}}}`,
		"commands/deploy.md":     "---\ndescription: Deploy the app\n---\nDeploy from ${CLAUDE_PROJECT_DIR}.\n",
		"commands/help.md":       "---\ndescription: Plugin help\n---\nHelp.\n",
		"agents/reviewer.md":     "---\nname: reviewer\ndescription: Reviews code\n---\nReview.\n",
		"skills/rotate/SKILL.md": "---\nname: rotate\ndescription: Rotate credentials\n---\nRotate.\n",
		"output-styles/terse.md": "---\ndescription: Terse\n---\nBe terse.\n",
		"hooks/hooks.json":       `{"hooks": {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/bin/check --data ${CLAUDE_PLUGIN_DATA} --project ${CLAUDE_PROJECT_DIR}", "timeout": 30}]}]}}`,
		".mcp.json":              `{"mcpServers": {"db": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/db", "args": ["--data", "${CLAUDE_PLUGIN_DATA}"], "env": {"ROOT": "${CLAUDE_PLUGIN_ROOT}"}}, "api": {"type": "http", "url": "https://api.example.com/mcp"}}}`,
		"bin/check*":             "#!/bin/sh\nexit 0\n",
		"bin/stop*":              "#!/bin/sh\nexit 0\n",
		"bin/db*":                "#!/bin/sh\nexit 0\n",
	}
}

// smallPlugin has one command, one skill and one hook.
func smallPlugin(name string, deps ...string) map[string]string {
	d, _ := json.Marshal(deps)
	if deps == nil {
		d = []byte("[]")
	}
	return map[string]string{
		".claude-plugin/plugin.json": `{"name": "` + name + `", "version": "1.0.0", "dependencies": ` + string(d) + `}`,
		"commands/run.md":            "---\ndescription: Run " + name + "\n---\nRun.\n",
		"skills/s/SKILL.md":          "---\nname: s\ndescription: Skill of " + name + "\n---\nS.\n",
		"hooks/hooks.json":           `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo ` + name + `"}]}]}}`,
	}
}
