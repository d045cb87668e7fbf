package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/internal/worldtest"
	"github.com/wharfhq/wharf/internal/client/userconfig"
	"github.com/wharfhq/wharf/internal/testutil/processtest"
	"github.com/wharfhq/wharf/plugin"
)

// serverBin is the test MCP server, built once for the package.
var serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wharf-mcp-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "testserver")
	out, err := exec.Command("go", "build", "-o", serverBin, "./internal/testserver").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the test MCP server: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// mcpPlugin is a plugin whose .mcp.json runs the test server as "server"
// with extra environment.
func mcpPlugin(name, server string, env map[string]string) map[string]string {
	var e []string
	for k, v := range env {
		e = append(e, strconv.Quote(k)+": "+strconv.Quote(v))
	}
	return map[string]string{
		".claude-plugin/plugin.json": `{"name": "` + name + `", "version": "1.0.0"}`,
		".mcp.json":                  `{"mcpServers": {"` + server + `": {"command": "` + serverBin + `", "args": ["--root", "${CLAUDE_PLUGIN_ROOT}"], "env": {` + strings.Join(e, ", ") + `}}}}`,
	}
}

func newSupervisor(t *testing.T, w *worldtest.World, with ...func(*Options)) (*Supervisor, *agent.Runtime) {
	t.Helper()
	so := Options{ProjectDir: w.Project, StartTimeout: 20 * time.Second, StopGrace: time.Second}
	for _, f := range with {
		f(&so)
	}
	sup := New(so)
	o := w.Options()
	o.Activator = sup.Activator(nil)
	rt := w.Runtime(o)
	t.Cleanup(func() { sup.Close() })
	return sup, rt
}

func toolNames(ts []Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func status(sup *Supervisor, server string) (Status, bool) {
	for _, s := range sup.Status() {
		if s.Server == server {
			return s, true
		}
	}
	return Status{}, false
}

func text(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content: %+v", res.Content)
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("content: %T", res.Content[0])
	}
	return tc.Text
}

func TestToolsUnderNamespacedNames(t *testing.T) {
	w := worldtest.New(t)
	rec := w.Install("db@corp", "1.0.0", mcpPlugin("db", "pg", map[string]string{"TESTSERVER_NAME": "pg", "DB_HOME": "${CLAUDE_PLUGIN_DATA}/pg"}))
	sup, rt := newSupervisor(t, w)
	w.Load(rt, agent.CacheOnly)

	got := strings.Join(toolNames(sup.Tools()), " ")
	if got != "mcp__plugin_db_pg__echo mcp__plugin_db_pg__env" {
		t.Fatalf("tools = %q", got)
	}
	st, ok := status(sup, "plugin:db:pg")
	if !ok || st.State != StateRunning || st.Plugin != "db@corp" || st.PID == 0 || st.ServerName != "pg" || st.ServerVersion != "1.2.3" || st.Tools != 2 {
		t.Fatalf("status = %+v", st)
	}
	ctx := context.Background()
	res, err := sup.CallTool(ctx, "mcp__plugin_db_pg__echo", map[string]any{"text": "hi"})
	if err != nil || text(t, res) != "hi" {
		t.Fatalf("echo: %v %+v", err, res)
	}
	res, err = sup.CallTool(ctx, "mcp__plugin_db_pg__env", map[string]any{"name": "CLAUDE_PLUGIN_ROOT"})
	if err != nil || text(t, res) != rec.InstallPath {
		t.Fatalf("server's CLAUDE_PLUGIN_ROOT = %v %+v, want %s", err, res, rec.InstallPath)
	}
	res, err = sup.CallTool(ctx, "mcp__plugin_db_pg__env", map[string]any{"name": "DB_HOME"})
	if err != nil || !strings.HasPrefix(text(t, res), w.Home) || !strings.HasSuffix(text(t, res), "/pg") {
		t.Fatalf("DB_HOME not expanded from the plugin data dir: %v %+v", err, res)
	}
	if _, err := sup.CallTool(ctx, "mcp__plugin_db_pg__nope", nil); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("unknown tool: %v", err)
	}
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool { return processtest.Alive(pid) }

