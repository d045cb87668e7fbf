package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testutil/processtest"
	"github.com/wharfhq/wharf/internal/testutil/testworld"
)

// testMCPServer builds the MCP test server of agent/mcp once.
var mcpServerOnce struct {
	sync.Once
	bin string
	err error
}

func testMCPServer(t *testing.T) string {
	t.Helper()
	mcpServerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "wharf-mcp-server-")
		if err != nil {
			mcpServerOnce.err = err
			return
		}
		mcpServerOnce.bin = filepath.Join(dir, "testserver")
		out, err := exec.Command("go", "build", "-o", mcpServerOnce.bin, "../../agent/mcp/internal/testserver").CombinedOutput()
		if err != nil {
			mcpServerOnce.err = fmt.Errorf("go build testserver: %v\n%s", err, out)
		}
	})
	if mcpServerOnce.err != nil {
		t.Fatal(mcpServerOnce.err)
	}
	return mcpServerOnce.bin
}

// agentHome is a wharf home with a directory marketplace "corp" whose
// plugins are given as file trees, all installed.
type agentHome struct {
	t       *testing.T
	bin     string
	env     []string
	project string
}

func newAgentHome(t *testing.T, plugins map[string]map[string]string) *agentHome {
	t.Helper()
	root := t.TempDir()
	h := &agentHome{t: t, bin: wharfBinary(t), project: filepath.Join(root, "proj")}
	h.env = append(os.Environ(), "WHARF_HOME="+filepath.Join(root, "home"), "WHARF_MANAGED_DIR="+filepath.Join(root, "managed"), "HOME="+filepath.Join(root, "userhome"))
	mkt := testworld.Marketplace(t, filepath.Join(root, "corp"), "corp", plugins)
	writeFile(t, filepath.Join(h.project, ".wharf", "settings.json"), "{}")
	h.run("marketplace", "add", mkt)
	for name := range plugins {
		h.run("install", name+"@corp")
	}
	t.Cleanup(func() { testworld.MakeWritable(root) })
	return h
}

