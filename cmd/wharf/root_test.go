package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/core/layout"
	"github.com/wharfhq/wharf/plugin"
)

func TestExitCodeByLayer(t *testing.T) {
	layered := func(l plugin.Layer) error {
		return fmt.Errorf("wrapped: %w", &plugin.Error{Layer: l, Type: "x", Err: errors.New("cause")})
	}
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"ok", nil, 0},
		{"plain error", errors.New("disk full"), 1},
		{"materialization", layered(plugin.LayerMaterialization), 1},
		{"active", layered(plugin.LayerActive), 1},
		{"usage", layered(plugin.LayerIntent), 2},
		{"policy", layered(plugin.LayerPolicy), 3},
		{"trust", layered(plugin.LayerTrust), 4},
		{"dependency", layered(plugin.LayerDependency), 5},
		{"first layer in a join wins", errors.Join(errors.New("x"), layered(plugin.LayerTrust)), 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := exitCode(tt.err); got != tt.want {
				t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

func TestPrintErrorForms(t *testing.T) {
	err := &plugin.Error{Layer: plugin.LayerPolicy, Type: plugin.TypePolicyDenied, Object: "x@y",
		Err: errors.New("blocked by managed policy"), Hint: "ask your admin"}
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb}
	a.printError(err)
	if got := errb.String(); got != "wharf: x@y: blocked by managed policy\nTry: ask your admin\n" {
		t.Errorf("human error = %q", got)
	}
	errb.Reset()
	a.cfg.JSON = true
	a.printError(err)
	want := `{"error":{"type":"policy-denied","message":"x@y: blocked by managed policy","hint":"ask your admin","layer":"policy"}}` + "\n"
	if errb.String() != want {
		t.Errorf("JSON error = %q\nwant %q", errb.String(), want)
	}
	if out.Len() != 0 {
		t.Errorf("errors went to stdout: %q", out.String())
	}
}

func TestEnvPaths(t *testing.T) {
	e := layout.New("/h")
	got := strings.Join([]string{e.Home(), e.StateDB(), e.Marketplaces(), e.Cache(), e.Settings()}, " ")
	want := strings.Join([]string{"/h", filepath.Join("/h", "state.db"), filepath.Join("/h", "marketplaces"),
		filepath.Join("/h", "cache"), filepath.Join("/h", "settings.json")}, " ")
	if got != want {
		t.Errorf("paths = %s, want %s", got, want)
	}
}

// TestMarketplaceAddFlags checks argument parsing apart from the run.
func TestMarketplaceAddFlags(t *testing.T) {
	var got *MarketplaceAddOptions
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	cmd := newMarketplaceAddCmd(a, func(o *MarketplaceAddOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"corp/plugins@v2", "--name", "corp"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Name != "corp" || !got.Source.Equal(plugin.MarketplaceSource{Kind: plugin.MktGitHub, Repo: "corp/plugins", Ref: "v2"}) {
		t.Fatalf("options = %+v", got)
	}
	cmd = newMarketplaceAddCmd(a, func(o *MarketplaceAddOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"./local"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(got.Source.Path) || got.Source.Kind != plugin.MktDirectory {
		t.Errorf("local path not made absolute: %+v", got.Source)
	}
}

func TestConfigPrecedence(t *testing.T) {
	home := t.TempDir()
	writeConfig := func(body string) {
		t.Helper()
		if err := writeFileForTest(filepath.Join(home, "config.yaml"), body); err != nil {
			t.Fatal(err)
		}
	}
	load := func(args ...string) (*app, error) {
		a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
		root := newRootCmd(a)
		var loadErr error
		root.SetArgs(append([]string{"--home", home, "marketplace", "list"}, args...))
		root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { loadErr = a.load(cmd); return errStop }
		_ = root.Execute()
		return a, loadErr
	}
	writeConfig("git-timeout: 45s\nlock-timeout: 2s\n")
	a, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if a.cfg.GitTimeout.String() != "45s" || a.cfg.LockTimeout.String() != "2s" || a.cfg.Home != home {
		t.Errorf("config file not applied: %+v", a.cfg)
	}
	t.Setenv("WHARF_GIT_TIMEOUT", "7s")
	a, _ = load()
	if a.cfg.GitTimeout.String() != "7s" {
		t.Errorf("env did not beat config file: %v", a.cfg.GitTimeout)
	}
	t.Setenv("WHARF_JSON", "true")
	a, _ = load()
	if !a.cfg.JSON {
		t.Error("WHARF_JSON ignored")
	}
	t.Setenv("WHARF_JSON", "")
	os.Unsetenv("WHARF_GIT_TIMEOUT")
	writeConfig("git-timeout: 0s\n")
	if _, err := load(); err == nil || !strings.Contains(err.Error(), "git-timeout") || exitCode(err) != 2 {
		t.Errorf("zero timeout accepted: %v", err)
	}
}

var errStop = errors.New("stop after load")

func writeFileForTest(p, body string) error { return os.WriteFile(p, []byte(body), 0o644) }

func TestProgressOnlyOnATerminal(t *testing.T) {
	a := &app{stderr: &bytes.Buffer{}}
	if a.progress() != nil {
		t.Error("progress to a buffer")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	a = &app{stderr: w}
	if a.progress() != nil {
		t.Error("progress to a pipe (not a terminal)")
	}
	a.cfg.JSON = true
	if a.progress() != nil {
		t.Error("progress under --json")
	}
}

func TestClosestNames(t *testing.T) {
	cands := []string{"app-deploy", "ci-runner", "core-utils", "lint-kit"}
	for _, tt := range []struct {
		in   string
		want string
	}{
		{"app-deplo", "app-deploy"},
		{"lintkit", "lint-kit"},
		{"CI-RUNER", "ci-runner"},
		{"deploy", "app-deploy"}, // contained
		{"zzzz", ""},
		{"a", ""},
		{"ocre-utils", "core-utils"}, // a swap is one edit
	} {
		got := closest(tt.in, cands)
		if tt.want == "" && len(got) != 0 || tt.want != "" && (len(got) == 0 || got[0] != tt.want) {
			t.Errorf("closest(%q) = %v, want first %q", tt.in, got, tt.want)
		}
	}
	if d := editDistance("kitten", "sitting"); d != 3 {
		t.Errorf("editDistance = %d, want 3", d)
	}
}

func TestProgressOnlyOnATerminalForHumans(t *testing.T) {
	term := &bytes.Buffer{}
	proc := process{isTerminal: func(w io.Writer) bool { return w == io.Writer(term) }}

	a := &app{stderr: term, proc: proc}
	if a.progress() == nil {
		t.Fatal("no progress on a terminal")
	}
	a.quiet = true
	if a.progress() != nil {
		t.Error("progress despite --quiet")
	}
	a.quiet, a.cfg.JSON = false, true
	if a.progress() != nil {
		t.Error("progress under --json")
	}
	a = &app{stderr: &bytes.Buffer{}, proc: proc}
	if a.progress() != nil {
		t.Error("progress when stderr is not a terminal")
	}
}

func TestPlainMessage(t *testing.T) {
	for in, want := range map[string]string{
		"intent: x@y: bad": "x@y: bad",
		"materialization: materialization: clone failed":                                     "clone failed",
		"trust: trust: digest mismatch":                                                      "digest mismatch",
		"f.json: f.json:2: not valid JSON":                                                   "f.json:2: not valid JSON",
		"denied by policy: reason":                                                           "denied by policy: reason",
		"git clone of u: repository not found: <!DOCTYPE html><html><body>404</body></html>": "git clone of u: repository not found (the server answered with an HTML page, not shown)",
	} {
		if got := plainMessage(in); got != want {
			t.Errorf("plainMessage(%q) = %q, want %q", in, got, want)
		}
	}
}

// The sign-in page of an MCP server goes to stderr, naming the server, so
// stdout (JSON, the stdio protocol) stays clean.
func TestMCPSignInPrintsThePageOnStderr(t *testing.T) {
	var out, errb strings.Builder
	if err := mcpSignIn(&errb)(context.Background(), "plugin:slack:slack", "https://auth.example/authorize?client_id=1"); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 || !strings.Contains(errb.String(), "plugin:slack:slack needs you to sign in") ||
		!strings.Contains(errb.String(), "https://auth.example/authorize?client_id=1") {
		t.Fatalf("stdout %q, stderr %q", out.String(), errb.String())
	}
}