// disableDB disables db@corp, reloads, and checks that its server process
// pid is gone and the server left Status.
func disableDB(t *testing.T, w *worldtest.World, rt *agent.Runtime, sup *Supervisor, pid int) {
	t.Helper()
	w.SetEnabled("db@corp", false)
	w.Load(rt, agent.CacheOnly)
	if alive(pid) {
		t.Fatalf("server process %d of the disabled plugin is still running", pid)
	}
	if _, ok := status(sup, "plugin:db:pg"); ok {
		t.Fatal("disabled plugin's server still in Status")
	}
}

func TestDisableStopsServerProcess(t *testing.T) {
	w := worldtest.New(t)
	w.Install("db@corp", "1.0.0", mcpPlugin("db", "pg", nil))
	w.Install("docs@corp", "1.0.0", mcpPlugin("docs", "search", nil))
	sup, rt := newSupervisor(t, w)
	w.Load(rt, agent.CacheOnly)
	db, _ := status(sup, "plugin:db:pg")
	docs, _ := status(sup, "plugin:docs:search")
	if !alive(db.PID) || !alive(docs.PID) {
		t.Fatalf("servers not running: %+v %+v", db, docs)
	}

	disableDB(t, w, rt, sup, db.PID)
	if got := strings.Join(toolNames(sup.Tools()), " "); got != "mcp__plugin_docs_search__echo mcp__plugin_docs_search__env" {
		t.Fatalf("tools after disabling db = %q", got)
	}
	if now, _ := status(sup, "plugin:docs:search"); now.PID != docs.PID || !alive(docs.PID) {
		t.Fatalf("the other plugin's server was restarted or stopped: %+v", now)
	}

	// Closing the runtime undoes the rest.
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(docs.PID) {
		t.Fatalf("server %d still running after Close", docs.PID)
	}
}

func TestUpdateReplacesServer(t *testing.T) {
	w := worldtest.New(t)
	w.Install("db@corp", "1.0.0", mcpPlugin("db", "pg", map[string]string{"TESTSERVER_NAME": "v1"}))
	sup, rt := newSupervisor(t, w)
	w.Load(rt, agent.CacheOnly)
	old, _ := status(sup, "plugin:db:pg")
	w.Install("db@corp", "1.0.1", mcpPlugin("db", "pg", map[string]string{"TESTSERVER_NAME": "v2"}))
	w.Load(rt, agent.CacheOnly)
	now, _ := status(sup, "plugin:db:pg")
	if now.ServerName != "v2" || now.State != StateRunning || now.PID == old.PID {
		t.Fatalf("after update: %+v (old %+v)", now, old)
	}
	if alive(old.PID) {
		t.Fatalf("old server %d still running", old.PID)
	}
	if len(sup.Status()) != 1 || len(sup.Tools()) != 2 {
		t.Fatalf("status %+v tools %v", sup.Status(), toolNames(sup.Tools()))
	}
}

func TestCrashAtStartIsReportedAndIsolated(t *testing.T) {
	w := worldtest.New(t)
	w.Install("good@corp", "1.0.0", mcpPlugin("good", "srv", nil))
	w.Install("bad@corp", "1.0.0", mcpPlugin("bad", "srv", map[string]string{"TESTSERVER_MODE": "crash-at-start"}))
	sup, rt := newSupervisor(t, w)
	w.Load(rt, agent.CacheOnly) // a broken server does not fail the load

	bad, _ := status(sup, "plugin:bad:srv")
	if bad.State != StateFailed || bad.Plugin != "bad@corp" {
		t.Fatalf("bad: %+v", bad)
	}
	for _, want := range []string{"MCP server plugin:bad:srv of plugin bad@corp", "exited with status 3", "config file missing"} {
		if !strings.Contains(bad.Error, want) {
			t.Errorf("bad.Error = %q, want %q in it", bad.Error, want)
		}
	}
	good, _ := status(sup, "plugin:good:srv")
	if good.State != StateRunning {
		t.Fatalf("good: %+v", good)
	}
	if _, err := sup.CallTool(context.Background(), "mcp__plugin_good_srv__echo", map[string]any{"text": "still here"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range toolNames(sup.Tools()) {
		if strings.Contains(n, "plugin_bad") {
			t.Fatalf("failed server's tool listed: %s", n)
		}
	}
}

func TestStartErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  plugin.MCPServer
		want string
		is   error
	}{
		{"no command", plugin.MCPServer{}, "stdio server has no command", ErrNoCommand},
		{"missing binary", plugin.MCPServer{Command: "/nonexistent/mcp-server"}, "cannot start \"/nonexistent/mcp-server\"", nil},
		{"websocket", plugin.MCPServer{Type: "ws", URL: "ws://127.0.0.1:1"}, "unsupported transport", ErrTransport},
		{"http without url", plugin.MCPServer{Type: "http"}, "remote server has no url", ErrNoURL},
		{"not an MCP server", plugin.MCPServer{Command: serverBin, Env: map[string]string{"TESTSERVER_MODE": "not-mcp"}}, "initialize handshake failed", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sup := New(Options{StartTimeout: 3 * time.Second})
			defer sup.Close()
			cfg := c.cfg
			comp := agent.Component{Kind: plugin.KindMCPServer, Name: "plugin:p:s", Local: "s", Plugin: plugin.MustParseID("p@m"), Source: agent.SourcePlugin, MCP: &cfg}
			undo, err := sup.Start(context.Background(), comp)
			var se *StartError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) || (c.is != nil && !errors.Is(err, c.is)) {
				t.Fatalf("err = %v, want *StartError with %q", err, c.want)
			}
			if st, _ := status(sup, "plugin:p:s"); st.State != StateFailed || st.Error != err.Error() {
				t.Fatalf("status %+v", st)
			}
			if err := undo(); err != nil {
				t.Fatal(err)
			}
			if len(sup.Status()) != 0 {
				t.Fatal("undo left the failed start in Status")
			}
		})
	}
}

