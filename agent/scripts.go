package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/wharfhq/wharf/plugin"
)

// TypeScriptChanged is the *plugin.Error type (layer trust) of a hook whose
// script changed after the session loaded it.
const TypeScriptChanged = "hook-script-changed"

// maxPinnedScript bounds the size of a script the loader pins; a larger
// file named by a hook command is not a script.
const maxPinnedScript = 8 << 20

// ScriptPin is the digest, taken when the set was loaded, of one file a hook
// command names (its script). A long-lived session re-checks it before each
// run: a script edited since the load does not run until the next reload.
type ScriptPin struct {
	Path   string `json:"path"`
	Digest string `json:"digest"` // sha256:<hex>
}

// ScriptChangedError: a hook's script is not the file the session loaded.
type ScriptChangedError struct {
	Path string
	// Want is the digest at load; Got the digest now, "" when the file is
	// gone or unreadable.
	Want, Got string
}

func (e *ScriptChangedError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("trust: hook script %s is gone or unreadable since the session loaded it (%s); it does not run", e.Path, e.Want)
	}
	return fmt.Sprintf("trust: hook script %s changed since the session loaded it (was %s, now %s); it does not run", e.Path, e.Want, e.Got)
}

// Check re-hashes the script and returns a *plugin.Error of layer trust
// (type TypeScriptChanged, wrapping *ScriptChangedError) when it differs
// from the pin.
func (p ScriptPin) Check() error {
	got, _ := digestFile(p.Path)
	if got == p.Digest {
		return nil
	}
	return &plugin.Error{Layer: plugin.LayerTrust, Type: TypeScriptChanged, Object: p.Path,
		Err:  &ScriptChangedError{Path: p.Path, Want: p.Digest, Got: got},
		Hint: "reload the session (the reload request of wharf agent serve) to run the script as it is now"}
}

// systemDirs hold interpreters and tools, not hook scripts: a system
// update must not refuse every hook.
var systemDirs = []string{"/bin/", "/sbin/", "/usr/", "/lib/", "/lib64/", "/etc/", "/nix/", "/System/", "/proc/", "/dev/"}

// PinScripts returns the pins of the files command names: every word of the
// command that, once $VAR, ${VAR} and a leading ~ are expanded from env
// (and HOME), names an existing regular file outside the system
// directories, relative words being taken from dir.
func PinScripts(command, dir string, env []string) []ScriptPin {
	vars := map[string]string{"HOME": os.Getenv("HOME")}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	var out []ScriptPin
	seen := map[string]bool{}
	for _, w := range words(command) {
		w = os.Expand(w, func(k string) string { return vars[k] })
		if strings.HasPrefix(w, "~/") {
			w = vars["HOME"] + w[1:]
		}
		if w == "" || strings.HasPrefix(w, "-") {
			continue
		}
		p := w
		if !filepath.IsAbs(p) {
			if dir == "" || !strings.Contains(p, "/") && !strings.Contains(p, ".") {
				continue
			}
			p = filepath.Join(dir, p)
		}
		p = filepath.Clean(p)
		if seen[p] || isSystem(p) {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxPinnedScript {
			continue
		}
		d, err := digestFile(p)
		if err != nil {
			continue
		}
		seen[p] = true
		out = append(out, ScriptPin{Path: p, Digest: d})
	}
	return out
}

func isSystem(p string) bool {
	for _, d := range systemDirs {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// interpreters run the script named by their first non-flag argument.
var interpreters = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "fish": true,
	"python": true, "python3": true, "node": true, "ruby": true, "perl": true, "php": true, "deno": true, "bun": true,
	"tsx": true, "ts-node": true, "pwsh": true, "lua": true, "Rscript": true, "osascript": true}

// token is a word of a shell command, or an operator.
type token struct {
	s  string
	op bool
}

// tokenize splits a shell command roughly: quotes group, operators (; | &
// ( ) < > backquotes and newlines) separate and are kept. It is enough to
// find the scripts a command runs; it never runs anything.
func tokenize(cmd string) []token {
	var out []token
	var b strings.Builder
	var quote rune
	inWord := false
	flush := func() {
		if inWord {
			out = append(out, token{s: b.String()})
			b.Reset()
			inWord = false
		}
	}
	for _, r := range cmd {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				b.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			flush()
		case strings.ContainsRune("\n;|&()<>`", r):
			flush()
			out = append(out, token{s: string(r), op: true})
		default:
			b.WriteRune(r)
			inWord = true
		}
	}
	flush()
	return out
}

// words returns the words of cmd that name what it executes: the command of
// each simple command (after any VAR=value assignments) and the script an
// interpreter (sh, bash, python3, node...) is given. Redirection targets
// and other arguments are not scripts: a hook that appends to a log it
// names must not refuse itself.
func words(cmd string) []string {
	var out []string
	atCommand, afterInterp, redirect := true, false, false
	for _, t := range tokenize(cmd) {
		if t.op {
			switch t.s {
			case "<", ">":
				redirect = true
			case "&":
				if !redirect { // 2>&1 keeps the redirection going
					atCommand, afterInterp = true, false
				}
			default:
				atCommand, afterInterp, redirect = true, false, false
			}
			continue
		}
		switch {
		case redirect:
			redirect = false
			if t.s == "1" || t.s == "2" || strings.HasPrefix(t.s, "-") {
				redirect = true // the fd of 2>&1, or >&- forms
			}
		case atCommand:
			if k, _, ok := strings.Cut(t.s, "="); ok && k != "" && !strings.ContainsAny(k, "/$") {
				continue // VAR=value before the command
			}
			out = append(out, t.s)
			atCommand = false
			afterInterp = interpreters[filepath.Base(t.s)] || t.s == "exec" || t.s == "env" || t.s == "command"
			if afterInterp && (t.s == "exec" || t.s == "env" || t.s == "command") {
				atCommand, afterInterp = true, false
			}
		case afterInterp:
			if strings.HasPrefix(t.s, "-") {
				continue
			}
			out = append(out, t.s)
			afterInterp = false
		}
	}
	return out
}

func digestFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxPinnedScript+1)); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
