package protocol

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/core/settings"
)

// In a long-lived session, a project hook runs only after trust_folder and
// a reload; an edited script is refused until the next reload.
func TestServeTrustFolderAndEditedScript(t *testing.T) {
	w, srv := newRuntimeServer(t)
	script := filepath.Join(w.Project, ".wharf", "guard.sh")
	marker := filepath.Join(w.Project, "ran")
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch \"$CLAUDE_PROJECT_DIR/ran\"\necho project says no >&2\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.WriteSettings(settings.ScopeProject, map[string]any{"hooks": map[string]any{
		"PreToolUse": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": script}}}}}})
	c := startServer(t, srv)
	c.send(req("load", "reload", ""))
	c.waitFor("load")

	c.send(req("st", "status", ""))
	if r := c.waitFor("st"); !strings.Contains(string(r.Response.Response), `"why":"not trusted"`) || !strings.Contains(string(r.Response.Response), "is not trusted") {
		t.Fatalf("status: %s", r.Response.Response)
	}
	c.send(req("h1", "run_hook", `"event":"PreToolUse","input":{"tool_name":"Bash"}`))
	if r := c.waitFor("h1"); strings.Contains(string(r.Response.Response), `"block"`) {
		t.Fatalf("untrusted project hook ran: %s", r.Response.Response)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("untrusted project hook ran")
	}

	c.send(req("tr", "trust_folder", ""))
	r := c.waitFor("tr")
	var tr TrustFolderResponse
	if err := json.Unmarshal(r.Response.Response, &tr); err != nil || !tr.Trusted || !tr.Reload {
		t.Fatalf("trust_folder: %s %v", r.Response.Response, err)
	}
	c.send(req("load2", "reload", ""))
	c.waitFor("load2")
	c.send(req("h2", "run_hook", `"event":"PreToolUse","input":{"tool_name":"Bash"}`))
	if r := c.waitFor("h2"); !strings.Contains(string(r.Response.Response), "project says no") {
		t.Fatalf("trusted project hook: %s", r.Response.Response)
	}
	os.Remove(marker)

	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch \"$CLAUDE_PROJECT_DIR/ran\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c.send(req("h3", "run_hook", `"event":"PreToolUse","input":{"tool_name":"Bash"}`))
	if r := c.waitFor("h3"); !strings.Contains(string(r.Response.Response), "changed since the session loaded it") {
		t.Fatalf("edited script: %s", r.Response.Response)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("an edited script ran before the reload")
	}
	c.send(req("load3", "reload", ""))
	c.waitFor("load3")
	c.send(req("h4", "run_hook", `"event":"PreToolUse","input":{"tool_name":"Bash"}`))
	c.waitFor("h4")
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the edited script did not run after the reload")
	}
}
