package shell

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/wharfhq/wharf/internal/core/trust"
	"github.com/wharfhq/wharf/plugin"
)

func TestExitCodeByLayer(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("plain"), 1},
		{&plugin.Error{Layer: plugin.LayerMaterialization, Err: errors.New("clone")}, 1},
		{&plugin.Error{Layer: plugin.LayerIntent, Type: TypeUsage, Err: errors.New("bad flag")}, 2},
		{&plugin.Error{Layer: plugin.LayerPolicy, Err: errors.New("denied")}, 3},
		{&plugin.Error{Layer: plugin.LayerTrust, Err: errors.New("digest")}, 4},
		{&plugin.Error{Layer: plugin.LayerDependency, Err: errors.New("missing")}, 5},
		{fmt.Errorf("install x: %w", &plugin.Error{Layer: plugin.LayerPolicy, Err: errors.New("denied")}), 3},
		{Interrupted(), 130},
		{fmt.Errorf("fetch: %w", Interrupted()), 130},
	} {
		if got := ExitCode(tt.err); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestPrintErrorForms(t *testing.T) {
	err := &plugin.Error{Layer: plugin.LayerPolicy, Type: "policy-denied", Object: "x@m",
		Err: errors.New("denied by policy: blocked"), Hint: "ask an admin"}

	var human bytes.Buffer
	PrintError(&human, "wharf-server", false, err)
	got := human.String()
	if !strings.HasPrefix(got, "wharf-server: x@m: denied by policy: blocked\n") ||
		!strings.HasSuffix(got, "Try: ask an admin\n") {
		t.Errorf("human form:\n%s", got)
	}

	var js bytes.Buffer
	PrintError(&js, "wharf", true, err)
	var je JSONError
	if e := json.Unmarshal(js.Bytes(), &je); e != nil {
		t.Fatalf("not JSON: %q", js.String())
	}
	if je.Error.Type != "policy-denied" || je.Error.Hint != "ask an admin" || !strings.Contains(je.Error.Message, "blocked") {
		t.Errorf("JSON form: %+v", je)
	}

	// An error already shown on stdout is not printed again for a person,
	// but still gives its JSON object.
	var quiet bytes.Buffer
	PrintError(&quiet, "wharf", false, Shown(err))
	if quiet.Len() != 0 {
		t.Errorf("shown error printed again: %q", quiet.String())
	}
	js.Reset()
	PrintError(&js, "wharf", true, Shown(err))
	if !strings.Contains(js.String(), `"policy-denied"`) {
		t.Errorf("shown error under --json: %q", js.String())
	}
}

// An error before a command ran is a usage error of the command that met
// it, printed as JSON when the command line asked for --json.
func TestExitBeforeACommandRan(t *testing.T) {
	var errb bytes.Buffer
	code := Exit(Ending{Prog: "wharf-server", Args: []string{"--json", "--bogus"}, Stderr: &errb}, errors.New("unknown flag: --bogus"))
	if code != ExitUsage {
		t.Errorf("exit %d, want %d", code, ExitUsage)
	}
	var je JSONError
	if err := json.Unmarshal(errb.Bytes(), &je); err != nil {
		t.Fatalf("not JSON: %q", errb.String())
	}
	if je.Error.Type != TypeUsage || je.Error.Hint != "see: wharf-server --help" {
		t.Errorf("got %+v", je)
	}

	// The same error once the command runs is a plain failure.
	errb.Reset()
	if code := Exit(Ending{Prog: "wharf", Stderr: &errb, Running: true}, errors.New("disk full")); code != ExitFailure {
		t.Errorf("exit %d, want 1", code)
	}
	if errb.String() != "wharf: disk full\n" {
		t.Errorf("stderr %q", errb.String())
	}
	if Exit(Ending{Prog: "wharf", Stderr: &errb}, nil) != ExitOK {
		t.Error("nil error is not exit 0")
	}
}

func TestHasJSONFlag(t *testing.T) {
	for args, want := range map[string]bool{
		"--json":            true,
		"list --json=true":  true,
		"list":              false,
		"run -- --json":     false,
		"list --json=false": false,
	} {
		if got := HasJSONFlag(strings.Fields(args)); got != want {
			t.Errorf("HasJSONFlag(%q) = %v", args, got)
		}
	}
}

func TestArgsCheckersAreUsageErrors(t *testing.T) {
	cmd := &cobra.Command{Use: "show"}
	err := ExactArgs(1, "one plugin")(cmd, nil)
	if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "show takes one plugin (got 0 argument(s))") {
		t.Errorf("ExactArgs: %v", err)
	}
	if err := ExactArgs(1, "one plugin")(cmd, []string{"x"}); err != nil {
		t.Errorf("ExactArgs with one: %v", err)
	}
	err = MaxArgs(1, "one plugin")(cmd, []string{"a", "b"})
	if ExitCode(err) != ExitUsage || plugin.HintOf(err) != "see: show --help" {
		t.Errorf("MaxArgs: %v", err)
	}
	if UsageError("wharf", context.Canceled) == nil || ExitCode(UsageError("wharf", context.Canceled)) != ExitUsage {
		t.Error("UsageError does not make a usage error")
	}
	policyErr := &plugin.Error{Layer: plugin.LayerPolicy, Err: errors.New("denied")}
	if ExitCode(UsageError("wharf", policyErr)) != ExitPolicy {
		t.Error("UsageError reclassified an error that had a class")
	}
}

func TestTrustedKeys(t *testing.T) {
	dir := t.TempDir()
	kr, err := TrustedKeys(filepath.Join(dir, "absent"))
	if err != nil || len(kr) != 0 {
		t.Fatalf("no keys directory: %v, %d keys", err, len(kr))
	}
	_, pub, err := trust.GenerateKey(trust.AlgEd25519)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ci.pub"), pub, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a key"), 0o644); err != nil {
		t.Fatal(err)
	}
	kr, err = TrustedKeys(dir)
	if err != nil || len(kr) != 1 {
		t.Fatalf("one key: %v, %d keys", err, len(kr))
	}
	bad := filepath.Join(dir, "broken.pub")
	if err := os.WriteFile(bad, []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = TrustedKeys(dir)
	if ExitCode(err) != ExitTrust || !strings.Contains(err.Error(), bad) || plugin.HintOf(err) != "remove or replace the key file" {
		t.Errorf("broken key file: %v (exit %d)", err, ExitCode(err))
	}
}

func TestPlainMessage(t *testing.T) {
	for in, want := range map[string]string{
		"intent: x@y: bad": "x@y: bad",
		"materialization: materialization: clone failed":           "clone failed",
		"f.json: f.json:2: not valid JSON":                         "f.json:2: not valid JSON",
		"git clone of u: not found: <html><body>404</body></html>": "git clone of u: not found (the server answered with an HTML page, not shown)",
	} {
		if got := PlainMessage(in); got != want {
			t.Errorf("PlainMessage(%q) = %q, want %q", in, got, want)
		}
	}
}