func TestCrashWhileRunning(t *testing.T) {
	w := worldtest.New(t)
	w.Install("flaky@corp", "1.0.0", mcpPlugin("flaky", "srv", map[string]string{"TESTSERVER_MODE": "crash-later"}))
	w.Install("good@corp", "1.0.0", mcpPlugin("good", "srv", nil))
	sup, rt := newSupervisor(t, w, func(o *Options) { o.MaxRestarts = -1 })
	w.Load(rt, agent.CacheOnly)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, _ := status(sup, "plugin:flaky:srv")
		if st.State == StateCrashed {
			if !strings.Contains(st.Error, "exited with status 4") || !strings.Contains(st.Error, "lost my database") {
				t.Fatalf("crash report %q", st.Error)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("crash not noticed: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := strings.Join(toolNames(sup.Tools()), " "); got != "mcp__plugin_good_srv__echo mcp__plugin_good_srv__env" {
		t.Fatalf("tools after crash = %q", got)
	}
	_, err := sup.CallTool(context.Background(), "mcp__plugin_flaky_srv__echo", map[string]any{"text": "x"})
	if !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "exited with status 4") {
		t.Fatalf("call to the crashed server's tool: %v", err)
	}
	if _, err := sup.CallTool(context.Background(), "mcp__plugin_good_srv__echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
}

func TestHTTPServer(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	srv := sdk.NewServer(&sdk.Implementation{Name: "remote", Version: "0.1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "ping"}, func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()

	w := worldtest.New(t)
	t.Setenv("REMOTE_TOKEN", "s3cret")
	w.Install("remote@corp", "1.0.0", map[string]string{
		".claude-plugin/plugin.json": `{"name": "remote", "version": "1.0.0"}`,
		".mcp.json":                  `{"mcpServers": {"api": {"type": "http", "url": "` + ts.URL + `/mcp", "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}}}}`,
	})
	sup, rt := newSupervisor(t, w)
	w.Load(rt, agent.CacheOnly)
	if got := strings.Join(toolNames(sup.Tools()), " "); got != "mcp__plugin_remote_api__ping" {
		t.Fatalf("tools = %q (status %+v)", got, sup.Status())
	}
	st, _ := status(sup, "plugin:remote:api")
	if st.Transport != "http" || st.PID != 0 || st.ServerName != "remote" {
		t.Fatalf("%+v", st)
	}
	res, err := sup.CallTool(context.Background(), "mcp__plugin_remote_api__ping", nil)
	if err != nil || text(t, res) != "pong" {
		t.Fatalf("%v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) == 0 || auth[0] != "Bearer s3cret" {
		t.Fatalf("Authorization headers %q", auth)
	}
}

func TestExpandVars(t *testing.T) {
	look := envLookup([]string{"A=1", "EMPTY=", "A=2"})
	cases := map[string]string{
		"${A}":           "2",
		"x${A}y${A}":     "x2y2",
		"${B}":           "${B}",
		"${B:-def}":      "def",
		"${EMPTY:-def}":  "def",
		"${EMPTY}":       "",
		"$A":             "$A",
		"${unterminated": "${unterminated",
	}
	for in, want := range cases {
		if got := expandVars(in, look); got != want {
			t.Errorf("expandVars(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestConcurrentReadsDuringStart reads Status and Tools while servers start
// and stop (run with -race).
func TestConcurrentReadsDuringStart(t *testing.T) {
	w := worldtest.New(t)
	for _, n := range []string{"a", "b", "c"} {
		w.Install(n+"@corp", "1.0.0", mcpPlugin(n, "srv", nil))
	}
	sup, rt := newSupervisor(t, w)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				sup.Status()
				sup.Tools()
			}
		}
	}()
	w.Load(rt, agent.CacheOnly)
	w.SetEnabled("b@corp", false)
	w.Load(rt, agent.CacheOnly)
	close(stop)
	wg.Wait()
	if got := len(sup.Tools()); got != 4 {
		t.Fatalf("%d tools, want 4 (a and c)", got)
	}
}

func TestSSEServer(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "legacy", Version: "0.1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "ping"}, func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil, nil
	})
	ts := httptest.NewServer(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer ts.Close()
	sup := New(Options{StartTimeout: 10 * time.Second})
	defer sup.Close()
	comp := agent.Component{Kind: plugin.KindMCPServer, Name: "plugin:legacy:sse", Local: "sse", Plugin: plugin.MustParseID("legacy@corp"),
		Source: agent.SourcePlugin, MCP: &plugin.MCPServer{Type: "sse", URL: ts.URL}}
	undo, err := sup.Start(context.Background(), comp)
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(sup.Tools()); len(got) != 1 || got[0] != "mcp__plugin_legacy_sse__ping" {
		t.Fatalf("tools = %v", got)
	}
	res, err := sup.CallTool(context.Background(), "mcp__plugin_legacy_sse__ping", nil)
	if err != nil || text(t, res) != "pong" {
		t.Fatalf("%v %+v", err, res)
	}
	if st, _ := status(sup, comp.Name); st.Transport != "sse" {
		t.Fatalf("%+v", st)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if len(sup.Tools()) != 0 {
		t.Fatal("tools left after undo")
	}
}

// waitStatus polls the server's status until ok accepts it.
func waitStatus(t *testing.T, sup *Supervisor, server string, ok func(Status) bool) Status {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, _ := status(sup, server)
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached the expected state; last %+v", server, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func startsIn(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// A server that crashes while running is started again, as a new process,
// and its tools answer again.
func TestCrashedServerIsRestarted(t *testing.T) {
	w := worldtest.New(t)
	starts := filepath.Join(t.TempDir(), "starts")
	w.Install("flaky@corp", "1.0.0", mcpPlugin("flaky", "srv", map[string]string{
		"TESTSERVER_CRASH_FIRST": filepath.Join(t.TempDir(), "crashed"), "TESTSERVER_STARTS": starts}))
	sup, rt := newSupervisor(t, w, func(o *Options) { o.RestartBackoff = 20 * time.Millisecond })
	w.Load(rt, agent.CacheOnly)
	st := waitStatus(t, sup, "plugin:flaky:srv", func(st Status) bool { return st.State == StateRunning && st.Restarts == 1 })
	if st.PID == 0 || st.Error != "" || st.Tools != 2 || !strings.Contains(st.LastCrash, "exited with status 4") {
		t.Fatalf("after the restart: %+v", st)
	}
	if got := startsIn(t, starts); len(got) != 2 || got[0] == got[1] || got[1] != strconv.Itoa(st.PID) {
		t.Fatalf("processes started: %q, want 2 ending with %d", got, st.PID)
	}
	res, err := sup.CallTool(context.Background(), "mcp__plugin_flaky_srv__echo", map[string]any{"text": "back"})
	if err != nil {
		t.Fatal(err)
	}
	if text(t, res) != "back" {
		t.Fatalf("echo after restart = %q", text(t, res))
	}
}

// A server that keeps crashing is started again MaxRestarts times, then
// left crashed with its last exit, its stderr and the way to start it again.
func TestRestartsGiveUp(t *testing.T) {
	w := worldtest.New(t)
	starts := filepath.Join(t.TempDir(), "starts")
	w.Install("flaky@corp", "1.0.0", mcpPlugin("flaky", "srv", map[string]string{"TESTSERVER_MODE": "crash-later", "TESTSERVER_STARTS": starts}))
	sup, rt := newSupervisor(t, w, func(o *Options) { o.RestartBackoff, o.MaxRestarts = 10*time.Millisecond, 2 })
	w.Load(rt, agent.CacheOnly)
	st := waitStatus(t, sup, "plugin:flaky:srv", func(st Status) bool { return strings.Contains(st.Error, "gave up") })
	if st.State != StateCrashed || st.Restarts != 2 || !strings.Contains(st.Error, "gave up after 2 restarts") ||
		!strings.Contains(st.Error, "exited with status 4") || !strings.Contains(st.Error, "lost my database") {
		t.Fatalf("status after giving up: %+v", st)
	}
	if got := startsIn(t, starts); len(got) != 3 {
		t.Fatalf("processes started: %q, want 3 (the first and 2 restarts)", got)
	}
	if _, err := sup.CallTool(context.Background(), "mcp__plugin_flaky_srv__echo", map[string]any{"text": "x"}); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("call after giving up: %v", err)
	}
}

// Disabling a plugin whose server waits for a restart ends the wait: no
// process is started afterwards and the server leaves Status.
func TestStopCancelsPendingRestart(t *testing.T) {
	w := worldtest.New(t)
	starts := filepath.Join(t.TempDir(), "starts")
	w.Install("flaky@corp", "1.0.0", mcpPlugin("flaky", "srv", map[string]string{"TESTSERVER_MODE": "crash-later", "TESTSERVER_STARTS": starts}))
	sup, rt := newSupervisor(t, w, func(o *Options) { o.RestartBackoff = 300 * time.Millisecond })
	w.Load(rt, agent.CacheOnly)
	waitStatus(t, sup, "plugin:flaky:srv", func(st Status) bool { return st.State == StateRestarting })
	w.SetEnabled("flaky@corp", false)
	w.Load(rt, agent.CacheOnly)
	if st, ok := status(sup, "plugin:flaky:srv"); ok {
		t.Fatalf("disabled server still in Status: %+v", st)
	}
	before := startsIn(t, starts)
	// Well past the backoff: a restart that was not cancelled would have
	// started another process by now.
	time.Sleep(time.Second)
	if got := startsIn(t, starts); len(got) != len(before) {
		t.Fatalf("processes started after the disable: %q, before it %q", got, before)
	}
}

// Restart replaces a running server's process with a new one, brings back a
// crashed server that has no restarts left, and the plugin's undo stops the
// process Restart started.
func TestRestartOnRequest(t *testing.T) {
	w := worldtest.New(t)
	w.Install("db@corp", "1.0.0", mcpPlugin("db", "pg", nil))
	w.Install("flaky@corp", "1.0.0", mcpPlugin("flaky", "srv", map[string]string{"TESTSERVER_MODE": "crash-later"}))
	sup, rt := newSupervisor(t, w, func(o *Options) { o.MaxRestarts = -1 })
	w.Load(rt, agent.CacheOnly)
	ctx := context.Background()

	before, _ := status(sup, "plugin:db:pg")
	st, err := sup.Restart(ctx, "plugin:db:pg")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateRunning || st.PID == before.PID || st.Tools != 2 {
		t.Fatalf("after Restart: %+v (before %+v)", st, before)
	}
	if alive(before.PID) {
		t.Fatalf("the old process %d still runs", before.PID)
	}
	res, err := sup.CallTool(ctx, "mcp__plugin_db_pg__echo", map[string]any{"text": "again"})
	if err != nil || text(t, res) != "again" {
		t.Fatalf("call after Restart: %v", err)
	}

	waitStatus(t, sup, "plugin:flaky:srv", func(st Status) bool { return st.State == StateCrashed })
	if st, err := sup.Restart(ctx, "plugin:flaky:srv"); err != nil || st.State != StateRunning || st.Restarts != 0 {
		t.Fatalf("Restart of a crashed server: %+v, %v", st, err)
	}

	if _, err := sup.Restart(ctx, "plugin:nope:srv"); !errors.Is(err, ErrUnknownServer) {
		t.Fatalf("Restart of an unknown server: %v", err)
	}

	disableDB(t, w, rt, sup, st.PID)
}

// A restart whose start fails counts against the budget like a crash, and
// the server ends crashed with that start's failure and its stderr.
func TestRestartThatFailsToStart(t *testing.T) {
	w := worldtest.New(t)
	starts := filepath.Join(t.TempDir(), "starts")
	w.Install("flaky@corp", "1.0.0", mcpPlugin("flaky", "srv", map[string]string{
		"TESTSERVER_THEN_FAIL": filepath.Join(t.TempDir(), "ran"), "TESTSERVER_STARTS": starts}))
	sup, rt := newSupervisor(t, w, func(o *Options) { o.RestartBackoff, o.MaxRestarts = 10*time.Millisecond, 2 })
	w.Load(rt, agent.CacheOnly)
	st := waitStatus(t, sup, "plugin:flaky:srv", func(st Status) bool { return strings.Contains(st.Error, "gave up") })
	if st.State != StateCrashed || st.Restarts != 2 || !strings.Contains(st.Error, "restart failed") ||
		!strings.Contains(st.Error, "config file missing") || !strings.Contains(st.LastCrash, "exited with status 4") {
		t.Fatalf("status: %+v", st)
	}
	if got := startsIn(t, starts); len(got) != 3 {
		t.Fatalf("processes started: %q, want 3", got)
	}
}

// Restarts on request racing reloads that disable and enable the plugin:
// every restart either happens or says why not, and once the plugin is
// disabled no process it ever started is left running.
func TestRestartRacingReloads(t *testing.T) {
	w := worldtest.New(t)
	starts := filepath.Join(t.TempDir(), "starts")
	w.Install("db@corp", "1.0.0", mcpPlugin("db", "pg", map[string]string{"TESTSERVER_STARTS": starts}))
	sup, rt := newSupervisor(t, w)
	w.Load(rt, agent.CacheOnly)
	done := make(chan error, 1)
	var stop atomic.Bool
	go func() {
		defer close(done)
		for !stop.Load() {
			_, err := sup.Restart(context.Background(), "plugin:db:pg")
			// A restart may find the server disabled (unknown) or be
			// superseded (not running); a healthy server never fails its
			// handshake, so any other error is a bug.
			if err != nil && !errors.Is(err, ErrNotRunning) && !errors.Is(err, ErrUnknownServer) {
				done <- err
				return
			}
		}
	}()
	for i := 0; i < 6; i++ {
		w.SetEnabled("db@corp", i%2 == 1)
		w.Load(rt, agent.CacheOnly)
		time.Sleep(50 * time.Millisecond) // let restarts run against this state
	}
	stop.Store(true)
	if err := <-done; err != nil {
		t.Fatalf("Restart: %v", err)
	}
	w.SetEnabled("db@corp", false)
	w.Load(rt, agent.CacheOnly)
	if st := sup.Status(); len(st) != 0 {
		t.Fatalf("servers left after the disable: %+v", st)
	}
	for _, p := range startsIn(t, starts) {
		pid, _ := strconv.Atoi(p)
		if alive(pid) {
			t.Fatalf("process %d outlived the disable (all started: %v)", pid, startsIn(t, starts))
		}
	}
}

// An MCP server process sees the plugin's userConfig options as
// CLAUDE_PLUGIN_OPTION_<KEY>, sensitive ones included, as in Claude Code.
func TestServerSeesPluginOptions(t *testing.T) {
	w := worldtest.New(t)
	files := mcpPlugin("db", "pg", map[string]string{"TESTSERVER_NAME": "pg"})
	files[".claude-plugin/plugin.json"] = `{"name":"db","version":"1.0.0","userConfig":{
		"db-host":{"type":"string","title":"Host","description":"h"},
		"password":{"type":"string","title":"Password","description":"p","sensitive":true}}}`
	w.Install("db@corp", "1.0.0", files)
	id := plugin.MustParseID("db@corp")
	if err := userconfig.Set(w.Home, id, plugin.UserConfigOption{Key: "db-host"}, "pg.internal"); err != nil {
		t.Fatal(err)
	}
	if err := userconfig.Set(w.Home, id, plugin.UserConfigOption{Key: "password", Sensitive: true}, "hunter2"); err != nil {
		t.Fatal(err)
	}
	sup, rt := newSupervisor(t, w)
	w.Load(rt, agent.CacheOnly)
	for name, want := range map[string]string{"CLAUDE_PLUGIN_OPTION_DB_HOST": "pg.internal", "CLAUDE_PLUGIN_OPTION_PASSWORD": "hunter2"} {
		res, err := sup.CallTool(context.Background(), "mcp__plugin_db_pg__env", map[string]any{"name": name})
		if err != nil || text(t, res) != want {
			t.Errorf("server's %s = %v %+v, want %q", name, err, res, want)
		}
	}
}
