package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

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
	// Spans are the byte ranges [start, end) of the command's words that
	// name the script (as written, quotes included): PrepareCommand
	// replaces them with the verified copy.
	Spans [][2]int `json:"-"`
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
		return fmt.Sprintf("hook script %s is gone or unreadable since the session loaded it (%s); it does not run", e.Path, e.Want)
	}
	return fmt.Sprintf("hook script %s changed since the session loaded it (was %s, now %s); it does not run", e.Path, e.Want, e.Got)
}

// Check re-hashes the script and returns a *plugin.Error of layer trust
// (type TypeScriptChanged, wrapping *ScriptChangedError) when it differs
// from the pin. It says whether the file at the path is the pinned one
// now; to run the script, PrepareCommand checks and copies it at once.
func (p ScriptPin) Check() error {
	got, _ := digestFile(p.Path)
	return p.verdict(got)
}

func (p ScriptPin) verdict(got string) error {
	if got == p.Digest {
		return nil
	}
	return &plugin.Error{Layer: plugin.LayerTrust, Type: TypeScriptChanged, Object: p.Path,
		Err:  &ScriptChangedError{Path: p.Path, Want: p.Digest, Got: got},
		Hint: "reload the session (the reload request of wharf agent serve) to run the script as it is now"}
}

// PreparedCommand is a hook command whose pinned scripts were checked and
// copied, as checked, into a private directory.
type PreparedCommand struct {
	// Command is the command to run: the original, with every word naming
	// a pinned script replaced by the path of its verified copy.
	Command string
	dir     string
}

// Close removes the copies. It is safe to call on a nil or empty value.
func (c *PreparedCommand) Close() error {
	if c == nil || c.dir == "" {
		return nil
	}
	return os.RemoveAll(c.dir)
}

// PrepareCommand checks the scripts a hook command names against their
// pins and returns the command that runs what was checked. Checking a path
// and then letting the shell open the same path is a race: a script renamed
// over the pinned one in between would run unverified. So each script is
// read once, through one open descriptor, into memory (bounded); those
// bytes are hashed and compared with the pin and, when they match, written
// to a private copy (a directory of mode 0700 made for this run, the file
// owner-only, executable when the original is), and the command's words
// naming the script are replaced by the copy's path, single-quoted. A
// script changed since the load is refused as Check refuses it. The caller
// closes the result once the command has exited.
//
// The copy keeps the script's file name but not its directory: a script
// run this way finds its plugin's other files through ${CLAUDE_PLUGIN_ROOT}
// or ${CLAUDE_PROJECT_DIR}, not through its own path ($0).
func PrepareCommand(command string, pins []ScriptPin) (*PreparedCommand, error) {
	if len(pins) == 0 {
		return &PreparedCommand{Command: command}, nil
	}
	type edit struct {
		span [2]int
		path string
	}
	var edits []edit
	pc := &PreparedCommand{}
	for i, p := range pins {
		data, mode, err := readPinned(p.Path)
		got := ""
		if err == nil {
			got = digestBytes(data)
		}
		if err := p.verdict(got); err != nil {
			pc.Close()
			return nil, err
		}
		if pc.dir == "" {
			if pc.dir, err = os.MkdirTemp("", "wharf-hook-"); err != nil {
				return nil, fmt.Errorf("hook script %s: making its private copy: %w", p.Path, err)
			}
		}
		copyPath := filepath.Join(pc.dir, fmt.Sprint(i), filepath.Base(p.Path))
		if err := writePrivate(copyPath, data, mode); err != nil {
			pc.Close()
			return nil, fmt.Errorf("hook script %s: making its private copy: %w", p.Path, err)
		}
		for _, sp := range p.Spans {
			if sp[0] < 0 || sp[1] > len(command) || sp[0] >= sp[1] {
				pc.Close()
				return nil, fmt.Errorf("hook script %s: its position in the command %q is out of range", p.Path, command)
			}
			edits = append(edits, edit{sp, copyPath})
		}
	}
	slices.SortFunc(edits, func(a, b edit) int { return a.span[0] - b.span[0] })
	var b strings.Builder
	at := 0
	for _, e := range edits {
		if e.span[0] < at {
			pc.Close()
			return nil, fmt.Errorf("hook command %q: overlapping script words", command)
		}
		b.WriteString(command[at:e.span[0]])
		b.WriteString(shellQuote(e.path))
		at = e.span[1]
	}
	b.WriteString(command[at:])
	pc.Command = b.String()
	return pc, nil
}

// readPinned reads a script through one descriptor: its bytes (at most
// maxPinnedScript) and whether it is executable by its owner.
func readPinned(p string) ([]byte, os.FileMode, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file", p)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxPinnedScript+1))
	if err != nil {
		return nil, 0, err
	}
	mode := os.FileMode(0o600)
	if fi.Mode()&0o100 != 0 {
		mode = 0o700
	}
	return data, mode, nil
}

