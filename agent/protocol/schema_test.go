package protocol

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/wharfhq/wharf/agent"
)

var update = flag.Bool("update", false, "rewrite docs/protocol.schema.json from the Go types")

var schemaFile = filepath.Join("..", "..", "docs", "protocol.schema.json")

// TestSchemaUpToDate keeps docs/protocol.schema.json equal to what the Go
// types generate; run `go generate ./agent/protocol` after changing them.
func TestSchemaUpToDate(t *testing.T) {
	got, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatalf("%v; generate it with: go generate ./agent/protocol", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale; regenerate it with: go generate ./agent/protocol", schemaFile)
	}
}

// TestDocsNameEverySubtype keeps docs/protocol.md in step with the table.
func TestDocsNameEverySubtype(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Subtypes() {
		if !strings.Contains(string(b), "### "+s) {
			t.Errorf("docs/protocol.md has no section \"### %s\"", s)
		}
	}
}

func resolvedSchema(t *testing.T, def string) *jsonschema.Resolved {
	t.Helper()
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	// Validate against one definition: the root with its oneOf replaced.
	delete(root, "oneOf")
	root["$ref"] = "#/$defs/" + def
	b, _ = json.Marshal(root)
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestRealMessagesMatchSchema sends one request of every subtype (and bad
// ones) to a server over a real runtime and validates each request and
// each response line against the generated schema.
func TestRealMessagesMatchSchema(t *testing.T) {
	w, srv := newRuntimeServer(t)
	w.Install("guard@corp", "1.0.0", guardPlugin("guard"))
	w.Load(srv.Backend.(*Runtime).Runtime, agent.CacheOnly)
	reqs := []string{
		req("i", "initialize", `"protocolVersion":1,"client":{"name":"test","version":"0"}`),
		req("l", "list_components", ""),
		req("s", "status", ""),
		req("r", "reload", `"mode":"full"`),
		req("h", "run_hook", `"event":"PreToolUse","input":{"tool_name":"Bash"}`),
		req("p", "policy_check", `"action":"install","plugin":"guard@corp","marketplace":{"name":"corp","source":{"source":"directory","path":"/m"}}`),
		req("m", "mcp_list_tools", ""),
		`{"type":"control_cancel_request","request_id":"x"}`,
	}
	client := resolvedSchema(t, "ClientMessage")
	for _, r := range reqs {
		var v any
		json.Unmarshal([]byte(r), &v)
		if err := client.Validate(v); err != nil {
			t.Errorf("request %s does not match the schema: %v", r, err)
		}
	}
	for _, bad := range []string{`{"type":"control_request","request_id":"q","request":{"subtype":"fly"}}`, `{"type":"control_request","request":{"subtype":"status"}}`} {
		var v any
		json.Unmarshal([]byte(bad), &v)
		if client.Validate(v) == nil {
			t.Errorf("schema accepts %s", bad)
		}
	}
	input := strings.Join(append(reqs, "garbage", req("u", "fly", "")), "\n") + "\n"
	var out strings.Builder
	if err := srv.Serve(t.Context(), strings.NewReader(input), &out); err != nil {
		t.Fatal(err)
	}
	server := resolvedSchema(t, "ServerMessage")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 9 {
		t.Fatalf("%d responses: %s", len(lines), out.String())
	}
	for _, line := range lines {
		var v any
		json.Unmarshal([]byte(line), &v)
		if err := server.Validate(v); err != nil {
			t.Errorf("response %s does not match the schema: %v", line, err)
		}
		if strings.Contains(line, `"subtype":"error"`) && !strings.Contains(line, `"request_id":null`) && !strings.Contains(line, `"request_id":"u"`) {
			t.Errorf("unexpected error: %s", line)
		}
	}
}
