package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/wharfhq/wharf/internal/cli/shell"
)

// streams is where a verb prints: its results on Out (JSON under --json),
// warnings and errors on Err.
type streams struct {
	Out  io.Writer
	Err  io.Writer
	JSON bool
}

// io is the command's output streams.
func (a *app) io() streams { return streams{Out: a.stdout, Err: a.stderr, JSON: a.cfg.JSON} }

// printJSON writes v to stdout as indented JSON.
func (s streams) printJSON(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := s.Out.Write(buf.Bytes())
	return err
}

// printf writes human output to stdout.
func (s streams) printf(format string, args ...any) {
	fmt.Fprintf(s.Out, format, args...)
}

// warnf prints a warning to stderr (also under --json: stdout stays JSON).
func (s streams) warnf(format string, args ...any) {
	fmt.Fprintf(s.Err, "wharf: warning: %s\n", plainMessage(fmt.Sprintf(format, args...)))
}

// printJSON writes v to stdout as indented JSON.
func (a *app) printJSON(v any) error { return a.io().printJSON(v) }

// printf writes human output to stdout.
func (a *app) printf(format string, args ...any) { a.io().printf(format, args...) }

// printError writes err to stderr: "wharf: <message>" and "Try: <hint>", or
// the JSON object under --json.
func (a *app) printError(err error) { shell.PrintError(a.stderr, "wharf", a.cfg.JSON, err) }
