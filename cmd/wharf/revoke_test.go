package main

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/client/home"
	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/internal/server/api"
)

// A long-lived engine (an agent session) takes the revocations of the
// bundle its reload pulls.
func TestPolicyReloadTakesTheBundlesRevocations(t *testing.T) {
	srv := newPolicyAPI(t)
	t.Setenv("WHARF_MANAGED_DIR", t.TempDir())
	cfg := home.Default()
	cfg.Policy = home.PolicyConfig{URL: srv.hs.URL, Token: srv.agent, ExtraManagedDir: os.Getenv("WHARF_MANAGED_DIR")}
	h, err := home.Open(home.Options{Paths: layout.New(t.TempDir()), Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	e, err := h.OpenPolicy(h.PolicySources())
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Revocations()) != 0 {
		t.Fatalf("revocations before any: %v", e.Revocations())
	}
	var rv api.RevocationWriteResult
	srv.call("POST", "/v1/revocations", "", map[string]string{"plugin": "tool@corp", "version": "1.0.0", "reason": "bad"}, http.StatusCreated, &rv)
	if _, err := e.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := e.Revocations()
	if len(got) != 1 || got[0].ID != rv.Revocation.ID || got[0].Reason != "bad" {
		t.Fatalf("revocations after the reload: %+v", got)
	}
}

// The agent formats that cannot turn a plugin off say so when the policy
// revokes one; Copilot's export turns it off instead.
func TestAgentExportsSayRevocationsAreNotExported(t *testing.T) {
	srv := newPolicyAPI(t)
	srv.call("POST", "/v1/revocations", "", map[string]string{"plugin": "tool@corp", "version": "1.0.0", "reason": "bad"}, http.StatusCreated, nil)
	c := newPolicyClient(t, srv.agent)
	for _, format := range []string{"codex", "gemini", "opencode"} {
		code, out, stderr := c.run("--policy-url", srv.hs.URL, "policy", "export", "--format", format)
		if code != 0 || !strings.Contains(stderr, "export: revocations are not exported: ") {
			t.Errorf("%s: exit %d\n%s%s", format, code, out, stderr)
		}
	}
	code, out, stderr := c.run("--policy-url", srv.hs.URL, "policy", "export", "--format", "copilot")
	if code != 0 || strings.Contains(stderr, "revocations are not exported") || !strings.Contains(stderr, "tool@corp 1.0.0 is revoked") {
		t.Errorf("copilot: exit %d\n%s%s", code, out, stderr)
	}
}
