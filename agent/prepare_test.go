package agent

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/plugin"
)

// PrepareCommand runs the verified copy of each script the command names,
// wherever and however it is written, and refuses a script changed since
// it was pinned.
func TestPrepareCommandRunsVerifiedCopies(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	root := filepath.Join(t.TempDir(), "it's a dir")
	script := filepath.Join(root, "run.sh")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"verified $1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"R=" + root}
	for _, command := range []string{
		`sh "$R/run.sh" one`,
		`"${R}"/run.sh one`,
		`X=1 "$R"/run.sh one 2>&1 | cat`,
		`sh "$R/run.sh" one; "$R"/run.sh one`,
	} {
		pins := PinScripts(command, "", env)
		if len(pins) != 1 || pins[0].Path != script {
			t.Fatalf("%s: pins %+v", command, pins)
		}
		pc, err := PrepareCommand(command, pins)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(pc.Command, "$R") {
			t.Fatalf("%s: a word naming the script is left: %s", command, pc.Command)
		}
		// The original changes after the check: the copy runs as checked.
		if err := os.WriteFile(script, []byte("#!/bin/sh\necho modified\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", "-c", pc.Command)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Count(string(out), "verified one") != strings.Count(command, "run.sh") || strings.Contains(string(out), "modified") {
			t.Fatalf("%s: ran %q (%v) as %s", command, out, err, pc.Command)
		}
		copies, _ := filepath.Glob(filepath.Join(tmp, "wharf-hook-*"))
		if len(copies) != 1 {
			t.Fatalf("copies %q", copies)
		}
		if fi, err := os.Stat(copies[0]); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("private directory: %v %v", fi.Mode(), err)
		}
		if err := pc.Close(); err != nil {
			t.Fatal(err)
		}
		if left, _ := filepath.Glob(filepath.Join(tmp, "wharf-hook-*")); len(left) != 0 {
			t.Fatalf("left behind: %q", left)
		}
		// Now the pin no longer matches: refused, nothing copied.
		_, err = PrepareCommand(command, pins)
		var pe *plugin.Error
		var sc *ScriptChangedError
		if !errors.As(err, &pe) || pe.Type != TypeScriptChanged || !errors.As(err, &sc) || sc.Path != script {
			t.Fatalf("changed script: %v", err)
		}
		// The message names the script and what happened, not the layer.
		if msg := err.Error(); !strings.HasPrefix(msg, "hook script "+script+" changed since") {
			t.Fatalf("changed script reads %q", msg)
		}
		if left, _ := filepath.Glob(filepath.Join(tmp, "wharf-hook-*")); len(left) != 0 {
			t.Fatalf("left behind after a refusal: %q", left)
		}
		if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"verified $1\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A command without pins runs as written.
	if pc, err := PrepareCommand("echo hi", nil); err != nil || pc.Command != "echo hi" || pc.Close() != nil {
		t.Fatalf("no pins: %+v %v", pc, err)
	}
	// Spans that do not fit the command are refused, not sliced.
	pins := PinScripts(`sh "$R/run.sh"`, "", env)
	if _, err := PrepareCommand(`sh`, pins); err == nil {
		t.Fatal("spans out of range accepted")
	}
}

func TestTokenizeRanges(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want []string // each word's text as written
	}{
		{`sh "a b"/c.sh x`, []string{"sh", `"a b"/c.sh`, "x"}},
		{`sh my\ dir/c.sh`, []string{"sh", `my\ dir/c.sh`}},
		{`a;'b c' "d\"e"`, []string{"a", ";", `'b c'`, `"d\"e"`}},
		{"é \xff", []string{"é", "\xff"}},
	} {
		var got []string
		for _, tk := range tokenize(c.cmd) {
			got = append(got, c.cmd[tk.start:tk.end])
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("tokenize(%q) ranges = %q, want %q", c.cmd, got, c.want)
		}
	}
	if w := words(`sh my\ dir/c.sh`); !reflect.DeepEqual(w, []string{"sh", "my dir/c.sh"}) {
		t.Errorf("words = %q", w)
	}
}
