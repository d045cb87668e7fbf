package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestForceRevokedOff(t *testing.T) {
	x := Export{Settings: map[string]any{"enabledPlugins": map[string]bool{"a@m": true, "keep@m": true}}}
	ForceRevokedOff(&x, Revocations{
		{ID: "r-1", Plugin: "a@m", Version: "1.0.0", Reason: "bad"},
		{ID: "r-2", Plugin: "b@m", Version: "2.0.0", Reason: "worse"},
		{ID: "r-3", Digest: "w1:xyz", Reason: "tampered"},
	}, "Claude Code")
	got := x.Settings["enabledPlugins"].(map[string]bool)
	if got["a@m"] || got["b@m"] || !got["keep@m"] || len(got) != 3 {
		t.Fatalf("enabledPlugins = %v", got)
	}
	w := strings.Join(x.Warnings, "\n")
	if !strings.Contains(w, "a@m 1.0.0 is revoked by revocation r-1 (a@m 1.0.0): bad; Claude Code cannot disable one version") || !strings.Contains(w, "r-3") {
		t.Fatalf("warnings %q", w)
	}
	// No revocations: the export is left as computed.
	y := Export{Settings: map[string]any{}}
	ForceRevokedOff(&y, nil, "Claude Code")
	if len(y.Settings) != 0 || len(y.Warnings) != 0 {
		t.Fatalf("export changed without revocations: %+v", y)
	}
}

// TestExportAgent: each agent's export is its exporter's document at the
// file the agent reads; Copilot CLI's turns a revoked plugin off, the
// others say they cannot; an unknown format is an UnknownAgentError.
func TestExportAgent(t *testing.T) {
	layer := []Layer{{Name: "org", Settings: []byte(`{
		"strictKnownMarketplaces": [{"source": "git", "url": "https://wharf.example.com/git/approved.git"}],
		"enabledPlugins": {"keep@approved": true}}`)}}
	plain, err := NewEngine(layer)
	if err != nil {
		t.Fatal(err)
	}
	revoked, err := NewEngine(layer, WithRevocations(Revocations{{ID: "r-0123456789abcdef", Plugin: "tool@approved", Version: "1.0.0", Reason: "leaks tokens"}}))
	if err != nil {
		t.Fatal(err)
	}
	for format, file := range AgentManagedFiles {
		t.Run(format, func(t *testing.T) {
			x, err := plain.ExportAgent(format)
			if err != nil {
				t.Fatal(err)
			}
			if x.Format != format || x.File != file || x.Warnings == nil {
				t.Fatalf("%+v", x)
			}
			var want []byte
			switch format {
			case "copilot":
				want, err = plain.ExportCopilot().JSON()
			case "codex":
				want, err = plain.ExportCodex().TOML()
			case "gemini":
				want, err = plain.ExportGemini().JSON()
			case "opencode":
				want, err = plain.ExportOpenCode().JSON()
			}
			if err != nil || x.Document != string(want) {
				t.Fatalf("document (%v):\n%s\nwant\n%s", err, x.Document, want)
			}
			if strings.Contains(strings.Join(x.Warnings, "\n"), "revo") {
				t.Fatalf("a revocation warning without revocations: %q", x.Warnings)
			}

			r, err := revoked.ExportAgent(format)
			if err != nil {
				t.Fatal(err)
			}
			w := strings.Join(r.Warnings, "\n")
			if format == "copilot" {
				var doc struct {
					EnabledPlugins map[string]bool `json:"enabledPlugins"`
				}
				if err := json.Unmarshal([]byte(r.Document), &doc); err != nil {
					t.Fatal(err)
				}
				if on, ok := doc.EnabledPlugins["tool@approved"]; !ok || on || !doc.EnabledPlugins["keep@approved"] {
					t.Fatalf("enabledPlugins %v", doc.EnabledPlugins)
				}
				if !strings.Contains(w, "tool@approved 1.0.0 is revoked by revocation r-0123456789abcdef (tool@approved 1.0.0): leaks tokens; Copilot CLI cannot disable one version, so the plugin is forced off") {
					t.Fatalf("warnings %q", w)
				}
				return
			}
			if r.Document != x.Document || !strings.Contains(w, "revocations are not exported: ") {
				t.Fatalf("with a revocation: %+v", r)
			}
		})
	}
	_, err = plain.ExportAgent("claude")
	var ue *UnknownAgentError
	if !errors.As(err, &ue) || ue.Format != "claude" || !strings.Contains(err.Error(), "[codex copilot gemini opencode]") {
		t.Fatalf("unknown format: %v", err)
	}
}