func writePrivate(p string, data []byte, mode os.FileMode) error {
	if err := os.Mkdir(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	// Closed before the run: executing a file open for writing fails
	// (ETXTBSY).
	return f.Close()
}

// shellQuote quotes s as one word for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// systemDirs hold interpreters and tools, not hook scripts: a system
// update must not refuse every hook.
var systemDirs = []string{"/bin/", "/sbin/", "/usr/", "/lib/", "/lib64/", "/etc/", "/nix/", "/System/", "/proc/", "/dev/"}

// PinScripts returns the pins of the files command names: every word of the
// command that, once $VAR, ${VAR} and a leading ~ are expanded from env
// (and HOME), names an existing regular file outside the system
// directories, relative words being taken from dir.
func PinScripts(command, dir string, env []string) []ScriptPin {
	return pinScripts(command, dir, func(k string) string { return envValue(env, k) })
}

// envValue is env's last value of k, HOME falling back to the process's:
// a scan of the few entries a hook gets rather than a map of them, as
// this runs for every hook command of every load.
func envValue(env []string, k string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := cutVar(env[i], k); ok {
			return v
		}
	}
	if k == "HOME" {
		return os.Getenv("HOME")
	}
	return ""
}

// cutVar is the value of kv ("K=v") when its variable is k.
func cutVar(kv, k string) (string, bool) {
	if v, ok := strings.CutPrefix(kv, k); ok && strings.HasPrefix(v, "=") {
		return v[1:], true
	}
	return "", false
}

// pinScripts is PinScripts with the variables given by lookup.
func pinScripts(command, dir string, lookup func(string) string) []ScriptPin {
	var out []ScriptPin
	for _, t := range wordTokens(command) {
		w := os.Expand(t.s, lookup)
		if strings.HasPrefix(w, "~/") {
			w = lookup("HOME") + w[1:]
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
		if i := slices.IndexFunc(out, func(pin ScriptPin) bool { return pin.Path == p }); i >= 0 {
			out[i].Spans = append(out[i].Spans, [2]int{t.start, t.end})
			continue
		}
		if isSystem(p) {
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
		out = append(out, ScriptPin{Path: p, Digest: d, Spans: [][2]int{{t.start, t.end}}})
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

// token is a word of a shell command, or an operator, and its byte range
// [start, end) in the command as written (quotes included).
type token struct {
	s          string
	op         bool
	start, end int
}

// tokenize splits a shell command roughly: quotes group, a backslash
// escapes the next character (outside single quotes), operators (; | & ( )
// < > backquotes and newlines) separate and are kept. It is enough to find
// the scripts a command runs; it never runs anything.
func tokenize(cmd string) []token {
	var out []token
	var b strings.Builder
	var quote rune
	inWord := false
	start, end := 0, 0
	flush := func() {
		if inWord {
			out = append(out, token{s: b.String(), start: start, end: end})
			b.Reset()
			inWord = false
		}
	}
	begin := func(i int) {
		if !inWord {
			start, inWord = i, true
		}
	}
	for i := 0; i < len(cmd); {
		r, size := utf8.DecodeRuneInString(cmd[i:])
		next := i + size
		switch {
		case quote == '\'':
			if r == quote {
				quote = 0
			} else {
				b.WriteRune(r)
			}
			end = next
		case r == '\\' && next < len(cmd) && (quote == 0 || strings.ContainsRune("$`\"\\\n", rune(cmd[next]))):
			begin(i)
			r2, size2 := utf8.DecodeRuneInString(cmd[next:])
			if r2 != '\n' { // a backslash-newline is a line continuation
				b.WriteRune(r2)
			}
			next += size2
			end = next
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				b.WriteRune(r)
			}
			end = next
		case r == '"' || r == '\'':
			begin(i)
			quote = r
			end = next
		case r == ' ' || r == '\t':
			flush()
		case strings.ContainsRune("\n;|&()<>`", r):
			flush()
			out = append(out, token{s: string(r), op: true, start: i, end: next})
		default:
			begin(i)
			b.WriteRune(r)
			end = next
		}
		i = next
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
	ts := wordTokens(cmd)
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.s
	}
	return out
}

// wordTokens is words with each word's range in cmd.
func wordTokens(cmd string) []token {
	var out []token
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
			out = append(out, t)
			atCommand = false
			afterInterp = interpreters[filepath.Base(t.s)] || t.s == "exec" || t.s == "env" || t.s == "command"
			if afterInterp && (t.s == "exec" || t.s == "env" || t.s == "command") {
				atCommand, afterInterp = true, false
			}
		case afterInterp:
			if strings.HasPrefix(t.s, "-") {
				continue
			}
			out = append(out, t)
			afterInterp = false
		}
	}
	return out
}

func digestBytes(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
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
