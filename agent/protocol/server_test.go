package protocol

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/agent"
	"github.com/wharfhq/wharf/agent/internal/worldtest"
	"github.com/wharfhq/wharf/agent/mcp"
)

// response is one parsed output line.
type response struct {
	Type     string `json:"type"`
	Response struct {
		Subtype   string          `json:"subtype"`
		RequestID *string         `json:"request_id"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
	} `json:"response"`
}

func (r response) id() string {
	if r.Response.RequestID == nil {
		return "<null>"
	}
	return *r.Response.RequestID
}

// client drives a Server over pipes, as an agent would over stdio.
type client struct {
	t     *testing.T
	in    *io.PipeWriter
	out   *bufio.Reader
	done  chan error
	mu    sync.Mutex
	got   []response
	raw   []string
	seen  chan response
	taken map[string]int
}

func startServer(t *testing.T, srv *Server) *client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan error, 1), seen: make(chan response, 1024)}
	go func() {
		err := srv.Serve(context.Background(), inR, outW)
		outW.Close()
		c.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(c.out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var r response
			line := sc.Text()
			if err := json.Unmarshal([]byte(line), &r); err != nil || r.Type != TypeControlResponse {
				t.Errorf("output line is not a control_response: %q (%v)", line, err)
				continue
			}
			c.mu.Lock()
			c.got = append(c.got, r)
			c.raw = append(c.raw, line)
			c.mu.Unlock()
			c.seen <- r
		}
		close(c.seen)
	}()
	t.Cleanup(func() { inW.Close() })
	return c
}

func (c *client) send(lines ...string) {
	c.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(c.in, l+"\n"); err != nil {
			c.t.Fatal(err)
		}
	}
}

func req(id, subtype string, fields string) string {
	if fields != "" {
		fields = "," + fields
	}
	return fmt.Sprintf(`{"type":"control_request","request_id":%q,"request":{"subtype":%q%s}}`, id, subtype, fields)
}

// waitFor returns the next response for id not returned before, waiting
// for it when it has not arrived yet.
func (c *client) waitFor(id string) response {
	c.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		c.mu.Lock()
		if c.taken == nil {
			c.taken = map[string]int{}
		}
		n := 0
		for _, r := range c.got {
			if r.id() != id {
				continue
			}
			if n == c.taken[id] {
				c.taken[id]++
				c.mu.Unlock()
				return r
			}
			n++
		}
		c.mu.Unlock()
		select {
		case _, ok := <-c.seen:
			if !ok {
				c.t.Fatalf("output ended before a response to %q", id)
			}
		case <-timeout:
			c.t.Fatalf("no response to %q", id)
		}
	}
}

// finish closes the input and returns every response.
func (c *client) finish() []response {
	c.t.Helper()
	c.in.Close()
	if err := <-c.done; err != nil {
		c.t.Fatal(err)
	}
	for range c.seen {
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.got
}

func byID(rs []response) map[string][]response {
	m := map[string][]response{}
	for _, r := range rs {
		m[r.id()] = append(m[r.id()], r)
	}
	return m
}

// gatedPlugin has a PreToolUse hook that waits (bounded) until the file
// $GATE exists, so a test controls when its request finishes.
func gatedPlugin(name string) map[string]string {
	return map[string]string{
		".claude-plugin/plugin.json": `{"name": "` + name + `", "version": "1.0.0"}`,
		"commands/go.md":             "---\ndescription: Go\n---\nGo.\n",
		"hooks/hooks.json":           `{"hooks": {"PreToolUse": [{"matcher": "Slow", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks/wait.sh"}]}]}}`,
		"hooks/wait.sh*":             "#!/bin/sh\ncat > /dev/null\ni=0\nwhile [ ! -f \"$GATE\" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done\necho '{\"decision\":\"approve\",\"reason\":\"gate open\"}'\n",
	}
}

func guardPlugin(name string) map[string]string {
	return map[string]string{
		".claude-plugin/plugin.json": `{"name": "` + name + `", "version": "1.0.0"}`,
		"commands/check.md":          "---\ndescription: Check\n---\nCheck.\n",
		"hooks/hooks.json":           `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "cat >/dev/null; echo no bash here >&2; exit 2"}]}]}}`,
	}
}

func newRuntimeServer(t *testing.T) (*worldtest.World, *Server) {
	t.Helper()
	w := worldtest.New(t)
	rt := w.Runtime(w.Options())
	return w, &Server{Backend: &Runtime{Runtime: rt, Project: w.Project}, Log: io.Discard}
}

func TestServeConcurrentOutOfOrderWithReload(t *testing.T) {
	w, srv := newRuntimeServer(t)
	w.Install("slow@corp", "1.0.0", gatedPlugin("slow"))
	w.Install("guard@corp", "1.0.0", guardPlugin("guard"))
	gate := filepath.Join(t.TempDir(), "gate")
	t.Setenv("GATE", gate)
	c := startServer(t, srv)

	// list_components before any load: a clear error, and the session goes on.
	c.send(req("early", "list_components", ""))
	if r := c.waitFor("early"); r.Response.Subtype != SubtypeError || !strings.Contains(r.Response.Error, "send a reload request first") {
		t.Fatalf("early: %+v", r)
	}
	c.send(req("load", "reload", ""))
	if r := c.waitFor("load"); r.Response.Subtype != SubtypeSuccess {
		t.Fatalf("load: %+v", r)
	}

	// slow blocks on the gate; the requests after it are answered first.
	c.send(req("slow", "run_hook", `"event":"PreToolUse","input":{"tool_name":"Slow"}`))
	c.send(req("slow", "status", "")) // duplicate id while in flight
	dup := c.waitFor("slow")
	if dup.Response.Subtype != SubtypeError || !strings.Contains(dup.Response.Error, "duplicate request_id \"slow\"") {
		t.Fatalf("duplicate: %+v", dup)
	}
	c.send(req("list1", "list_components", `"kind":"command"`), "not json at all", req("bash1", "run_hook", `"event":"PreToolUse","input":{"tool_name":"Bash"}`))
	l1 := c.waitFor("list1")
	var comps ListComponentsResponse
	if err := json.Unmarshal(l1.Response.Response, &comps); err != nil {
		t.Fatal(err)
	}
	if got := names(comps.Components); got != "guard:check slow:go" {
		t.Fatalf("components = %q", got)
	}
	b1 := c.waitFor("bash1")
	if !strings.Contains(string(b1.Response.Response), `"decision":"block"`) || !strings.Contains(string(b1.Response.Response), "no bash here") {
		t.Fatalf("bash1: %s", b1.Response.Response)
	}

	// A reload in the middle: guard is disabled; slow is still in flight.
	w.SetEnabled("guard@corp", false)
	c.send(req("reload", "reload", ""))
	rl := c.waitFor("reload")
	var rr ReloadResponse
	if err := json.Unmarshal(rl.Response.Response, &rr); err != nil || !contains(rr.Removed, "command guard:check") {
		t.Fatalf("reload: %s %v", rl.Response.Response, err)
	}
	c.send(req("list2", "list_components", `"kind":"command"`), req("bash2", "run_hook", `"event":"PreToolUse","input":{"tool_name":"Bash"}`))
	if r := c.waitFor("list2"); !strings.Contains(string(r.Response.Response), "slow:go") || strings.Contains(string(r.Response.Response), "guard:check") {
		t.Fatalf("list2: %s", r.Response.Response)
	}
	if r := c.waitFor("bash2"); strings.Contains(string(r.Response.Response), `"block"`) {
		t.Fatalf("bash2 still blocked after guard was disabled: %s", r.Response.Response)
	}

	// Open the gate: slow finishes last, with its own id.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	slow := c.waitFor("slow")
	if slow.Response.Subtype != SubtypeSuccess || !strings.Contains(string(slow.Response.Response), "gate open") {
		t.Fatalf("slow: %+v", slow)
	}
	all := c.finish()
	ids := byID(all)
	for _, id := range []string{"early", "load", "list1", "bash1", "reload", "list2", "bash2", "<null>"} {
		if len(ids[id]) != 1 {
			t.Errorf("%d responses to %q, want exactly 1", len(ids[id]), id)
		}
	}
	if len(ids["slow"]) != 2 {
		t.Errorf("slow: want the duplicate's error and the original's success, got %d", len(ids["slow"]))
	}
	// Out of order: slow was sent before list1 and answered after it.
	pos := map[string]int{}
	for i, r := range all {
		if r.Response.Subtype == SubtypeSuccess {
			pos[r.id()] = i
		}
	}
	if pos["slow"] < pos["list2"] {
		t.Errorf("slow answered at %d, before list2 at %d", pos["slow"], pos["list2"])
	}
}

func names(cs []Component) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return strings.Join(out, " ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// chunkReader hands out its data n bytes per Read, so one message arrives
// over many reads.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	k := min(r.n, len(p), len(r.data))
	copy(p, r.data[:k])
	r.data = r.data[k:]
	return k, nil
}

func serveAll(t *testing.T, srv *Server, input string, chunk int) []response {
	t.Helper()
	var out strings.Builder
	if err := srv.Serve(context.Background(), &chunkReader{data: []byte(input), n: chunk}, &out); err != nil {
		t.Fatal(err)
	}
	var rs []response
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if line == "" {
			continue
		}
		var r response
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Type != TypeControlResponse {
			t.Fatalf("output line %q: %v", line, err)
		}
		rs = append(rs, r)
	}
	return rs
}

func TestServeLargeMessageSplitAcrossReads(t *testing.T) {
	w, srv := newRuntimeServer(t)
	out := filepath.Join(t.TempDir(), "seen")
	w.Install("big@corp", "1.0.0", map[string]string{
		".claude-plugin/plugin.json": `{"name": "big", "version": "1.0.0"}`,
		"hooks/hooks.json":           `{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "wc -c > ` + out + `"}]}]}}`,
	})
	w.Load(srv.Backend.(*Runtime).Runtime, agent.CacheOnly)
	payload := strings.Repeat("x", 1<<20)
	big := req("big", "run_hook", `"event":"PreToolUse","input":{"tool_name":"Write","tool_input":{"content":"`+payload+`"}}`)
	input := req("a", "status", "") + "\n" + big + "\n" + req("b", "list_components", "") + "\n"
	rs := serveAll(t, srv, input, 4093) // a prime, so no read ends on a line boundary
	ids := byID(rs)
	for _, id := range []string{"a", "big", "b"} {
		if len(ids[id]) != 1 || ids[id][0].Response.Subtype != SubtypeSuccess {
			t.Fatalf("%s: %+v", id, ids[id])
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.TrimSpace(string(b)); n < "1048576" || len(n) < 7 {
		t.Fatalf("hook saw %s bytes of event, want more than 1 MiB", n)
	}
}

func TestServeMalformedLines(t *testing.T) {
	_, srv := newRuntimeServer(t)
	srv.MaxLine = 4096
	long := req("long", "status", `"pad":"`+strings.Repeat("p", 10000)+`"`)
	lines := []string{
		`{"type":"control_request","request_id":"ok1","request":{"subtype":"initialize"}}`,
		`garbage`,
		``,
		`[1,2,3]`,
		`{"type":"control_request","request_id":7,"request":{"subtype":"status"}}`,
		`{"type":"control_request","request":{"subtype":"status"}}`,
		`{"request_id":"notype","request":{"subtype":"status"}}`,
		`{"type":"user","request_id":"wrongtype"}`,
		`{"type":"control_request","request_id":"nosub","request":{}}`,
		`{"type":"control_request","request_id":"badreq","request":"status"}`,
		`{"type":"control_request","request_id":"unknown","request":{"subtype":"fly"}}`,
		`{"type":"control_request","request_id":"badfield","request":{"subtype":"list_components","kind":5}}`,
		`{"type":"control_request","request_id":"badmode","request":{"subtype":"reload","mode":"sometimes"}}`,
		`{"type":"control_request","request_id":"badevent","request":{"subtype":"run_hook","event":"Lunch"}}`,
		long,
		`{"type":"control_request","request_id":"ok2","request":{"subtype":"initialize","protocolVersion":1}}`,
		`{"type":"control_request","request_id":"future","request":{"subtype":"initialize","protocolVersion":99}}`,
		`{"type":"control_cancel_request","request_id":"nothing-in-flight"}`,
	}
	rs := serveAll(t, srv, strings.Join(lines, "\n"), 100) // no final newline
	ids := byID(rs)
	wantErr := map[string]string{
		"notype":    `has no "type"`,
		"wrongtype": `unknown message type "user"`,
		"nosub":     `unknown subtype ""`,
		"badreq":    `"request" must be an object`,
		"unknown":   `unknown subtype "fly"`,
		"badfield":  "field kind must be string, got number",
		"badmode":   `reload mode "sometimes"`,
		"badevent":  "unknown event",
		"future":    "protocol version 99 is newer",
	}
	for id, want := range wantErr {
		if len(ids[id]) != 1 || ids[id][0].Response.Subtype != SubtypeError || !strings.Contains(ids[id][0].Response.Error, want) {
			t.Errorf("%s: want one error with %q, got %+v", id, want, ids[id])
		}
	}
	for _, id := range []string{"ok1", "ok2"} {
		if len(ids[id]) != 1 || ids[id][0].Response.Subtype != SubtypeSuccess {
			t.Errorf("%s: %+v", id, ids[id])
		}
	}
	var nullErrs []string
	for _, r := range ids["<null>"] {
		nullErrs = append(nullErrs, r.Response.Error)
	}
	joined := strings.Join(nullErrs, "\n")
	for _, want := range []string{"line 2 is not a JSON object", "line 4 is a JSON array, not an object", "request_id must be a string, got 7", "control_request needs a string request_id", "is longer than 4096 bytes"} {
		if !strings.Contains(joined, want) {
			t.Errorf("null-id errors %q lack %q", joined, want)
		}
	}
	if len(nullErrs) != 5 {
		t.Errorf("%d null-id errors, want 5: %q", len(nullErrs), nullErrs)
	}
	if len(ids["long"]) != 0 {
		t.Errorf("the over-long line was run: %+v", ids["long"])
	}
	if len(rs) != 5+len(wantErr)+2 {
		t.Errorf("%d responses in all", len(rs))
	}
}

func TestCancelRequest(t *testing.T) {
	w, srv := newRuntimeServer(t)
	w.Install("slow@corp", "1.0.0", gatedPlugin("slow"))
	t.Setenv("GATE", filepath.Join(t.TempDir(), "never"))
	w.Load(srv.Backend.(*Runtime).Runtime, agent.CacheOnly)
	c := startServer(t, srv)
	c.send(req("slow", "run_hook", `"event":"PreToolUse","input":{"tool_name":"Slow"}`))
	c.send(req("st", "status", ""))
	c.waitFor("st") // the slow request is in flight by now
	c.send(`{"type":"control_cancel_request","request_id":"slow"}`)
	r := c.waitFor("slow")
	if r.Response.Subtype != SubtypeError || !strings.Contains(r.Response.Error, `request "slow" canceled`) {
		t.Fatalf("%+v", r)
	}
	if n := len(byID(c.finish())["slow"]); n != 1 {
		t.Fatalf("%d responses to slow", n)
	}
}

func TestIDReusableAfterResponse(t *testing.T) {
	_, srv := newRuntimeServer(t)
	c := startServer(t, srv)
	for i := 0; i < 3; i++ {
		c.send(req("same", "initialize", ""))
		if r := c.waitFor("same"); r.Response.Subtype != SubtypeSuccess {
			t.Fatalf("round %d: %+v", i, r)
		}
	}
	c.finish()
}

// brokenWriter fails every write, as a closed stdout would.
type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestServeReportsWriteError(t *testing.T) {
	_, srv := newRuntimeServer(t)
	err := srv.Serve(context.Background(), strings.NewReader(req("a", "initialize", "")+"\n"), brokenWriter{})
	if err == nil || !strings.Contains(err.Error(), "closed pipe") {
		t.Fatalf("err = %v", err)
	}
}

// TestServeStopsOnCancel: a canceled context ends the session even while
// the input blocks, and the request in flight is answered (canceled).
func TestServeStopsOnCancel(t *testing.T) {
	w, srv := newRuntimeServer(t)
	w.Install("slow@corp", "1.0.0", gatedPlugin("slow"))
	t.Setenv("GATE", filepath.Join(t.TempDir(), "never"))
	w.Load(srv.Backend.(*Runtime).Runtime, agent.CacheOnly)
	inR, inW := io.Pipe()
	defer inW.Close()
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, inR, &out) }()
	io.WriteString(inW, req("slow", "run_hook", `"event":"PreToolUse","input":{"tool_name":"Slow"}`)+"\n"+req("st", "status", "")+"\n")
	for !strings.Contains(out.String(), `"request_id":"st"`) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if !strings.Contains(out.String(), `"request_id":"slow","error":"request \"slow\" canceled`) {
		t.Fatalf("in-flight request not answered: %s", out.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The MCP requests of a session without MCP servers, or with bad fields,
// get error responses that say what to do, and the session goes on.
func TestMCPRequestErrors(t *testing.T) {
	_, srv := newRuntimeServer(t)
	c := startServer(t, srv)
	for id, tc := range map[string]struct{ subtype, fields, want string }{
		"call":    {"mcp_call_tool", `"name":"mcp__plugin_a_b__c"`, "restart it without --no-mcp"},
		"restart": {"mcp_restart", `"server":"plugin:a:b"`, "restart it without --no-mcp"},
		"badtype": {"mcp_call_tool", `"name":5`, "field name must be string"},
	} {
		c.send(req(id, tc.subtype, tc.fields))
		if r := c.waitFor(id); r.Response.Subtype != SubtypeError || !strings.Contains(r.Response.Error, tc.want) {
			t.Errorf("%s: %+v, want an error saying %q", id, r.Response, tc.want)
		}
	}
	srv.Backend.(*Runtime).MCP = mcp.New(mcp.Options{})
	for id, tc := range map[string]struct{ subtype, fields, want string }{
		"noname":        {"mcp_call_tool", `"arguments":{}`, "name: the tool's namespaced name is required"},
		"array":         {"mcp_call_tool", `"name":"mcp__plugin_a_b__c","arguments":[1]`, "arguments: must be a JSON object"},
		"notool":        {"mcp_call_tool", `"name":"mcp__plugin_a_b__c","arguments":{"x":1}`, "no running MCP server exposes this tool"},
		"noserver":      {"mcp_restart", ``, "server: the server's namespaced name is required"},
		"unknownserver": {"mcp_restart", `"server":"plugin:a:b"`, "no MCP server of that name"},
	} {
		c.send(req(id, tc.subtype, tc.fields))
		if r := c.waitFor(id); r.Response.Subtype != SubtypeError || !strings.Contains(r.Response.Error, tc.want) {
			t.Errorf("%s: %+v, want an error saying %q", id, r.Response, tc.want)
		}
	}
}