func (h *agentHome) run(args ...string) string {
	h.t.Helper()
	cmd := exec.Command(h.bin, args...)
	cmd.Env = h.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		h.t.Fatalf("wharf %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// setEnabled edits enabledPlugins in the user's settings file, as the user
// (or their editor) would while a session runs.
func (h *agentHome) setEnabled(id string, on bool) {
	h.t.Helper()
	var home string
	for _, kv := range h.env {
		if v, ok := strings.CutPrefix(kv, "WHARF_HOME="); ok {
			home = v
		}
	}
	p := filepath.Join(home, "settings.json")
	doc := map[string]any{}
	if b, err := os.ReadFile(p); err == nil {
		if err := json.Unmarshal(b, &doc); err != nil {
			h.t.Fatal(err)
		}
	}
	ep, _ := doc["enabledPlugins"].(map[string]any)
	if ep == nil {
		ep = map[string]any{}
	}
	ep[id] = on
	doc["enabledPlugins"] = ep
	b, _ := json.Marshal(doc)
	writeFile(h.t, p, string(b))
}

func mcpPluginFiles(server, name string, env map[string]string) map[string]string {
	e, _ := json.Marshal(env)
	return map[string]string{
		".claude-plugin/plugin.json": `{"name": "` + name + `", "version": "1.0.0"}`,
		".mcp.json":                  `{"mcpServers": {"srv": {"command": "` + server + `", "env": ` + string(e) + `}}}`,
	}
}

func processAlive(pid int) bool { return processtest.Alive(pid) }

type wireResponse struct {
	Type     string `json:"type"`
	Response struct {
		Subtype   string          `json:"subtype"`
		RequestID *string         `json:"request_id"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
	} `json:"response"`
}

func (r wireResponse) id() string {
	if r.Response.RequestID == nil {
		return "<null>"
	}
	return *r.Response.RequestID
}

// serveProcess is `wharf agent serve --stdio` as a child process.
type serveProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	mu     sync.Mutex
	got    []wireResponse
	taken  map[string]int
	notify chan struct{}
	closed chan struct{}
}

func startAgentServe(t *testing.T, h *agentHome, extraEnv ...string) *serveProcess {
	t.Helper()
	p := &serveProcess{t: t, taken: map[string]int{}, notify: make(chan struct{}, 1), closed: make(chan struct{})}
	p.cmd = exec.Command(h.bin, "agent", "serve", "--stdio", "--project", h.project)
	p.cmd.Env = append(append([]string(nil), h.env...), extraEnv...)
	p.cmd.Stderr = &p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.closed)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var r wireResponse
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Type != "control_response" {
				t.Errorf("stdout line is not a control_response: %q", sc.Text())
				continue
			}
			p.mu.Lock()
			p.got = append(p.got, r)
			p.mu.Unlock()
			select {
			case p.notify <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		p.stdin.Close()
		p.cmd.Process.Kill()
	})
	return p
}

func (p *serveProcess) write(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, s); err != nil {
		p.t.Fatal(err)
	}
}

func (p *serveProcess) send(id, subtype, fields string) {
	p.t.Helper()
	if fields != "" {
		fields = "," + fields
	}
	p.write(fmt.Sprintf(`{"type":"control_request","request_id":%q,"request":{"subtype":%q%s}}`+"\n", id, subtype, fields))
}

// wait returns the next not yet returned response for id.
func (p *serveProcess) wait(id string) wireResponse {
	p.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		p.mu.Lock()
		n := 0
		for _, r := range p.got {
			if r.id() != id {
				continue
			}
			if n == p.taken[id] {
				p.taken[id]++
				p.mu.Unlock()
				return r
			}
			n++
		}
		p.mu.Unlock()
		select {
		case <-p.notify:
		case <-p.closed:
			p.mu.Lock()
			p.mu.Unlock()
			p.t.Fatalf("stdout closed before a response to %q; stderr:\n%s", id, p.stderr.String())
		case <-deadline:
			p.t.Fatalf("no response to %q; stderr:\n%s", id, p.stderr.String())
		}
	}
}

func (p *serveProcess) finish() []wireResponse {
	p.t.Helper()
	p.stdin.Close()
	<-p.closed
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("wharf agent serve: %v\n%s", err, p.stderr.String())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.got
}

func TestAgentServeStdioProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the wharf binary")
	}
	server := testMCPServer(t)
	h := newAgentHome(t, map[string]map[string]string{
		"slow": {
			".claude-plugin/plugin.json": `{"name": "slow", "version": "1.0.0"}`,
			"hooks/hooks.json":           `{"hooks": {"PreToolUse": [{"matcher": "Slow", "hooks": [{"type": "command", "command": "sh ${CLAUDE_PLUGIN_ROOT}/hooks/wait.sh"}]}]}}`,
			"hooks/wait.sh":              "cat > /dev/null\ni=0\nwhile [ ! -f \"$GATE\" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\necho '{\"decision\":\"approve\",\"reason\":\"gate open\"}'\n",
		},
		"guard": {
			".claude-plugin/plugin.json": `{"name": "guard", "version": "1.0.0"}`,
			"commands/check.md":          "Check.\n",
			"hooks/hooks.json":           `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "cat > /dev/null; echo no bash >&2; exit 2"}]}]}}`,
		},
		"db": mcpPluginFiles(server, "db", map[string]string{"TESTSERVER_NAME": "db"}),
	})
	gate := filepath.Join(t.TempDir(), "gate")
	p := startAgentServe(t, h, "GATE="+gate)

	p.send("init", "initialize", `"protocolVersion":1`)
	p.send("slow", "run_hook", `"event":"PreToolUse","input":{"tool_name":"Slow"}`)
	p.write("this is not json\n")
	p.send("list1", "list_components", "")
	if r := p.wait("list1"); !strings.Contains(string(r.Response.Response), `"guard:check"`) || !strings.Contains(string(r.Response.Response), `"plugin:db:srv"`) {
		t.Fatalf("list1: %s", r.Response.Response)
	}
	if r := p.wait("<null>"); !strings.Contains(r.Response.Error, "line 3 is not a JSON object") {
		t.Fatalf("garbage: %+v", r)
	}

	// A 1 MiB request written in pieces, with another request between two
	// of its pieces impossible (one stream): it must arrive whole.
	big := fmt.Sprintf(`{"type":"control_request","request_id":"big","request":{"subtype":"run_hook","event":"PreToolUse","input":{"tool_name":"Bash","tool_input":{"command":"%s"}}}}`+"\n", strings.Repeat("y", 1<<20))
	for i := 0; i < len(big); i += 7919 {
		p.write(big[i:min(i+7919, len(big))])
	}
	if r := p.wait("big"); r.Response.Subtype != "success" || !strings.Contains(string(r.Response.Response), `"decision":"block"`) || !strings.Contains(string(r.Response.Response), "no bash") {
		t.Fatalf("big: %+v", r)
	}

	// MCP tools under namespaced names, from a live server process.
	p.send("mcp1", "mcp_list_tools", "")
	var tools struct {
		Tools   []struct{ Name string }
		Servers []struct {
			Server string
			State  string
			PID    int
		}
	}
	if err := json.Unmarshal(p.wait("mcp1").Response.Response, &tools); err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 2 || tools.Tools[0].Name != "mcp__plugin_db_srv__echo" || len(tools.Servers) != 1 || tools.Servers[0].State != "running" {
		t.Fatalf("mcp1: %+v", tools)
	}
	pid := tools.Servers[0].PID
	if !processAlive(pid) {
		t.Fatalf("MCP server %d not running", pid)
	}

	// A tool call through the pipe reaches the server process and back; an
	// unknown tool is an error response naming the cause.
	p.send("call1", "mcp_call_tool", `"name":"mcp__plugin_db_srv__echo","arguments":{"text":"hello over the pipe"}`)
	if r := p.wait("call1"); r.Response.Subtype != "success" || !strings.Contains(string(r.Response.Response), `"text":"hello over the pipe"`) {
		t.Fatalf("call1: %+v %s", r.Response, r.Response.Response)
	}
	p.send("call2", "mcp_call_tool", `"name":"mcp__plugin_db_srv__nope"`)
	if r := p.wait("call2"); r.Response.Subtype != "error" || !strings.Contains(r.Response.Error, "no running MCP server exposes this tool") {
		t.Fatalf("call2: %+v", r.Response)
	}

	// A restart on request replaces the process.
	p.send("restart1", "mcp_restart", `"server":"plugin:db:srv"`)
	var restarted struct {
		Server struct {
			PID   int
			State string
		}
	}
	if err := json.Unmarshal(p.wait("restart1").Response.Response, &restarted); err != nil {
		t.Fatal(err)
	}
	if restarted.Server.State != "running" || restarted.Server.PID == pid || processAlive(pid) || !processAlive(restarted.Server.PID) {
		t.Fatalf("restart1: %+v (old process %d alive: %v)", restarted, pid, processAlive(pid))
	}
	pid = restarted.Server.PID

	// A reload in the middle of the session, with slow still in flight,
	// after the user disabled a plugin with the CLI (the session does not
	// hold state.db's lock) and another in their settings file.
	h.run("disable", "db@corp")
	h.setEnabled("guard@corp", false)
	p.send("reload", "reload", "")
	rl := p.wait("reload")
	if rl.Response.Subtype != "success" || !strings.Contains(string(rl.Response.Response), `"mcp-server plugin:db:srv"`) || !strings.Contains(string(rl.Response.Response), `"command guard:check"`) {
		t.Fatalf("reload: %+v", rl)
	}
	if processAlive(pid) {
		t.Fatalf("MCP server %d of the disabled plugin still running after the reload", pid)
	}
	p.send("mcp2", "mcp_list_tools", "")
	p.send("bash2", "run_hook", `"event":"PreToolUse","input":{"tool_name":"Bash"}`)
	if r := p.wait("mcp2"); !strings.Contains(string(r.Response.Response), `"tools":[]`) {
		t.Fatalf("mcp2: %s", r.Response.Response)
	}
	if r := p.wait("bash2"); strings.Contains(string(r.Response.Response), "block") {
		t.Fatalf("bash2: %s", r.Response.Response)
	}

	// Interleaved burst, without waiting between requests.
	for i := 0; i < 20; i++ {
		sub := []string{"status", "list_components", "initialize", "mcp_list_tools"}[i%4]
		p.send(fmt.Sprintf("burst%d", i), sub, "")
	}
	for i := 0; i < 20; i++ {
		if r := p.wait(fmt.Sprintf("burst%d", i)); r.Response.Subtype != "success" {
			t.Fatalf("burst%d: %+v", i, r)
		}
	}

	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := p.wait("slow"); !strings.Contains(string(r.Response.Response), "gate open") {
		t.Fatalf("slow: %+v", r)
	}
	all := p.finish()
	count := map[string]int{}
	order := map[string]int{}
	for i, r := range all {
		count[r.id()]++
		order[r.id()] = i
	}
	for id, n := range count {
		if n != 1 {
			t.Errorf("%d responses to %q, want 1", n, id)
		}
	}
	if len(count) != 32 {
		t.Errorf("%d distinct ids answered, want 32 (31 requests and the garbage line): %v", len(count), count)
	}
	if order["slow"] < order["burst19"] {
		t.Errorf("slow (sent second) was answered before the burst: not concurrent")
	}
}

func TestAgentMCPListProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the wharf binary")
	}
	server := testMCPServer(t)
	pidfile := filepath.Join(t.TempDir(), "pid")
	h := newAgentHome(t, map[string]map[string]string{
		"db":  mcpPluginFiles(server, "db", map[string]string{"TESTSERVER_PIDFILE": pidfile}),
		"bad": mcpPluginFiles(server, "bad", map[string]string{"TESTSERVER_MODE": "crash-at-start"}),
	})
	cmd := exec.Command(h.bin, "agent", "mcp", "list", "--json", "--project", h.project)
	cmd.Env = h.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var got struct {
		Tools []struct {
			Name, Server, Plugin string
		}
		Servers []struct {
			Server, Plugin, State, Error string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got.Tools) != 2 || got.Tools[0].Name != "mcp__plugin_db_srv__echo" || got.Tools[1].Name != "mcp__plugin_db_srv__env" || got.Tools[0].Plugin != "db@corp" {
		t.Fatalf("tools: %s", out)
	}
	if len(got.Servers) != 2 || got.Servers[0].Server != "plugin:bad:srv" || got.Servers[0].State != "failed" || !strings.Contains(got.Servers[0].Error, "exited with status 3") {
		t.Fatalf("servers: %s", out)
	}
	if !strings.Contains(stderr.String(), "plugin:bad:srv of plugin bad@corp") {
		t.Errorf("the failed server is not reported on stderr: %s", stderr.String())
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(b))
	if processAlive(pid) {
		t.Fatalf("MCP server %d still running after wharf agent mcp list exited", pid)
	}

	// Text form.
	txt := h.run("agent", "mcp", "list", "--project", h.project)
	if !strings.Contains(txt, "mcp__plugin_db_srv__echo") || !strings.Contains(txt, "Echo the text back") {
		t.Fatalf("text output: %s", txt)
	}
}
